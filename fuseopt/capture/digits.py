"""Digits of index values (`(a // d) % m`, Inductor's FloorDiv, ModularIndexing and Mod) folded
and merged exactly, on sympy expressions, before `fuseopt.capture.index` prints them: a digit of a
digit is one digit (`a % 32 % 8` is `a % 8`, `(a % 8) // 8` is 0), and the digits of one value in a
sum are put back together (`8 * (a // 8) + a % 8` is `a`). Inductor's index of a view of a view
leaves such sums; each digit costs a division, and their text can pass the format's limits.
Every rule holds for all integers under floor division with positive divisors and moduli.
"""

from __future__ import annotations

import math
from typing import Any

import sympy

# A digit of `a`: (a // d) % m, m None for no modulus; d and m positive.
_Digit = tuple[Any, int, int | None]


def _parse(e: Any) -> _Digit | None:
    """`e` as a digit, if it is one: FloorDiv, ModularIndexing or Mod by positive literals."""
    name, args = type(e).__name__, e.args
    if name in ("FloorDiv", "CleanDiv") and args[1].is_Integer and int(args[1]) > 0:
        return args[0], int(args[1]), None
    if name == "ModularIndexing" and all(x.is_Integer and int(x) > 0 for x in args[1:]):
        return args[0], int(args[1]), int(args[2])
    if name in ("Mod", "PythonMod") and args[1].is_Integer and int(args[1]) > 0:
        return args[0], 1, int(args[1])
    return None


def _flatten(digit: _Digit) -> _Digit | None:
    """A digit of a digit as one digit of the innermost value, where that is exact; None where the
    digit is 0 (`(a % 8) // 8`). `(b // d0) % m0` taken `// d` (d dividing m0) is
    `(b // (d0*d)) % (m0/d)`, and a further `% m` keeps the smaller modulus where one divides
    the other (`b % 32 % 8` is `b % 8`)."""
    a, d, m = digit
    inner = _parse(a)
    if inner is None:
        return digit
    flat = _flatten(inner)
    if flat is None:
        return None
    b, d0, m0 = flat
    if m0 is None:
        return b, d0 * d, m
    if d >= m0:
        return None  # (b // d0) % m0 lies in [0, m0)
    if m0 % d:
        return digit
    p = m0 // d
    if m is None or m % p == 0:
        return b, d0 * d, p
    if p % m == 0:
        return b, d0 * d, m
    return digit


def _build(digit: _Digit | None) -> Any:
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    if digit is None:
        return sympy.Integer(0)
    a, d, m = digit
    if m is None:
        return a if d == 1 else FloorDiv(a, d)
    return ModularIndexing(a, d, m)


def simplified_digit(e: Any) -> Any:
    """`e` with a digit of a digit folded (`_flatten`); `e` itself where nothing folds."""
    digit = _parse(e)
    if digit is None:
        return e
    flat = _flatten(digit)
    return e if flat == digit else _build(flat)


def _content(a: Any) -> int:
    """The gcd of the integer coefficients of `a` (its constant included); 1 for any other."""
    coeffs = list(sympy.expand(a).as_coefficients_dict().values())
    if not all(c.is_Integer for c in coeffs):
        return 1
    g = 0
    for c in coeffs:
        g = math.gcd(g, int(c))
    return g or 1


def _canonical(k: int, digit: _Digit) -> tuple[int, _Digit]:
    """`k * digit` with a factor common to the base and the divisor cancelled, `(g*a) // (g*d)` is
    `a // d` (sympy writes `(3*x0 + 3*x1) // 30` as `(x0 + x1) // 10`), and with no divisor one
    common to the base and the modulus taken out, `(g*a) % (g*m)` is `g * (a % m)`."""
    a, d, m = digit
    g = math.gcd(_content(a), d)
    if g > 1:
        a, d = sympy.expand(a / g), d // g
    if d == 1 and m is not None:
        g = math.gcd(_content(a), m)
        if g > 1:
            a, m, k = sympy.expand(a / g), m // g, k * g
    return k, (a, d, m)


def _constant(digit: _Digit) -> int | None:
    """The digit's value where it is the same at every point: a modulus `m` whose every variable
    coefficient of the base is a multiple of `d*m` (`(3*x + 2) % 3` is 2); else None."""
    a, d, m = digit
    if m is None:
        return None
    coeffs = sympy.expand(a).as_coefficients_dict()
    const = coeffs.pop(sympy.Integer(1), sympy.Integer(0))
    if not all(c.is_Integer and int(c) % (d * m) == 0 for c in coeffs.values()) or not const.is_Integer:
        return None
    return (int(const) // d) % m


def _same_digit(a1: Any, a2: Any, unit: int) -> bool:
    """Whether a digit below `unit` is the same of `a1` as of `a2`: they differ by a multiple of
    `unit` at every point, every coefficient of the difference a multiple of it (sympy drops such
    terms: `(2*x0 + 3*x1 + 2) % 2` is `(3*x1) % 2`)."""
    if a1 == a2:
        return True
    diff = sympy.expand(a1 - a2)
    return all(c.is_Integer and int(c) % unit == 0 for c in diff.as_coefficients_dict().values())


def _scales(a1: Any, a2: Any) -> tuple[int, int]:
    """Integers (s1, s2) with s1*a1 and s2*a2 alike in the first variable's coefficient they share (sympy
    cancels a common factor of a floor division's base and divisor, `(3*x) // 6` is `x // 2`); a
    digit keeps its value with its base and divisor both scaled."""
    e1, e2 = sympy.expand(a1), sympy.expand(a2)
    for sym in sorted(a1.free_symbols & a2.free_symbols, key=str):
        c1, c2 = e1.coeff(sym), e2.coeff(sym)
        if not (c1.is_Integer and c2.is_Integer and int(c1) and int(c2)):
            continue
        r = sympy.Rational(int(c2), int(c1))
        if r > 0 and r.q == 1:
            return int(r), 1
        if r > 0 and r.p == 1:
            return 1, int(r.q)
        break
    return 1, 1


def _merged(t1: tuple[int, _Digit], t2: tuple[int, _Digit]) -> tuple[int, _Digit] | None:
    """`t1 + t2` as one term where `t1` is the digit just above `t2` of the same value."""
    (k1, (a1, d1, m1)), (k2, (a2, d2, m2)) = t1, t2
    if m2 is None:
        return None
    s1, s2 = (1, 1) if a1 == a2 else _scales(a1, a2)
    a1, d1, a2, d2 = sympy.expand(s1 * a1), s1 * d1, sympy.expand(s2 * a2), s2 * d2
    if d1 != d2 * m2 or k1 != k2 * m2 or not _same_digit(a1, a2, d2 * m2):
        return None
    return k2, (a1, d2, None if m1 is None else m2 * m1)


def merge_radix(e: Any) -> Any:
    """A sum with the digits of one value put back together: `c*m * ((a // (d*m)) % n) +
    c * ((a // d) % m)` is `c * ((a // d) % (m*n))`, and `(a // 1)` with no modulus is `a`
    (`8*(a // 8) + a % 8` is `a`), until no pair merges; digits of digits folded first and digits
    that are 0 dropped (`_flatten`). Exact for integers under floor division, whatever their sign.
    Inductor's index of a view of a view leaves such sums: their digits cost a division each and
    their text can pass the format's limits."""
    digits: list[tuple[int, _Digit]] = []
    others: list[Any] = []
    changes = 0
    for t in sympy.Add.make_args(e):
        k, rest = t.as_coeff_Mul()
        digit = _parse(rest) if k.is_Integer else None
        if digit is None:
            others.append(t)
            continue
        flat = _flatten(digit)
        value = 0 if flat is None else _constant(flat)
        if value is not None:  # a digit that is the same at every point
            others.append(int(k) * value)
            changes += 1
            continue
        assert flat is not None
        term = _canonical(int(k), flat)
        changes += term != (int(k), digit)
        digits.append(term)
    changed = True
    while changed:
        changed = False
        for i, j in ((i, j) for i in range(len(digits)) for j in range(len(digits)) if i != j):
            merged = _merged(digits[i], digits[j])
            if merged is not None:
                digits = [x for n, x in enumerate(digits) if n not in (i, j)] + [merged]
                changed, changes = True, changes + 1
                break
    if not changes:
        return e
    return sympy.Add(*others, *(k * _build(digit) for k, digit in digits))
