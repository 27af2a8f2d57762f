"""Static bounds of index expressions over a loop box: exact for affine, sound otherwise.

An index is read as a linear form over *atoms*: loop variables, and non-linear sub-expressions
(`a // c`, `a % c`, min, max, products of variables) each bounded by interval arithmetic. Loop
variables are independent over the box, so the range of an affine form is exact. A masked load is
checked under its condition: each conjunct `L cmp k` with linear L bounds L, and the load's index
is bounded by peeling multiples of those L off it (sound, as every piece is bounded); a load under
a condition that holds nowhere in the box never runs and is not checked. `max(a, -a)` is `|a|`,
from 0 where a's interval crosses 0 (a reflection pad's index). What cannot be bounded statically
(indirect indices, unpeelable masked loads) is left to the interpreter's run-time check. `//` and
`%` by a constant peel the multiples of the divisor off their numerator first (`(c*k*i + r) % c`
is `r % c`), so that big terms that cancel keep exact bounds.

`index_magnitude` bounds every intermediate value of an index as it is computed (by the
interpreter, or by generated code in its index dtype): what decides whether int32 arithmetic is
enough, and whether int64 arithmetic could overflow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from fuseopt.errors import Span
from fuseopt.ir.expr import (
    Binary,
    Cast,
    Const,
    Expr,
    IndexValue,
    Load,
    Masked,
    Reduce,
    Unary,
    Var,
    Where,
    to_text,
    transform,
)
from fuseopt.ir.graph import BufferInfo, ComputeNode

Interval = tuple[int, int]
Atom = Expr  # a Var or a non-linear sub-expression (spans take no part in equality)


@dataclass(frozen=True)
class Linear:
    coeffs: tuple[tuple[Atom, int], ...]
    const: int

    def as_dict(self) -> dict[Atom, int]:
        return dict(self.coeffs)


def _mk(d: Mapping[Atom, int], c: int) -> Linear:
    return Linear(tuple((a, k) for a, k in d.items() if k != 0), c)


def linear_form(e: Expr) -> Linear:
    """e as const + sum(coeff * atom); never fails (a non-linear e is one atom)."""
    d, c = _form(e)
    return Linear(tuple(d.items()), c)


def _form(e: Expr) -> tuple[dict[Atom, int], int]:
    """linear_form as a fresh (mutable) dict: building every level as a Linear was the hot spot of
    loading large graphs. Zero coefficients are dropped as each sum is formed, which fixes the order
    of the atoms (first appearance, left to right)."""
    if type(e) is Binary:
        op = e.op
        if op == "add" or op == "sub":
            da, ca = _form(e.a)
            db, cb = _form(e.b)
            sign = 1 if op == "add" else -1
            for a, k in db.items():
                v = da.get(a, 0) + sign * k
                if v:
                    da[a] = v
                else:
                    da.pop(a, None)
            return da, ca + sign * cb
        if op == "mul":
            da, ca = _form(e.a)
            db, cb = _form(e.b)
            if not da:
                return {a: ca * k for a, k in db.items() if ca * k}, ca * cb
            if not db:
                return {a: cb * k for a, k in da.items() if cb * k}, ca * cb
    elif type(e) is Var:
        return {_var_atom(e.name): 1}, 0
    elif type(e) is Const:
        if type(e.value) is int:
            return {}, e.value
    elif type(e) is Unary and e.op == "neg":
        dx, cx = _form(e.x)
        return {a: -k for a, k in dx.items()}, -cx
    return {_strip(e): 1}, 0


@lru_cache(maxsize=4096)
def _var_atom(name: str) -> Var:
    return Var(name)


def _strip(e: Expr) -> Expr:
    """Atoms are compared structurally; dtype annotations must not make equal atoms differ."""
    rebuild = _UNTYPED.get(type(e))
    if rebuild is None:  # pragma: no cover - every node class is in the table
        return transform(e, lambda n: replace(n, dtype=None) if n.dtype is not None else None)
    kids = e.children()
    new = tuple(_strip(k) for k in kids)
    if e.dtype is None and all(a is b for a, b in zip(new, kids, strict=True)):
        return e
    return rebuild(e, new)


# Per-class rebuild without dtype (dataclasses.replace is several times slower, and atoms are
# stripped on every bounds query).
_UNTYPED: dict[type, Callable[[Any, tuple[Expr, ...]], Expr]] = {
    Const: lambda e, k: Const(e.value, span=e.span),
    Var: lambda e, k: Var(e.name, span=e.span),
    Load: lambda e, k: Load(e.buffer, k[0], span=e.span),
    Masked: lambda e, k: Masked(k[0], k[1], k[2], span=e.span),
    IndexValue: lambda e, k: IndexValue(k[0], span=e.span),
    Unary: lambda e, k: Unary(e.op, k[0], span=e.span),
    Binary: lambda e, k: Binary(e.op, k[0], k[1], span=e.span),
    Where: lambda e, k: Where(k[0], k[1], k[2], span=e.span),
    Cast: lambda e, k: Cast(k[0], e.to, span=e.span),
    Reduce: lambda e, k: Reduce(e.op, k[0], span=e.span),
}


LoadBounds = Callable[[Load], Interval | None]


def interval(e: Expr, ranges: Mapping[str, int], loads: LoadBounds | None = None) -> Interval | None:
    """Sound [lo, hi] of an integer expression with each var v in [0, ranges[v]-1]; None if unknown.

    `loads`, when given, bounds the value of a load (indirect indexing: the dtype range of the
    buffer it reads, say); without it a load is unknown statically."""
    return _linear_interval(linear_form(e), ranges, loads=loads)


def _linear_interval(
    f: Linear,
    ranges: Mapping[str, int],
    refined: Mapping[Atom, Interval] | None = None,
    loads: LoadBounds | None = None,
) -> Interval | None:
    lo = hi = f.const
    for atom, k in f.coeffs:
        r = refined.get(atom) if refined else None
        if r is None:
            r = _atom_interval(atom, ranges, loads)
        if r is None:
            return None
        a, b = k * r[0], k * r[1]
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


def _divisor(e: Binary) -> int | None:
    """The divisor of `a // c` or `a % c` by a positive integer literal, else None."""
    if e.op in ("floordiv", "mod") and type(e.b) is Const and type(e.b.value) is int and e.b.value > 0:
        return e.b.value
    return None


def _peel(f: Linear, c: int, *, reduce: bool = False) -> tuple[Linear, Linear]:
    """f as c*q + r, exactly: q takes every term that is a multiple of c (with `reduce`, the
    multiple of c in every coefficient) and the multiple of c in the constant, r the rest. Then
    `f // c` is `q + r // c` and `f % c` is `r % c`, whatever the values of the atoms."""
    q = [(a, k // c) for a, k in f.coeffs if reduce or k % c == 0]
    r = [(a, k % c if reduce else k) for a, k in f.coeffs if k % c != 0]
    return Linear(tuple(t for t in q if t[1]), f.const // c), Linear(tuple(r), f.const % c)


def _negated(a: Expr, b: Expr) -> bool:
    """Whether `b` is `-a` (their linear forms)."""
    fa, fb = linear_form(a), linear_form(b)
    return fb.const == -fa.const and fb.as_dict() == {atom: -k for atom, k in fa.coeffs}


def _mod_interval(r: Interval | None, c: int) -> Interval:
    if r is not None and r[0] // c == r[1] // c:
        return r[0] % c, r[1] % c
    return 0, c - 1


def _atom_interval(e: Expr, ranges: Mapping[str, int], loads: LoadBounds | None = None) -> Interval | None:
    if isinstance(e, Var):
        n = ranges.get(e.name)
        return None if n is None else (0, n - 1)
    if isinstance(e, Binary):
        c = _divisor(e)
        if c is not None:
            f = linear_form(e.a)
            q, rest = _peel(f, c)
            r = _linear_interval(rest, ranges, loads=loads)
            if e.op == "mod":
                a = _mod_interval(r, c)
                if all(0 <= k < c for _, k in rest.coeffs):
                    return a
                # coefficients reduced modulo c too: both readings are sound, take the tighter
                b = _mod_interval(_linear_interval(_peel(f, c, reduce=True)[1], ranges, loads=loads), c)
                return max(a[0], b[0]), min(a[1], b[1])
            rq = _linear_interval(q, ranges, loads=loads)
            if r is None or rq is None:
                return None
            return rq[0] + r[0] // c, rq[1] + r[1] // c
        ra, rb = interval(e.a, ranges, loads), interval(e.b, ranges, loads)
        if ra is None or rb is None:
            return None
        if e.op == "maximum" and _negated(e.a, e.b):  # |a| (a reflection pad's index): from 0 across 0
            lo, hi = ra
            return (lo, hi) if lo >= 0 else (-hi, -lo) if hi <= 0 else (0, max(-lo, hi))
        if e.op == "minimum":
            return min(ra[0], rb[0]), min(ra[1], rb[1])
        if e.op == "maximum":
            return max(ra[0], rb[0]), max(ra[1], rb[1])
        if e.op == "mul":
            ps = [x * y for x in ra for y in rb]
            return min(ps), max(ps)
        return None
    if isinstance(e, IndexValue):
        return interval(e.index, ranges, loads)
    if isinstance(e, Load) and loads is not None:
        return loads(e)
    return None  # loads (indirect indexing) and anything else: unknown statically


# -- intermediates --------------------------------------------------------------------------------
def index_magnitude(e: Expr, ranges: Mapping[str, int], loads: LoadBounds | None = None) -> int | None:
    """The largest |value| of any intermediate of computing the integer expression `e` over the
    box (each var v in [0, ranges[v]-1], each load within `loads`), or None if some part is
    unbounded.

    It covers both ways fuseopt computes an index: as the written tree (every sub-expression's
    value), and as its linear form (`const + sum(k * atom)`, summed in any order, each non-linear
    atom's operands computed the same way), which is what generated code and the interpreter's
    index sums do. A sum of terms t_i in [lo_i, hi_i] has every partial sum, in any order, in
    [sum(min(0, lo_i)), sum(max(0, hi_i))]; `//`, `%`, min, max and products of non-constants
    bound their own value by `interval` and their operands recursively; a load's index counts
    too (it is computed in the same kernel).
    """
    try:
        neg, pos, inner, coeff = _magnitudes(e, ranges, loads)
    except _Unbounded:
        return None
    return max(-neg, pos, inner, coeff)


def indirect_bounds(
    index: Expr, size: int, ranges: Mapping[str, int], loads: LoadBounds | None = None
) -> dict[str, Interval]:
    """What a valid run tells about the value of a load that is a term of an index into a storage
    of `size` elements: the index is in [0, size - 1] wherever the access happens (the reference
    checks it), so in `table[8*ids[i] + j]` ids[i] is in [ceil(-max(j) / 8), floor((size - 1) / 8)].
    By the load's text; only for an index whose linear form has exactly one load atom (the rest
    bounded by `interval`, other loads by `loads`); empty otherwise."""
    f = linear_form(index)
    terms = [(a, k) for a, k in f.coeffs if isinstance(a, Load)]
    if len(terms) != 1:
        return {}
    atom, k = terms[0]
    rest = _linear_interval(
        Linear(tuple(t for t in f.coeffs if t[0] is not atom), f.const), ranges, loads=loads
    )
    if rest is None:
        return {}
    lo, hi = -rest[1], size - 1 - rest[0]  # k * value lies in [lo, hi]
    if k < 0:
        lo, hi, k = -hi, -lo, -k
    return {to_text(atom): (-(-lo // k), hi // k)}


class _Unbounded(Exception):
    pass


def _known(r: Interval | None) -> Interval:
    if r is None:
        raise _Unbounded
    return r


def _magnitudes(e: Expr, ranges: Mapping[str, int], loads: LoadBounds | None) -> tuple[int, int, int, int]:
    """(neg, pos, m, k): `e` read as a sum of terms, every partial sum of them lies in [neg, pos]
    (neg <= 0 <= pos); m bounds |v| of every intermediate inside its non-linear atoms; k bounds
    |coefficient| of every atom of its linear form (the literal generated code multiplies by).
    A factor is a constant exactly when `linear_form` finds no atom in it (`(3 + 3) * x` is
    `6 * x`, distributed over x's terms as generated code computes it)."""
    if isinstance(e, Const) and type(e.value) is int:
        return min(0, e.value), max(0, e.value), 0, 0
    if isinstance(e, Var):
        return 0, _known(_atom_interval(e, ranges))[1], 0, 1
    if isinstance(e, Unary) and e.op == "neg":
        neg, pos, m, k = _magnitudes(e.x, ranges, loads)
        return -pos, -neg, m, k
    if isinstance(e, IndexValue):
        return _magnitudes(e.index, ranges, loads)
    if isinstance(e, Binary):
        if e.op in ("add", "sub"):
            na, pa, ma, ka = _magnitudes(e.a, ranges, loads)
            nb, pb, mb, kb = _magnitudes(e.b, ranges, loads)
            if e.op == "sub":
                nb, pb = -pb, -nb
            return na + nb, pa + pb, max(ma, mb), ka + kb
        if e.op == "mul":
            c, factor, x = _constant_factor(e)
            if x is not None:
                nx, px, mx, kx = _magnitudes(x, ranges, loads)
                nk, pk, mk, _ = _magnitudes(factor, ranges, loads)  # the tree computes the factor
                lo, hi = (c * nx, c * px) if c >= 0 else (c * px, c * nx)
                return lo, hi, max(mx, -nx, px, abs(c), mk, -nk, pk), abs(c) * kx  # literals too
        if e.op in ("floordiv", "mod", "mul", "minimum", "maximum"):
            na, pa, ma, ka = _magnitudes(e.a, ranges, loads)
            nb, pb, mb, kb = _magnitudes(e.b, ranges, loads)
            lo, hi = _known(_atom_interval(e, ranges, loads))
            return min(0, lo), max(0, hi), max(ma, -na, pa, ka, mb, -nb, pb, kb), 1
    if isinstance(e, Load):
        ni, pi, mi, ki = _magnitudes(e.index, ranges, loads)
        lo, hi = _known(_atom_interval(e, ranges, loads))
        return min(0, lo), max(0, hi), max(mi, -ni, pi, ki), 1
    raise _Unbounded


def _constant_factor(e: Binary) -> tuple[int, Expr, Expr | None]:
    """(c, k, x) when the factor k of the product `e` is a constant c by `linear_form` and x is the
    other, else (0, e, None)."""
    for k, x in ((e.a, e.b), (e.b, e.a)):
        atoms, c = _form(k)
        if not atoms:
            return c, k, x
    return 0, e, None


# -- conditions ------------------------------------------------------------------------------
def _conjuncts(c: Expr) -> list[Expr] | None:
    if isinstance(c, Binary) and c.op == "and":
        a, b = _conjuncts(c.a), _conjuncts(c.b)
        return None if a is None or b is None else a + b
    if isinstance(c, Binary) and c.op in ("lt", "le", "gt", "ge", "eq"):
        return [c]
    return None


def constraints(cond: Expr, ranges: Mapping[str, int]) -> list[tuple[Linear, Interval]] | None:
    """A conjunction of comparisons as `L in [lo, hi]` with L's constant folded into the bounds.
    A comparison of constants that holds is no constraint; one that does not is an empty interval
    (the conjunction holds nowhere: Inductor's concatenation of a slice at a constant position)."""
    parts = _conjuncts(cond)
    if parts is None:
        return None
    out: list[tuple[Linear, Interval]] = []
    big = 2**63
    for p in parts:
        assert isinstance(p, Binary)
        fa, fb = linear_form(p.a), linear_form(p.b)
        d = fa.as_dict()
        for a, k in fb.coeffs:
            d[a] = d.get(a, 0) - k
        lin = _mk(d, 0)
        k = fb.const - fa.const  # lin  <op>  k
        if not lin.coeffs:
            if not {"lt": k > 0, "le": k >= 0, "gt": k < 0, "ge": k <= 0, "eq": k == 0}[p.op]:  # 0 <op> k
                return [(lin, (1, 0))]
            continue
        lo, hi = {"lt": (-big, k - 1), "le": (-big, k), "gt": (k + 1, big), "ge": (k, big), "eq": (k, k)}[
            p.op
        ]
        own = _linear_interval(lin, ranges)
        if own is not None:
            lo, hi = max(lo, own[0]), min(hi, own[1])
        out.append((lin, (lo, hi)))
    return out


def masked_interval(
    index: Expr, conds: list[tuple[Linear, Interval]], ranges: Mapping[str, int]
) -> Interval | None:
    """Bound `index` where every constraint holds, by peeling constrained forms off it; None
    where they hold nowhere (no index is computed there)."""
    if any(a > b for _, (a, b) in conds):
        return None
    f = linear_form(index)
    rest = f.as_dict()
    lo = hi = f.const
    # Merge constraints on the same form into one interval first.
    merged: dict[tuple[tuple[Atom, int], ...], Interval] = {}
    for lin, (a, b) in conds:
        key = tuple(sorted(lin.coeffs, key=lambda t: repr(t[0])))
        old = merged.get(key)
        merged[key] = (a, b) if old is None else (max(old[0], a), min(old[1], b))
    for key, (a, b) in sorted(merged.items(), key=lambda kv: -len(kv[0])):
        atom0, k0 = key[0]
        if atom0 not in rest or rest[atom0] % k0 != 0:
            continue
        lam = rest[atom0] // k0
        if lam == 0 or any(rest.get(at, 0) != lam * k for at, k in key):
            continue
        for at, _ in key:
            del rest[at]
        lo += min(lam * a, lam * b)
        hi += max(lam * a, lam * b)
    r = _linear_interval(_mk(rest, 0), ranges)
    if r is None:
        return None
    return lo + r[0], hi + r[1]


# -- the node check ---------------------------------------------------------------------------
def check_node_bounds(
    node: ComputeNode,
    buffers: Mapping[str, BufferInfo],
    store_text: str,
    value_text: str,
    loads: Sequence[Load] | None = None,
) -> list[tuple[str, str, Span, str]]:
    """Problems as (message, field, span, source). Loads that cannot be bounded are skipped here.

    `loads`, when the caller has them (the type checker collects them), are every load of the
    value; if the value has no `masked(...)`, they are checked without walking the tree again."""
    out: list[tuple[str, str, Span, str]] = []
    outer = {lv.name: lv.size for lv in node.loops}
    ranges = node.var_sizes

    def check(ld: Load, r: Interval | None, field: str, text: str, masked: bool) -> None:
        if r is None:
            return
        size = buffers[ld.buffer].storage_size
        # A masked load whose bound is loose may still be fine (the interpreter checks it at run
        # time); only one that is outside wherever its condition holds is an error here.
        bad = (r[1] < 0 or r[0] >= size) if masked else (r[0] < 0 or r[1] >= size)
        if bad:
            what = "masked load" if masked else ("store" if field == "store" else "load")
            out.append(
                (
                    f"{what} index of {ld.buffer!r} ranges over [{r[0]}, {r[1]}] but its storage has {size} "
                    f"elements (valid: [0, {size - 1}])",
                    field,
                    ld.span,
                    text,
                )
            )

    outer_key = tuple(outer.items())
    ranges_key = tuple(ranges.items())
    check(node.store, _typed_interval(node.store.index, outer, outer_key), "store", store_text, False)

    def visit(e: Expr, conds: list[tuple[Linear, Interval]] | None, in_mask: bool) -> None:
        if isinstance(e, Masked):
            visit(e.cond, conds, in_mask)
            new = _typed_constraints(e.cond, ranges, ranges_key)
            inner = None if new is None or conds is None else conds + new
            if inner is not None and any(lo > hi for _, (lo, hi) in inner):
                inner = None  # the condition holds nowhere in the box: the body never runs
            visit(e.body, inner, True)
            visit(e.other, conds, in_mask)
            return
        if isinstance(e, Load):
            if in_mask:
                if conds is not None:
                    check(e, masked_interval(e.index, conds, ranges), "value", value_text, True)
            else:
                check(e, _typed_interval(e.index, ranges, ranges_key), "value", value_text, False)
            visit(e.index, conds, in_mask)
            return
        for c in e.children():
            visit(c, conds, in_mask)

    if loads is not None and "masked" not in value_text:
        for ld in loads:
            check(ld, _typed_interval(ld.index, ranges, ranges_key), "value", value_text, False)
    else:
        visit(node.value, [], False)
    return out


# Index expressions repeat across the nodes of a graph (`128*i0 + i1` over the same loops), so the
# node check memoises intervals. Keys are *typed* trees: typing makes structural equality exact
# (an untyped Const(1) equals Const(1.0) and Const(True), a typed one does not).
_INTERVALS: dict[tuple[Expr, tuple[tuple[str, int], ...]], Interval | None] = {}
_INTERVALS_MAX = 1 << 16


def _typed_interval(e: Expr, ranges: Mapping[str, int], key: tuple[tuple[str, int], ...]) -> Interval | None:
    return _memo(_INTERVALS, interval, e, ranges, key)


_NOT_YET = object()


def _memo(
    table: dict[Any, Any],
    fn: Callable[[Expr, Mapping[str, int]], Any],
    e: Expr,
    ranges: Mapping[str, int],
    key: tuple[tuple[str, int], ...],
) -> Any:
    """fn(e, ranges), memoised in `table` by (typed tree, ranges key); untyped trees are not keys."""
    if e.dtype is None:
        return fn(e, ranges)
    k = (e, key)
    r = table.get(k, _NOT_YET)
    if r is _NOT_YET:
        if len(table) >= _INTERVALS_MAX:
            table.clear()
        r = table[k] = fn(e, ranges)
    return r


# Mask conditions repeat likewise (a padded window's bounds test in every pooling node), keyed the
# same way; the lists are shared, never changed (`conds + new` above makes a new one).
_CONSTRAINTS: dict[tuple[Expr, tuple[tuple[str, int], ...]], list[tuple[Linear, Interval]] | None] = {}


def _typed_constraints(
    cond: Expr, ranges: Mapping[str, int], key: tuple[tuple[str, int], ...]
) -> list[tuple[Linear, Interval]] | None:
    return _memo(_CONSTRAINTS, constraints, cond, ranges, key)
