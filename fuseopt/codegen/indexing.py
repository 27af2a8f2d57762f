"""How a node's loop variables map onto a kernel's flat axes, and when two indices name one element.

A kernel iterates flat axes (x; y and x for 2D tiles; x and r0_ for reductions). Each node's loops
cover a run of those axes row-major, so every loop variable is a *digit* of an axis index:
`(base // div) % mod`. Two index expressions of different nodes address the same element at the
same point when their linear forms over digits agree after adjacent digits are merged
(`c*(b % m) + c*m*(b // m)` is `c*b`), which is how fused reads are matched to fused writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fuseopt.analysis.shapes import split_loops  # noqa: F401  (re-exported: the planner's rule)
from fuseopt.codegen.common import prod
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.expr import Binary, Const, Expr, Var, substitute_vars, transform


@dataclass(frozen=True)
class Digit:
    """`(base // div) % mod` (mod None: no modulo) over an axis index named `base`."""

    base: str
    div: int
    mod: int | None

    def rhs(self) -> str:
        e = self.base if self.div == 1 else f"{self.base} // {self.div}"
        if self.mod is None:
            return e
        return f"{e} % {self.mod}" if self.div == 1 else f"({e}) % {self.mod}"


def decompose(sizes: Sequence[int], base: str, extent: int) -> list[Digit | None]:
    """Row-major digits of loops with `sizes` over an axis of `extent` points (None: size-1 loop).

    The loops must cover exactly `extent` points; the outermost non-trivial digit needs no
    modulo (the axis never exceeds the box, masked lanes aside).
    """
    assert prod(sizes) == extent, (sizes, extent)
    out: list[Digit | None] = []
    inner = 1
    for s in reversed(sizes):
        if s == 1:
            out.append(None)
            continue
        mod = None if inner * s >= extent else s
        out.append(Digit(base, inner, mod))
        inner *= s
    return list(reversed(out))


def digit_of(e: Expr, digits: Mapping[str, Digit | None]) -> Digit | None:
    """`e` (a loop variable, or `//` and `%` by constants of one) as a digit of an axis index."""
    if isinstance(e, Var):
        return digits.get(e.name)
    if isinstance(e, Binary) and e.op in ("floordiv", "mod") and isinstance(e.b, Const):
        c = e.b.value
        d = digit_of(e.a, digits)
        if d is None or not isinstance(c, int) or isinstance(c, bool) or c <= 0:
            return None
        if e.op == "floordiv":
            if d.mod is None:
                return Digit(d.base, d.div * c, None)
            return Digit(d.base, d.div * c, d.mod // c) if d.mod % c == 0 else None
        if d.mod is None or d.mod % c == 0:
            return Digit(d.base, d.div, c)
    return None


def _digit_name(d: Digit) -> str:
    # Not an identifier on purpose: it can never collide with a loop variable.
    return f"<{d.base}//{d.div}%{d.mod}>"


@dataclass(frozen=True)
class Flat:
    """A flat index over two axes: `outer * inner_extent + inner` (a segment with no loop split)."""

    outer: str
    inner: str
    inner_extent: int


def over_digits(index: Expr, digits: Mapping[str, Digit | None]) -> Expr:
    """`index` with each loop variable replaced by its digit of the kernel's axes (a variable of
    its own name, `<base//div%mod>`), one of no digit by 0: two nodes' indices over loop
    variables of their own are equal where they reach the same element at every point."""
    mapping: dict[str, Expr] = {v: Const(0) if d is None else Var(_digit_name(d)) for v, d in digits.items()}
    return substitute_vars(index, mapping)


def canonical_terms(
    index: Expr,
    digits: Mapping[str, Digit | None],
    extents: Mapping[str, int],
    flats: Mapping[str, Flat] | None = None,
) -> tuple[dict[Digit, int], dict[str, int], int]:
    """`index` as (coefficient per merged digit, coefficient per opaque atom, constant): a normal
    form with each loop variable replaced by its digit, equal for two indices that mean the same
    element at every point of the kernel. `//` and `%` of a digit by a constant are digits too;
    digits of a flattened base are rewritten onto its two axes where they fall on one side of the
    split (or are the whole flat index). Non-affine parts are kept as opaque atoms."""
    names = {_digit_name(d): d for d in digits.values() if d is not None}
    f = linear_form(over_digits(index, digits))
    digit_terms: dict[Digit, int] = {}
    other: dict[str, int] = {}
    for atom, k in f.coeffs:
        d = digit_of(atom, names)
        if d is None:
            key = repr(_strip(atom))
            other[key] = other.get(key, 0) + k
            continue
        digit_terms[d] = digit_terms.get(d, 0) + k
    # Merged on their own base first (`8*(f // 8) + f % 8` is f), then split onto the axes of a
    # flattened base (f is `4*y + x`), then merged again.
    terms: dict[Digit, int] = {}
    for d, k in merge_digits(digit_terms, extents).items():
        for dd, kk in unflatten(d, flats or {}):
            terms[dd] = terms.get(dd, 0) + k * kk
    merged = {d: k for d, k in merge_digits(terms, extents).items() if k != 0}
    return merged, {a: k for a, k in other.items() if k != 0}, f.const


def unflatten(d: Digit, flats: Mapping[str, Flat]) -> list[tuple[Digit, int]]:
    flat = flats.get(d.base)
    if flat is None:
        return [(d, 1)]
    r = flat.inner_extent
    if d.div == 1 and d.mod is None:
        return [(Digit(flat.outer, 1, None), r), (Digit(flat.inner, 1, None), 1)]
    if d.div % r == 0:
        return [(Digit(flat.outer, d.div // r, d.mod), 1)]
    if d.mod is not None and r % (d.div * d.mod) == 0:
        return [(Digit(flat.inner, d.div, d.mod), 1)]
    return [(d, 1)]


def _strip(e: Expr) -> Expr:
    return transform(e, lambda n: replace(n, dtype=None) if n.dtype is not None else None)


def merge_digits(terms: dict[Digit, int], extents: Mapping[str, int]) -> dict[Digit, int]:
    """Merge `c*(b//p % m) + c*m*(b//(p*m) % n)` into `c*(b//p % (m*n))` until nothing changes."""
    out = {normal_digit(d, extents): k for d, k in terms.items() if k != 0}
    changed = True
    while changed:
        changed = False
        for d1, k1 in sorted(out.items(), key=lambda t: (t[0].base, t[0].div)):
            if d1.mod is None:
                continue
            for d2, k2 in out.items():
                if d2 != d1 and d2.base == d1.base and d2.div == d1.div * d1.mod and k2 == k1 * d1.mod:
                    new = normal_digit(
                        Digit(d1.base, d1.div, None if d2.mod is None else d1.mod * d2.mod), extents
                    )
                    del out[d1], out[d2]
                    out[new] = out.get(new, 0) + k1
                    changed = True
                    break
            if changed:
                break
    return out


def merged_terms(
    coeffs: Sequence[tuple[Expr, int]], digits: Mapping[str, Digit | None], extents: Mapping[str, int]
) -> list[tuple[Expr | Digit, int]]:
    """An index's linear terms with adjacent digits of one axis summed into one digit
    (`1000 * (x // 1000) + x % 1000` is `x`): fewer integer operations, and an address the
    compiler sees to be contiguous, so that it vectorises the access. Unchanged (the same list)
    where no two digits merge; else the merged digits take the place of the first of them."""
    found: dict[int, Digit] = {}
    for i, (atom, _) in enumerate(coeffs):
        d = digit_of(atom, digits)
        if d is not None:
            found[i] = normal_digit(d, extents)
    terms: dict[Digit, int] = {}
    for i, d in found.items():
        terms[d] = terms.get(d, 0) + coeffs[i][1]
    merged = merge_digits(terms, extents)
    if len(found) < 2 or len(merged) == len(terms):
        return list(coeffs)
    first = min(found)
    out: list[tuple[Expr | Digit, int]] = []
    for i, (atom, k) in enumerate(coeffs):
        if i == first:
            out.extend((d, merged[d]) for d in sorted(merged, key=lambda d: -d.div))
        elif i not in found:
            out.append((atom, k))
    return out


def normal_digit(d: Digit, extents: Mapping[str, int]) -> Digit:
    ext = extents.get(d.base)
    if d.mod is not None and ext is not None and d.div * d.mod >= ext:
        return Digit(d.base, d.div, None)
    return d


def axis_digit(
    atom: Expr, digits: Mapping[str, Digit | None], flats: Mapping[str, Flat], extents: Mapping[str, int]
) -> Digit | None:
    """`v // c` or `v % c` of a loop variable as a digit of one tile axis: a digit of a flat
    index that falls on one side of the (y, x) split is a digit of that axis alone
    (`(y * 192 + x) // 6720` is `y // 35`); None where it is not."""
    d = digit_of(atom, digits)
    if d is None:
        return None
    parts = unflatten(d, flats)
    if len(parts) != 1 or parts[0][1] != 1:
        return None
    d = normal_digit(parts[0][0], extents)
    return None if d.base.startswith("flat_") else d
