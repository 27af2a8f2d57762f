"""Index expressions in one normal form: integer sums of mixed-radix digits of flat positions.

Every loop variable is a *digit* `B // div % mod` of a non-negative flat position B over a box of
`extent` points (row-major: `mod` is the variable's size, `div` the product of the sizes inside
it; mod None: no modulo). `index_form` rewrites an index over such variables as a constant plus a
sum of digits with integer coefficients, and what is no digit (a product of variables, min/max
that the ranges do not decide, an indirect load) as opaque atoms, each known by a canonical text
over digits. Every rule is an identity for B in [0, extent):

    c*(B//a % m) + c*m*(B//(a*m) % n) == c*(B//a % (m*n))        (the mixed-radix identity)
    (B//a % m) // d == B//(a*d) % (m/d) where d | m, 0 where m <= d;  (B//a) // d == B//(a*d)
    (B//a % m) % d == B//a % d where d | m, itself where m <= d;      (B//a) % d == B//a % d
    B//a % m == B//a where a*m >= extent;  B//a == 0 where a >= extent;  X % 1 == 0;  X // 1 == X
    (d*A + R) // d == A + R // d;  (d*A + R) % d == R % d;  R // d == 0, R % d == R for 0 <= R < d
    (k*D) // c == (D // (c/g)) and (k*D) % c == g * (D % (c/g)) for g = gcd(k, c) == k

The digits of one base are refined into the finest digits between their boundaries when those
boundaries form a divisibility chain (then the normal form is unique: two such indices are the
same function of B exactly when their forms are equal) and merged back into maximal runs;
otherwise they are merged pair by pair, which is still sound: equal forms always mean equal
functions. Nothing here depends on the order of terms in the input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from fuseopt.ir.expr import Binary, Const, Expr, IndexValue, Load, Unary, Var, substitute_vars, to_text, walk

Interval = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Digit:
    """`base // div % mod` (mod None: no modulo) of a flat position named `base`."""

    base: str
    div: int
    mod: int | None

    @property
    def top(self) -> int | None:
        """The boundary above the digit (None: the top of its base)."""
        return None if self.mod is None else self.div * self.mod

    def text(self) -> str:
        e = self.base if self.div == 1 else f"{self.base} // {self.div}"
        return e if self.mod is None else f"{e} % {self.mod}"

    def key(self) -> tuple[str, int, int]:
        return (self.base, self.div, 0 if self.mod is None else self.mod)


@dataclass(frozen=True, slots=True)
class IndexForm:
    """The normal form: constant + sum(k * digit) + sum(k * opaque atom)."""

    digits: tuple[tuple[Digit, int], ...]  # sorted by (base, div), coefficients non-zero
    atoms: tuple[tuple[str, int], ...]  # canonical texts, sorted, coefficients non-zero
    const: int
    indirect: bool = False  # an atom reads a buffer (the index is data)
    atom_bases: frozenset[str] = field(default=frozenset(), compare=False)  # bases inside atoms

    def bases(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d.base for d, _ in self.digits))

    def text(self) -> str:
        """Readable, outermost digit first: `16*(p // 4 % 33) + p % 4 + 3`."""
        parts = [(k, d.text()) for d, k in sorted(self.digits, key=lambda t: (t[0].base, -t[0].div))]
        parts.extend((k, a) for a, k in self.atoms)
        out = ""
        for k, t in parts:
            body = t if abs(k) == 1 else f"{abs(k)}*{_wrap(t)}"
            if not out:
                out = body if k > 0 else f"-{_wrap(body)}"
            else:
                out += f" {'+' if k > 0 else '-'} {body}"
        if self.const or not out:
            c = self.const
            out = str(c) if not out else f"{out} {'-' if c < 0 else '+'} {abs(c)}"
        return out


def _wrap(t: str) -> str:
    return t if " " not in t else f"({t})"


def index_form(index: Expr, digits: Mapping[str, Digit | None], extents: Mapping[str, int]) -> IndexForm:
    """`index` in normal form, each loop variable replaced by its digit (None: a size-1 loop, 0).

    `extents` bounds each base (B in [0, extent)); a variable without a digit stays an atom."""
    n = _Normalizer(digits, extents)
    return n.canon(n.sum(index)).form()


# -- the working sum ------------------------------------------------------------------------------
@dataclass
class _Sum:
    terms: dict[Digit, int] = field(default_factory=dict)
    atoms: dict[str, int] = field(default_factory=dict)
    const: int = 0
    ranges: dict[str, Interval | None] = field(default_factory=dict)  # of each atom
    indirect: bool = False
    bases: set[str] = field(default_factory=set)  # the bases the atoms use
    # atoms that are `X // c` or `X % c` of a sum X that is no digit: (op, X, c), for nesting
    defs: dict[str, tuple[str, _Sum, int]] = field(default_factory=dict)

    def add(self, other: _Sum, k: int = 1) -> None:
        for d, c in other.terms.items():
            self.terms[d] = self.terms.get(d, 0) + k * c
        for a, c in other.atoms.items():
            self.atoms[a] = self.atoms.get(a, 0) + k * c
            self.ranges.setdefault(a, other.ranges.get(a))
        self.const += k * other.const
        self.indirect = self.indirect or other.indirect
        self.bases |= other.bases
        self.defs.update(other.defs)

    def scaled(self, k: int) -> _Sum:
        out = _Sum()
        out.add(self, k)
        return out

    def is_const(self) -> bool:
        return not any(self.terms.values()) and not any(self.atoms.values())

    def form(self) -> IndexForm:
        digits = tuple(sorted(((d, k) for d, k in self.terms.items() if k), key=lambda t: t[0].key()))
        atoms = tuple(sorted((a, k) for a, k in self.atoms.items() if k))
        return IndexForm(digits, atoms, self.const, self.indirect, frozenset(self.bases))

    def uses(self) -> set[str]:
        return {d.base for d, k in self.terms.items() if k} | self.bases


def _atom(text: str, r: Interval | None, *parts: _Sum, indirect: bool = False) -> _Sum:
    """An opaque atom made of `parts` (it reads data if any part does)."""
    out = _Sum(atoms={text: 1}, ranges={text: r}, indirect=indirect or any(p.indirect for p in parts))
    for p in parts:
        out.bases |= p.uses()
    return out


def _divided(op: str, x: _Sum, c: int, r: Interval | None) -> _Sum:
    """The atom `x // c` or `x % c` (x no digit), remembered for nested // and %."""
    text = f"({x.form().text()}) {'//' if op == 'floordiv' else '%'} {c}"
    out = _atom(text, r, x)
    out.defs[text] = (op, x, c)
    return out


def _digit_sum(d: Digit | None) -> _Sum:
    return _Sum() if d is None else _Sum(terms={d: 1})


class _Normalizer:
    def __init__(self, digits: Mapping[str, Digit | None], extents: Mapping[str, int]):
        self.digits = digits
        self.extents = extents

    # -- digits -------------------------------------------------------------------------------------
    def norm(self, d: Digit) -> Digit | None:
        """The digit with the identities of its range applied (None: 0 everywhere)."""
        if d.mod == 1:
            return None
        ext = self.extents.get(d.base)
        if ext is not None:
            if d.div >= ext:
                return None
            if d.mod is not None and d.div * d.mod >= ext:
                return Digit(d.base, d.div, None)
        return d

    def digit_range(self, d: Digit) -> int | None:
        """How many values the digit takes (None: unbounded)."""
        ext = self.extents.get(d.base)
        top = None if ext is None else -(-ext // d.div)
        if d.mod is None:
            return top
        return d.mod if top is None else min(d.mod, top)

    def interval(self, s: _Sum) -> Interval | None:
        lo = hi = s.const
        for d, k in s.terms.items():
            n = self.digit_range(d)
            if n is None:
                return None
            lo, hi = lo + min(0, k * (n - 1)), hi + max(0, k * (n - 1))
        for a, k in s.atoms.items():
            r = s.ranges.get(a)
            if r is None:
                return None
            lo, hi = lo + min(k * r[0], k * r[1]), hi + max(k * r[0], k * r[1])
        return lo, hi

    # -- the tree -------------------------------------------------------------------------------------
    def sum(self, e: Expr) -> _Sum:
        if isinstance(e, Const):
            v = e.value
            if isinstance(v, int):
                return _Sum(const=int(v))
            return _atom(repr(v), None)
        if isinstance(e, Var):
            if e.name in self.digits:
                d = self.digits[e.name]
                return _digit_sum(None if d is None else self.norm(d))
            return _atom(e.name, None)
        if isinstance(e, IndexValue):
            return self.sum(e.index)
        if isinstance(e, Unary) and e.op == "neg":
            return self.sum(e.x).scaled(-1)
        if isinstance(e, Load):
            index = self.sum(e.index)  # once: each nesting level would double the work
            inner = self.canon(index).form()
            return _atom(f"{e.buffer}[{inner.text()}]", None, index, indirect=True)
        if isinstance(e, Binary):
            if e.op in ("add", "sub"):
                out = self.sum(e.a)
                out.add(self.sum(e.b), 1 if e.op == "add" else -1)
                return out
            a, b = self.canon(self.sum(e.a)), self.canon(self.sum(e.b))
            if e.op == "mul":
                if b.is_const():
                    return a.scaled(b.const)
                if a.is_const():
                    return b.scaled(a.const)
                return self.opaque("*", a, b, commutes=True)
            if e.op in ("floordiv", "mod") and b.is_const() and b.const > 0:
                return self.floordiv(a, b.const) if e.op == "floordiv" else self.modulo(a, b.const)
            if e.op in ("minimum", "maximum"):
                return self.extremum(e.op, a, b)
            return self.opaque(e.op, a, b, commutes=False)
        return self.generic(e)

    def opaque(self, op: str, a: _Sum, b: _Sum, *, commutes: bool) -> _Sum:
        ta, tb = a.form().text(), b.form().text()
        if commutes and tb < ta:
            ta, tb = tb, ta
        r: Interval | None = None
        ra, rb = self.interval(a), self.interval(b)
        if op == "*" and ra is not None and rb is not None:
            ps = [x * y for x in ra for y in rb]
            r = (min(ps), max(ps))
        return _atom(f"{op}({ta}, {tb})", r, a, b)

    def extremum(self, op: str, a: _Sum, b: _Sum) -> _Sum:
        ra, rb = self.interval(a), self.interval(b)
        if a.form() == b.form():
            return a
        if ra is not None and rb is not None:
            if ra[1] <= rb[0]:
                return a if op == "minimum" else b
            if rb[1] <= ra[0]:
                return b if op == "minimum" else a
        ta, tb = sorted((a.form().text(), b.form().text()))
        r = None
        if ra is not None and rb is not None:
            f = min if op == "minimum" else max
            r = (f(ra[0], rb[0]), f(ra[1], rb[1]))
        return _atom(f"{op}({ta}, {tb})", r, a, b)

    def generic(self, e: Expr) -> _Sum:
        """Anything else in an index (a cast, a where): opaque, named with digits for variables."""
        names: dict[str, Expr] = {}
        for v, d in self.digits.items():
            nd = None if d is None else self.norm(d)
            names[v] = Const(0) if nd is None else Var(f"<{nd.text()}>")
        text = to_text(substitute_vars(e, names))
        parts = [self.sum(v) for v in walk(e) if isinstance(v, Var)]
        return _atom(f"expr({text})", None, *parts, indirect=any(isinstance(n, Load) for n in walk(e)))

    # -- floor division and modulo -----------------------------------------------------------------
    def nested(self, s: _Sum) -> tuple[str, _Sum, int] | None:
        """s as exactly one `X // m` or `X % m` atom: (op, X, m)."""
        atoms = [(a, k) for a, k in s.atoms.items() if k]
        if s.const or any(s.terms.values()) or len(atoms) != 1 or atoms[0][1] != 1:
            return None
        return s.defs.get(atoms[0][0])

    def floordiv(self, s: _Sum, c: int) -> _Sum:
        if c == 1:
            return s
        inner = self.nested(s)
        if inner is not None:  # (X // m) // c == X // (m*c);  (X % (c*k)) // c == X // c % k
            op, x, m = inner
            if op == "floordiv":
                return self.floordiv(x, m * c)
            if m % c == 0:
                return self.modulo(self.floordiv(x, c), m // c)
        quot, rest = self.split(s, c)
        quot.const = s.const // c
        r = self.interval(rest)
        if r is not None and r[0] >= 0 and r[1] < c:
            return quot
        one = self.single(rest)
        if one is not None:
            d, k = one
            g = math.gcd(k, c)
            if g == k:  # (k*D) // c == D // (c/k)
                quot.add(self.digit_div(d, c // k))
                return quot
        quot.add(_divided("floordiv", rest, c, None if r is None else (r[0] // c, r[1] // c)))
        return quot

    def modulo(self, s: _Sum, c: int) -> _Sum:
        if c == 1:
            return _Sum()
        inner = self.nested(s)
        if inner is not None and inner[0] == "mod" and inner[2] % c == 0:  # (X % (c*k)) % c == X % c
            return self.modulo(inner[1], c)
        _, rest = self.split(s, c)
        r = self.interval(rest)
        if r is not None and r[0] >= 0 and r[1] < c:
            return rest
        one = self.single(rest)
        if one is not None:
            d, k = one
            g = math.gcd(k, c)
            if g == k:  # (k*D) % c == k * (D % (c/k))
                return self.digit_mod(d, c // k).scaled(k)
        return _divided("mod", rest, c, (0, c - 1))

    def split(self, s: _Sum, c: int) -> tuple[_Sum, _Sum]:
        """(terms whose coefficients c divides, divided by c; the rest, with const % c)."""
        quot, rest = _Sum(), _Sum(const=s.const % c, indirect=s.indirect)
        for d, k in s.terms.items():
            if k % c == 0:
                quot.terms[d] = k // c
            elif k:
                rest.terms[d] = k
        for a, k in s.atoms.items():
            target = quot if k % c == 0 else rest
            if k:
                target.atoms[a] = k // c if k % c == 0 else k
                target.ranges[a] = s.ranges.get(a)
        quot.indirect = s.indirect
        quot.bases, rest.bases = set(s.bases), set(s.bases)
        quot.defs, rest.defs = dict(s.defs), dict(s.defs)
        return quot, rest

    def single(self, s: _Sum) -> tuple[Digit, int] | None:
        """The sum as k * digit with k > 0 (nothing else), if it is one."""
        terms = [(d, k) for d, k in s.terms.items() if k]
        if s.const or any(s.atoms.values()) or len(terms) != 1 or terms[0][1] <= 0:
            return None
        return terms[0]

    def digit_div(self, d: Digit, m: int) -> _Sum:
        if d.mod is None:
            return _digit_sum(self.norm(Digit(d.base, d.div * m, None)))
        if d.mod % m == 0:
            return _digit_sum(self.norm(Digit(d.base, d.div * m, d.mod // m)))
        if d.mod <= m:
            return _Sum()
        return _divided("floordiv", _digit_sum(d), m, (0, (d.mod - 1) // m))

    def digit_mod(self, d: Digit, m: int) -> _Sum:
        if d.mod is None or d.mod % m == 0:
            return _digit_sum(self.norm(Digit(d.base, d.div, m)))
        if d.mod <= m:
            return _digit_sum(d)
        return _divided("mod", _digit_sum(d), m, (0, m - 1))

    # -- the canonical digits of each base ---------------------------------------------------------
    def canon(self, s: _Sum) -> _Sum:
        by_base: dict[str, dict[Digit, int]] = {}
        for d, k in s.terms.items():
            nd = self.norm(d)
            if nd is not None and k:
                per = by_base.setdefault(nd.base, {})
                per[nd] = per.get(nd, 0) + k
        out = _Sum(atoms={a: k for a, k in s.atoms.items() if k}, const=s.const, indirect=s.indirect)
        out.bases, out.defs = set(s.bases), dict(s.defs)
        out.ranges = {a: s.ranges.get(a) for a in out.atoms}
        for base in sorted(by_base):
            terms = {d: k for d, k in by_base[base].items() if k}
            merged = self.refined(base, terms)
            if merged is None:
                merged = self.pairwise(terms)
            for d, k in merged.items():
                if k:
                    out.terms[d] = out.terms.get(d, 0) + k
        return out

    def refined(self, base: str, terms: dict[Digit, int]) -> dict[Digit, int] | None:
        """Finest digits between the boundaries, merged into maximal runs (None: no chain)."""
        if not terms:
            return {}
        bounds = sorted({d.div for d in terms} | {t for d in terms if (t := d.top) is not None})
        if any(b % a for a, b in zip(bounds, bounds[1:], strict=False)):
            return None
        pos = {b: i for i, b in enumerate(bounds)}
        m = len(bounds) - 1  # fine digit i: B // bounds[i] % (bounds[i+1] / bounds[i]); m: B // bounds[m]
        coeff = [0] * (m + 1)
        for d, k in terms.items():
            hi = m + 1 if d.top is None else pos[d.top]
            for t in range(pos[d.div], hi):
                coeff[t] += k * (bounds[t] // d.div)
        out: dict[Digit, int] = {}
        t = 0
        while t <= m:
            start = t  # a maximal run of fine digits [start, t] whose coefficients chain
            while t < m and coeff[t + 1] == coeff[t] * (bounds[t + 1] // bounds[t]):
                t += 1
            if coeff[start]:  # (a run reaching F_m, the top, has no modulo)
                dig = Digit(base, bounds[start], None if t == m else bounds[t + 1] // bounds[start])
                nd = self.norm(dig)
                if nd is not None:
                    out[nd] = out.get(nd, 0) + coeff[start]
            t += 1
        return out

    def pairwise(self, terms: dict[Digit, int]) -> dict[Digit, int]:
        """Merge `k*(B//a % m) + k*m*(B//(a*m) % n)` pairs until none is left (boundaries that do
        not chain: still sound, not necessarily unique)."""
        out = dict(terms)
        changed = True
        while changed:
            changed = False
            for d1 in sorted(out, key=Digit.key):
                k1 = out[d1]
                if d1.mod is None or not k1:
                    continue
                for d2 in sorted(out, key=Digit.key):
                    if d2 != d1 and d2.div == d1.div * d1.mod and out[d2] == k1 * d1.mod:
                        new = Digit(d1.base, d1.div, None if d2.mod is None else d1.mod * d2.mod)
                        del out[d1], out[d2]
                        nd = self.norm(new)
                        if nd is not None:
                            out[nd] = out.get(nd, 0) + k1
                        changed = True
                        break
                if changed:
                    break
        return {d: k for d, k in out.items() if k}
