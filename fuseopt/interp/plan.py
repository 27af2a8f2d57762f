"""What the interpreter decides once per node, before running its chunks.

Loads: a load whose index provably stays inside its storage over the whole loop box needs nothing.
A masked load proven inside wherever its condition holds needs only its masked-off lanes redirected
(to 0) before the gather. Everything else -- indirect indices, conditions that are not linear, bounds the
static analysis cannot prove -- is checked at run time (`fuseopt.interp.evaluate`).

Shared sub-trees: an expression that occurs more than once is computed once per scope (Inductor
CSEs identical loads the same way).

Index sums: every index (load, store, `index()`) is split into constant + sum(coeff * term), so the
evaluator can add the terms from the smallest broadcast tensor to the largest, with the constant
folded into the smallest: one box-sized addition instead of one per term.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from fuseopt.ir.bounds import Interval, Linear, constraints, interval, masked_interval
from fuseopt.ir.expr import Binary, Const, Expr, IndexValue, Load, Masked, Unary, Var, Where, walk
from fuseopt.ir.graph import BufferInfo, ComputeNode


@dataclass(frozen=True)
class IndexSum:
    """An index as `const + sum(coeff * term)`; terms are typed sub-trees (vars, `//`, loads, ...)."""

    const: int
    terms: tuple[tuple[Expr, int], ...]


@dataclass(frozen=True)
class NodePlan:
    loads: dict[int, LoadPlan]  # by id(Load)
    sums: dict[int, IndexSum]  # by id(index expression)
    shared: frozenset[Expr]  # sub-trees that occur more than once: computed once per scope (CSE)
    gapped: dict[str, BufferInfo]  # written buffers with gaps that some checked load reads
    element_masks: dict[str, object] = field(default_factory=dict)  # buffer -> its positions' mask (lazy)


@dataclass(frozen=True)
class LoadPlan:
    check: bool  # test the index against the storage at run time
    redirect: bool  # under a mask: send masked-off lanes to index 0 before the gather
    elements: bool = False  # test that it reads elements of its (written, gapped) buffer


_FULL_CHECK = LoadPlan(check=True, redirect=True)


def _inside(r: Interval | None, size: int) -> bool:
    return r is not None and r[0] >= 0 and r[1] < size


def plan_loads(node: ComputeNode, buffers: Mapping[str, BufferInfo]) -> dict[int, LoadPlan]:
    """Load (by object id, as the evaluator walks the same tree) -> what it needs at run time.

    A load object reached twice (trees may share sub-objects) gets the stricter plan.
    """
    ranges = node.var_sizes
    plans: dict[int, LoadPlan] = {}

    def record(ld: Load, plan: LoadPlan) -> None:
        old = plans.get(id(ld))
        if old is not None:
            plan = LoadPlan(
                old.check or plan.check, old.redirect or plan.redirect, old.elements or plan.elements
            )
        plans[id(ld)] = plan

    def visit(e: Expr, conds: list[tuple[Linear, Interval]] | None, masked: bool, counted: bool) -> None:
        if isinstance(e, Masked):
            visit(e.cond, conds, masked, counted)
            new = constraints(e.cond, ranges)
            visit(e.body, None if new is None or conds is None else conds + new, True, counted)
            visit(e.other, conds, masked, counted)
            return
        if isinstance(e, Where):
            visit(e.cond, conds, masked, counted)
            visit(e.a, conds, masked, False)
            visit(e.b, conds, masked, False)
            return
        if isinstance(e, Load):
            b = buffers[e.buffer]
            size = b.storage_size
            elements = counted and b.role != "input" and has_gaps(b)
            indirect = any(isinstance(n, Load) for n in walk(e.index))
            if not indirect and _inside(interval(e.index, ranges), size):
                record(e, LoadPlan(check=False, redirect=False, elements=elements))
            elif not indirect and masked and conds is not None:
                proven = _inside(masked_interval(e.index, conds, ranges), size)
                record(e, LoadPlan(check=not proven, redirect=True, elements=elements))
            else:
                record(e, LoadPlan(True, True, elements))
            visit(e.index, conds, masked, counted)
            return
        for c in e.children():
            visit(c, conds, masked, counted)

    visit(node.value, [], False, True)
    return plans


def has_gaps(b: BufferInfo) -> bool:
    """Whether some storage position of `b` is no element (below its offset, or between its
    elements): for a valid layout, fewer elements than positions from the offset on."""
    return b.offset > 0 or not b.dense


def plan_for(plans: Mapping[int, LoadPlan], ld: Load) -> LoadPlan:
    """A load the analysis did not see (a tree built after planning) is checked in full."""
    return plans.get(id(ld), _FULL_CHECK)


def plan_node(node: ComputeNode, buffers: Mapping[str, BufferInfo]) -> NodePlan:
    sums: dict[int, IndexSum] = {}
    indices = [node.store.index]
    for e in walk(node.value):
        if isinstance(e, Load | IndexValue):
            indices.append(e.index)
    for ix in indices:
        const, terms = _split(ix)
        sums[id(ix)] = IndexSum(const, tuple((t, k) for t, k in terms.items() if k != 0))
    counts = Counter(e for e in walk(node.value) if not isinstance(e, Const | Var))
    shared = frozenset(e for e, k in counts.items() if k > 1)
    loads = plan_loads(node, buffers)
    gapped = {
        e.buffer: buffers[e.buffer]
        for e in walk(node.value)
        if isinstance(e, Load) and plan_for(loads, e).elements
    }
    return NodePlan(loads, sums, shared, gapped)


def _split(e: Expr) -> tuple[int, dict[Expr, int]]:
    """e == const + sum(k * term) in exact integer arithmetic; equal terms are merged."""
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value, {}
    if isinstance(e, Unary) and e.op == "neg":
        c, t = _split(e.x)
        return -c, {a: -k for a, k in t.items()}
    if isinstance(e, Binary) and e.op in ("add", "sub"):
        ca, ta = _split(e.a)
        cb, tb = _split(e.b)
        sign = 1 if e.op == "add" else -1
        for a, k in tb.items():
            ta[a] = ta.get(a, 0) + sign * k
        return ca + sign * cb, ta
    if isinstance(e, Binary) and e.op == "mul":
        ca, ta = _split(e.a)
        cb, tb = _split(e.b)
        if not ta:
            return ca * cb, {a: ca * k for a, k in tb.items()}
        if not tb:
            return ca * cb, {a: cb * k for a, k in ta.items()}
    return 0, {e: 1}  # a variable, or a term the split does not look into (`//`, `%`, min, loads)
