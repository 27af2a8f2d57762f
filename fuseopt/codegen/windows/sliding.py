"""Sliding windows: which loads of one row of a kernel reappear at the next row.

A pointwise kernel (or a small reduction unrolled into one) whose flat index splits at `s` into
rows (`yindex = flat // s`) and a contiguous inner part (`xindex = flat % s`) can walk a band of
consecutive rows in one program. A load at row y that reads what another load read at row y - 1
(the same buffer, the address one row further, the same mask) takes that value from the previous
iteration, a register, instead of memory: a 3x3 pooling window over a channels-last image loads
3 image rows per output row instead of 9.

Two loads are matched by keys: the load's buffer, its index and its mask conditions in a normal
form over the kernel's digits (`indexing.canonical_terms`), with the row index shifted by a
number of rows. Shifting is exact because bands are aligned to a `period` that every row digit
respects: `(y + 1) % m == y % m + 1` inside a band when m is a multiple of the period, and
`y // d` is constant there when d is. A load whose index or mask has a row digit of any other
shape, an opaque (non-affine) part, or a load inside its mask has no key and is never carried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fuseopt.codegen.indexing import Digit, Flat, canonical_terms
from fuseopt.ir.expr import (
    Binary,
    Cast,
    Const,
    Expr,
    IndexValue,
    Load,
    Masked,
    Unary,
    Var,
    Where,
    substitute_vars,
    transform,
)
from fuseopt.ir.fold import INT_OPS

Key = tuple[object, ...]


@dataclass(frozen=True)
class Walk:
    """The row index a kernel walks (`base`) and the alignment of its bands (`period` rows)."""

    base: str
    period: int


def index_ops(e: Expr, ranges: Mapping[str, int]) -> bool:
    """Whether `e` is integer index arithmetic of loop variables (no loads)."""
    if isinstance(e, Var):
        return e.name in ranges
    if isinstance(e, Const):
        return type(e.value) is int
    if isinstance(e, IndexValue):
        return index_ops(e.index, ranges)
    if isinstance(e, Unary):
        return e.op == "neg" and index_ops(e.x, ranges)
    if isinstance(e, Binary):
        if e.op in ("floordiv", "mod"):
            return (
                isinstance(e.b, Const) and type(e.b.value) is int and e.b.value > 0 and index_ops(e.a, ranges)
            )
        return e.op in ("add", "sub", "mul") and index_ops(e.a, ranges) and index_ops(e.b, ranges)
    return False


@dataclass(frozen=True)
class KeyContext:
    """What a key needs of one node at one point of the kernel."""

    digits: Mapping[str, Digit | None]
    ranges: Mapping[str, int]
    extents: Mapping[str, int]
    flats: Mapping[str, Flat]
    walk: Walk
    consts: Mapping[str, int]  # axis bases bound to a constant (an unrolled reduction's point)

    def bind(self, e: Expr) -> Expr:
        """Loop variables on constant bases replaced by their values."""
        mapping: dict[str, Expr] = {}
        for v, d in self.digits.items():
            if d is not None and d.base in self.consts:
                q = self.consts[d.base] // d.div
                mapping[v] = Const(q if d.mod is None else q % d.mod)
        return transform(substitute_vars(e, mapping), _fold_consts) if mapping else e


_FOLDED = ("add", "sub", "mul", "floordiv", "mod")  # of two literals, folded


def _fold_consts(e: Expr) -> Expr | None:
    """Integer arithmetic of two non-negative constants, folded (what the emitter does with
    literal operands)."""
    if (
        isinstance(e, Binary)
        and e.op in _FOLDED
        and isinstance(e.a, Const)
        and isinstance(e.b, Const)
        and type(e.a.value) is int
        and type(e.b.value) is int
        and e.a.value >= 0
        and e.b.value > 0
    ):
        return Const(INT_OPS[e.op](e.a.value, e.b.value), dtype=e.dtype)
    return None


def index_key(index: Expr, kc: KeyContext, shift: int) -> Key | None:
    """The normal form of an index evaluated `shift` rows further along the walk."""
    terms, other, const = canonical_terms(kc.bind(index), kc.digits, kc.extents, kc.flats)
    if other:
        return None
    period = kc.walk.period
    out: list[tuple[str, int, int, int]] = []
    for d, k in terms.items():
        if d.base.startswith("flat_"):
            return None  # a digit across the row split: not a shift of the row index
        if d.base == kc.walk.base:
            if d.div == 1 and (d.mod is None or d.mod % period == 0):
                const += k * shift
            elif d.div % period:
                return None
        out.append((d.base, d.div, d.mod or 0, k))
    return (tuple(sorted(out)), const)


def cond_key(e: Expr, kc: KeyContext, shift: int) -> Key | None:
    """A mask condition's normal form (integer index arithmetic by `index_key`, the rest
    structurally), evaluated `shift` rows further."""
    if isinstance(e, Const):
        return ("c", str(e.dtype), type(e.value).__name__, e.value)
    if index_ops(e, kc.ranges):
        k = index_key(e.index if isinstance(e, IndexValue) else e, kc, shift)
        return None if k is None else ("i", k)
    split = _node_parts(e)
    if split is None:
        return None  # loads, masked values, reductions: not compared
    keys = [cond_key(p, kc, shift) for p in split[1]]
    if any(k is None for k in keys):
        return None
    return (*split[0], *keys)


def _node_parts(e: Expr) -> tuple[Key, list[Expr]] | None:
    """An operation's key head (kind, op, dtype) and its operands, for structural keys."""
    if isinstance(e, Binary):
        return ("b", e.op, str(e.dtype)), [e.a, e.b]
    if isinstance(e, Unary):
        return ("u", e.op, str(e.dtype)), [e.x]
    if isinstance(e, Cast):
        return ("cast", str(e.to)), [e.x]
    if isinstance(e, Where):
        return ("where", str(e.dtype)), [e.cond, e.a, e.b]
    return None


def load_key(buffer: str, index: Expr, conds: tuple[Expr, ...], kc: KeyContext, shift: int) -> Key | None:
    """A load's key: buffer, index and the conditions of its mask, `shift` rows further."""
    idx = index_key(index, kc, shift)
    if idx is None:
        return None
    keys = [cond_key(kc.bind(c), kc, shift) for c in conds]
    if any(k is None for k in keys):
        return None
    return (buffer, idx, tuple(keys))


def value_key(
    e: Expr, kc: KeyContext, shift: int, opaque: frozenset[str], conds: tuple[Expr, ...] = ()
) -> Key | None:
    """A value's normal form `shift` rows further: loads by `load_key` (None for buffers in
    `opaque`: written or produced by the kernel itself), masked values with their conditions,
    the rest structurally. Equal keys: the same value at every point of the kernel."""
    if isinstance(e, Load):
        if e.buffer in opaque:
            return None
        k = load_key(e.buffer, e.index, conds, kc, shift)
        return None if k is None else ("load", str(e.dtype), k)
    if isinstance(e, Masked):
        c = cond_key(kc.bind(e.cond), kc, shift)
        body = value_key(e.body, kc, shift, opaque, (*conds, e.cond))
        other = value_key(e.other, kc, shift, opaque, conds)
        if c is None or body is None or other is None:
            return None
        return ("masked", str(e.dtype), c, body, other)
    if isinstance(e, Const) or index_ops(e, kc.ranges):
        return cond_key(kc.bind(e), kc, shift)
    split = _node_parts(e)
    if split is None:
        return None
    keys = [value_key(p, kc, shift, opaque, conds) for p in split[1]]
    if any(k is None for k in keys):
        return None
    return (*split[0], *keys)


def row_groups(now: list[Key | None], before: list[Key | None]) -> list[list[int]] | None:
    """Points of an unrolled reduction (keys of each point's value at this row and one row
    earlier) as groups by rows back: group p at row y holds the values group p - 1 held at row
    y - 1, point for point, each group ordered like the points it takes its values from.

    None unless every group after the first takes all its values from the group before (a
    rectangular window): then each group's combined value can be carried from row to row."""
    source: dict[Key, int] = {}
    for i, k in enumerate(before):
        if k is not None and k not in source:
            source[k] = i
    src = {i: source[k] for i, k in enumerate(now) if k is not None and k in source and source[k] != i}
    groups = [[i for i in range(len(now)) if i not in src]]
    while True:
        nxt = [b for a in groups[-1] for b in sorted(src) if src[b] == a]
        if not nxt:
            break
        if len(nxt) != len(groups[-1]) or len(set(nxt)) != len(nxt):
            return None
        groups.append(nxt)
    if len(groups) < 2 or sum(len(g) for g in groups) != len(now):
        return None
    return groups


@dataclass(frozen=True)
class WindowLoad:
    """A load the walking loop emits: its key at this row and at the row before."""

    key: Key | None
    prev: Key | None


def carry_plan(loads: list[WindowLoad]) -> dict[Key, Key]:
    """For each load whose value another load read one row earlier: its key -> that load's key.

    The first load (in emission order) with the matching earlier key is the source."""
    source: dict[Key, Key] = {}
    for ld in loads:
        if ld.key is not None and ld.prev is not None and ld.prev not in source:
            source[ld.prev] = ld.key
    plan: dict[Key, Key] = {}
    for ld in loads:
        if ld.key is not None and ld.key in source and source[ld.key] != ld.key:
            plan[ld.key] = source[ld.key]
    return plan
