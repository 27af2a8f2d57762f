"""Hypothesis strategies of index expressions over split and merged loops, and graphs made of them.

A *box* is `extent` points numbered row-major; a *loop structure* is a factorisation of it into
loops (outer first): each logical dimension split into factors, then runs of adjacent loops merged
(across dimensions too). `spelled` writes a function of the box's logical coordinates -- a strided
layout -- over a loop structure in one of many spellings: terms in any order, coefficients on
either side, `// 1`, `% 1`, constant digits (`v // size`), nested `//` and `%`, `c*(v // c) + v % c`
splits. Two spellings over two loop structures of one box are one function of the flat position;
`mutated` gives one that is (usually) another. `evaluate` computes an index at every point, the
numerical oracle these tests check the normal form against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from fuseopt.ir.expr import Binary, Const, Expr, IndexValue, Unary, Var, to_text
from fuseopt.ir.graph import LoopVar
from fuseopt.passes.loop_transform import refactor_map

SIZES = (1, 2, 3, 4, 5, 6, 8, 11, 12)


@dataclass(frozen=True)
class Layout:
    """A function of a box's logical coordinates: offset + sum(stride_i * x_i)."""

    dims: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    @property
    def extent(self) -> int:
        return math.prod(self.dims)


@st.composite
def layouts(
    draw: Any, max_extent: int = 400, kinds: tuple[str, ...] = ("dense", "dense", "permuted", "random")
) -> Layout:
    """dense and permuted (padded) layouts are one-to-one; random strides need not be."""
    rank = draw(st.integers(1, 3))
    dims = [draw(st.sampled_from(SIZES)) for _ in range(rank)]
    while math.prod(dims) > max_extent:
        dims[dims.index(max(dims))] //= 2
    kind = draw(st.sampled_from(kinds))
    if kind == "random":
        strides = [draw(st.integers(-3, 9)) for _ in dims]
    else:
        order = list(range(rank)) if kind == "dense" else draw(st.permutations(list(range(rank))))
        strides, acc = [0] * rank, 1
        for pos in reversed(order):
            strides[pos] = acc
            acc *= dims[pos] + draw(st.sampled_from((0, 0, 1)))
    return Layout(tuple(dims), tuple(strides), draw(st.sampled_from((0, 0, 2, 7))))


def _factors(n: int, draw: Any) -> list[int]:
    out: list[int] = []
    while n > 1:
        d = draw(st.sampled_from([d for d in range(2, n + 1) if n % d == 0]))
        out.append(d)
        n //= d
    return out or [1]


@st.composite
def loop_structures(draw: Any, dims: tuple[int, ...], prefix: str) -> tuple[LoopVar, ...]:
    """Each dim split into factors (in any order), then random runs of adjacent loops merged."""
    sizes = [f for d in dims for f in (_factors(d, draw) if draw(st.booleans()) else [d])]
    merged: list[int] = []
    for s in sizes:
        if merged and draw(st.integers(0, 3)) == 0:
            merged[-1] *= s
        else:
            merged.append(s)
    return tuple(LoopVar(f"{prefix}{i}", s) for i, s in enumerate(merged))


# -- spellings --------------------------------------------------------------------------------------
def _c(v: int) -> Const:
    return Const(v)


def _add(a: Expr, b: Expr) -> Expr:
    return Binary("add", a, b)


def _mul(k: int, e: Expr, draw: Any) -> Expr:
    if k == 1 and draw(st.booleans()):
        return e
    return Binary("mul", _c(k), e) if draw(st.booleans()) else Binary("mul", e, _c(k))


def _digit_variant(e: Expr, sizes: dict[str, int], top: set[str], draw: Any) -> Expr:
    """An equal spelling of a digit expression (`v`, `v // a`, `v % m`, `v // a % m`)."""
    form = draw(st.integers(0, 7))
    if isinstance(e, Var):
        size = sizes[e.name]
        if form == 0:
            return Binary("mod", e, _c(size))  # v % size == v
        if form == 1:
            return Binary("floordiv", e, _c(1))
        if form == 2:  # v == c*(v // c) + v % c, a digit split where c divides v's range
            cands = [c for c in range(2, size + 1) if size % c == 0 or e.name in top]
            if cands:
                c = draw(st.sampled_from(cands))
                return _add(_mul(c, Binary("floordiv", e, _c(c)), draw), Binary("mod", e, _c(c)))
        if form == 3:
            return _add(e, _mul(draw(st.integers(1, 5)), Binary("floordiv", e, _c(size)), draw))
        return e
    if isinstance(e, Binary) and e.op == "mod" and isinstance(e.a, Binary) and e.a.op == "floordiv":
        x, a, m = e.a.a, int(e.a.b.value), int(e.b.value)  # type: ignore[attr-defined]
        if form == 0:  # x // a % m == x % (a*m) // a
            return Binary("floordiv", Binary("mod", x, _c(a * m)), _c(a))
        if form == 1:  # nested moduli: (x // a % (m*k)) % m
            k = draw(st.integers(2, 3))
            return Binary("mod", Binary("mod", e.a, _c(m * k)), _c(m))
        if form == 2:
            return Binary("mod", Binary("floordiv", Binary("floordiv", x, _c(1)), _c(a)), _c(m))
        return e
    if isinstance(e, Binary) and e.op == "floordiv" and isinstance(e.b, Const):
        a = int(e.b.value)
        if form == 0 and a > 1:  # x // a == x // p // (a/p)
            ps = [p for p in range(2, a) if a % p == 0]
            if ps:
                p = draw(st.sampled_from(ps))
                return Binary("floordiv", Binary("floordiv", e.a, _c(p)), _c(a // p))
        return e
    return e


def _digits_of(e: Expr) -> list[tuple[int, Expr]]:
    """A refactor_map value (sum of coefficient * digit) as its terms."""
    if isinstance(e, Binary) and e.op == "add":
        return _digits_of(e.a) + _digits_of(e.b)
    if isinstance(e, Binary) and e.op == "mul" and isinstance(e.a, Const):
        return [(int(e.a.value), e.b)]
    if isinstance(e, Const):
        return [] if e.value == 0 else [(int(e.value), _c(1))]
    return [(1, e)]


def _strip_types(e: Expr) -> Expr:
    from dataclasses import replace

    from fuseopt.ir.expr import transform

    return transform(e, lambda n: replace(n, dtype=None) if n.dtype is not None else None)


@st.composite
def spelled(draw: Any, layout: Layout, loops: tuple[LoopVar, ...], exact: bool = False) -> Expr:
    """`layout`'s function over `loops` (a loop structure of its box), spelled at random.

    `exact`: only spellings whose interval bound is the exact range (what a graph's bounds
    check needs: `3*(v // 3) + v % 3` of a v < 4 has the bound 5)."""
    logical = tuple(LoopVar(f"x{i}", d) for i, d in enumerate(layout.dims))
    mapping = refactor_map(logical, loops)
    assert mapping is not None
    sizes = {lv.name: lv.size for lv in loops}
    top = set() if exact else {next((lv.name for lv in loops if lv.size > 1), "")}
    terms: list[Expr] = []
    for lv, stride in zip(logical, layout.strides, strict=True):
        if stride == 0:
            continue
        for k, digit in _digits_of(_strip_types(mapping[lv.name])):
            terms.append(_mul(stride * k, _digit_variant(digit, sizes, top, draw), draw))
    if layout.offset:
        terms.append(_c(layout.offset))
    if draw(st.booleans()) and loops:  # a constant digit or a modulus-1 digit, times something
        lv = draw(st.sampled_from(loops))
        junk = (
            Binary("mod", Var(lv.name), _c(1))
            if draw(st.booleans())
            else Binary("floordiv", Var(lv.name), _c(lv.size))
        )
        terms.append(_mul(draw(st.integers(1, 9)), junk, draw))
    terms = draw(st.permutations(terms))
    out: Expr = _c(0)
    for t in terms:
        out = t if isinstance(out, Const) and out.value == 0 else _add(out, t)
    return out


@st.composite
def mutated(draw: Any, layout: Layout) -> Layout:
    """A layout that is (usually) another function: one stride or the offset changed, or two
    strides swapped."""
    strides = list(layout.strides)
    how = draw(st.integers(0, 2))
    if how == 0 or len(strides) < 2:
        i = draw(st.integers(0, len(strides) - 1))
        strides[i] += draw(st.sampled_from((-1, 1, 2)))
        return Layout(layout.dims, tuple(strides), layout.offset)
    if how == 1:
        i, j = draw(
            st.sampled_from([(i, j) for i in range(len(strides)) for j in range(i + 1, len(strides))])
        )
        strides[i], strides[j] = strides[j], strides[i]
        return Layout(layout.dims, tuple(strides), layout.offset)
    return Layout(layout.dims, layout.strides, layout.offset + 1)


# -- the numerical oracle ----------------------------------------------------------------------------
def point_values(loops: tuple[LoopVar, ...], flat: int, scale: int = 1) -> dict[str, int]:
    """The loop variables at flat position `flat` of the kernel (the node at flat // scale)."""
    rest = flat // scale
    out: dict[str, int] = {}
    for lv in reversed(loops):
        out[lv.name], rest = rest % lv.size, rest // lv.size
    return out


def evaluate(e: Expr, env: dict[str, int]) -> int:
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, IndexValue):
        return evaluate(e.index, env)
    if isinstance(e, Unary):
        assert e.op == "neg"
        return -evaluate(e.x, env)
    assert isinstance(e, Binary), to_text(e)
    a, b = evaluate(e.a, env), evaluate(e.b, env)
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "floordiv": lambda: a // b,
        "mod": lambda: a % b,
        "minimum": lambda: min(a, b),
        "maximum": lambda: max(a, b),
    }[e.op]()


def values_over(e: Expr, loops: tuple[LoopVar, ...], extent: int, scale: int = 1) -> list[int]:
    return [evaluate(e, point_values(loops, p, scale)) for p in range(extent)]


# -- random index expressions (for soundness) --------------------------------------------------------
@st.composite
def random_indices(draw: Any, loops: tuple[LoopVar, ...], depth: int = 3) -> Expr:
    """Any integer expression of the loop variables: sums, products, // and % by constants,
    min and max (most of them no digit sums at all)."""
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if loops and draw(st.integers(0, 3)):
            return Var(draw(st.sampled_from(loops)).name)
        return _c(draw(st.integers(-3, 12)))
    op = draw(
        st.sampled_from(("add", "add", "sub", "mul", "floordiv", "mod", "floordiv", "mod", "min", "max"))
    )
    a = draw(random_indices(loops, depth - 1))
    if op in ("floordiv", "mod"):
        return Binary(op, a, _c(draw(st.sampled_from((1, 2, 3, 4, 6, 8, 12)))))
    if op == "mul" and draw(st.booleans()):
        return Binary("mul", _c(draw(st.integers(-4, 16))), a)
    b = draw(random_indices(loops, depth - 1))
    if op in ("min", "max"):
        return Binary("minimum" if op == "min" else "maximum", a, b)
    return Binary(op, a, b)
