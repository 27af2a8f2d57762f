"""The row loop of a sliding-window kernel (`Tiling.walk`): the emitter's part that walks a band of
rows and carries values from one row to the next (which values: `codegen.windows.sliding`).

A program covers XBLOCK points of a row and walks YBLOCK consecutive rows from the band's first
row (`yoffset`). A load whose element another load read one row earlier is a loop-carried
variable, loaded before the loop at the first row; an unrolled reduction whose points fall into
rows of the window carries the rows' partial results instead. A pointwise subexpression whose
loads are all carried (the head of a pooling window's chain of additions) is carried whole: each
row computes it for the next row from the loads it would be carried from, with the same
operations in the same order (so the same rounding), and the loads it alone used are no longer
carried. At the end of each row every carried variable takes its value for the next row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from fuseopt.codegen.common import TL_DTYPE, CodegenError
from fuseopt.codegen.strategies import SlidingWindow
from fuseopt.codegen.values import LoopBlock, NodeCtx, Val
from fuseopt.codegen.windows.sliding import Key, KeyContext, Walk, WindowLoad, load_key, row_groups, value_key
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Cast, Const, Expr, Load, Masked, Reduce, Unary

if TYPE_CHECKING:
    from fuseopt.codegen.reductions import ReductionEmitter
    from fuseopt.codegen.schedule import Placement


class RowWalk:
    def __init__(self, em: ReductionEmitter, carry: Mapping[Key, Key]):
        self.em = em
        self.carry = carry  # a load's key -> the key of the load whose previous row it reads
        self.loads: list[WindowLoad] = []  # every load of the row, in emission order
        self.carried: dict[Key, Val] = {}  # carried loads' variables
        self.row_values: dict[Key, Val] = {}  # this row's value of each keyed load
        self.partial_updates: list[tuple[str, Val]] = []  # (carried partial result, next value)
        self.carried_points = 0  # reduction points carried in partial results
        self.first_row: Val | None = None
        self.prefixes: dict[tuple[str, Expr], Val] = {}  # carried subexpressions' variables
        self.prefix_next: list[tuple[Val, Expr, NodeCtx]] = []  # (variable, next row's expr, node)
        self.plain = False  # emitting a prefix's own operations: no prefix carried inside
        self.leaf_keys: dict[tuple[str, Expr], Key | None] = {}

    # -- the loop ----------------------------------------------------------------------------------
    def prologue(self) -> None:
        em = self.em
        # window_tilings: bands within the grid's y dimension, whole bands only (no row mask)
        assert em.t.grid_2d and "y" not in em.t.masked
        i64 = em.idt == DType.int64
        cast = ".to(tl.int64)" if i64 else ""
        xoff = em.emit(f"tl.program_id(0){cast} * XBLOCK", [], em.idt, name="xoffset")
        em.axis_val["x"] = em.emit(
            "xoffset + tl.arange(0, XBLOCK)", [xoff], em.idt, name="xindex", axes=("x",)
        )
        # A [1] tensor, not a 0-d scalar, like every other value (Triton's interpreter mishandles
        # `&` of a 0-d boolean and a tensor).
        self.first_row = em.emit(
            f"tl.program_id(1){cast} * YBLOCK + tl.zeros([1], {TL_DTYPE[em.idt]})", [], em.idt, name="yoffset"
        )

    def open(self) -> None:
        em = self.em
        assert em.loop is None and self.first_row is not None
        em.loop = LoopBlock("for ywalk in range(YBLOCK):")
        em.caches[1] = {}
        step = Val("ywalk", DType.int32, (), 1, ())
        em.axis_val["y"] = em.emit("yoffset + ywalk", [self.first_row, step], em.idt, name="yindex", axes=())

    def close(self) -> None:
        """Each carried variable takes its value for the next row (its source load's value, the
        partial result of the row before, or a carried subexpression computed for the next row):
        every update runs before any update of a variable it reads."""
        em = self.em
        with self.plain_values():
            for var, nxt, ctx in self.prefix_next:
                self.partial_updates.append((var.text, em.value(nxt, ctx, ())))
            self._load_sources()
        updates: list[tuple[str, Val]] = []
        for key, var in self.carried.items():
            src = self.row_values.get(self.carry[key])
            if src is None:
                raise CodegenError(
                    f"plan kernel {em.launch.plan_kernel!r}: a sliding-window load has no source in the row"
                )
            updates.append((var.text, src))
        updates.extend(self.partial_updates)
        while updates:
            ready = [u for u in updates if not any(u[0] in v.names for _, v in updates)]
            if not ready:
                raise CodegenError(
                    f"plan kernel {em.launch.plan_kernel!r}: sliding-window carries form a cycle"
                )
            name, src = min(ready, key=lambda u: u[0])
            em.effect(f"{name} = {src.text}", [src], level=1)
            updates.remove((name, src))
        assert em.loop is not None
        em.top.append(em.loop)
        em.loop = None
        em.caches[1] = {}

    @contextmanager
    def at_first_row(self) -> Iterator[None]:
        """Values emitted inside use the band's first row (they land before the loop)."""
        em = self.em
        assert self.first_row is not None
        row = em.axis_val["y"]
        em.axis_val["y"] = self.first_row
        try:
            yield
        finally:
            em.axis_val["y"] = row

    def _load_sources(self) -> None:
        """Loads that carried variables take their next value from but that the row no longer
        emits (they were only part of a carried subexpression), emitted in the row."""
        em = self.em
        leaves: dict[Key, tuple[Expr, NodeCtx]] = {}
        while missing := [self.carry[k] for k in self.carried if self.carry[k] not in self.row_values]:
            if not leaves:  # the kernel's loads by key, first node first (only when needed)
                for ctx in em.ctxs.values():
                    for leaf, key in (self._leaves(ctx.p.node.value, ctx, inner=True) or {}).items():
                        leaves.setdefault(key, (leaf, ctx))
            for src in missing:
                if src in leaves:
                    em.value(*leaves[src], ())
                if src not in self.row_values:
                    raise CodegenError(
                        f"plan kernel {em.launch.plan_kernel!r}: a sliding-window load has no source in the row"
                    )

    @contextmanager
    def plain_values(self) -> Iterator[None]:
        """Values emitted inside carry no subexpression of their own."""
        before, self.plain = self.plain, True
        try:
            yield
        finally:
            self.plain = before

    def carry_var(self, first: Val) -> Val:
        """A loop-carried variable holding `first` before the loop."""
        name = self.em.fresh("win")
        self.em.define(f"{name} = {first.text}", name, [first], level=0)
        return Val(name, first.dtype, first.axes, 1, (name,))

    def counts(self) -> tuple[int, int]:
        """(values a row takes from the row before, values a row needs): loads carried plus
        reduction points carried in partial results, over distinct loads plus those points."""
        loads = len({ld.key for ld in self.loads}) + self.carried_points + len(self.prefixes)
        return len(self.carried) + self.carried_points + len(self.prefixes), loads

    # -- loads ---------------------------------------------------------------------------------------
    def key_context(self, ctx: NodeCtx, point: int | None) -> KeyContext:
        """Keys of a node's values (at one point of an unrolled reduction)."""
        consts = {} if point is None else {"r0_index": point}
        assert isinstance(self.em.strategy, SlidingWindow)
        walk = Walk("yindex", self.em.strategy.period)
        return KeyContext(ctx.digits, ctx.ranges, self.em.extents, self.em.flats, walk, consts)

    def load_keys(self, ld: Load, ctx: NodeCtx) -> tuple[Key | None, Key | None]:
        """A load's key at this row and one row earlier (None: never carried)."""
        if ld.buffer in self.em.launch.stores:
            return None, None
        r = self.em.axis_val.get("r0_")
        kc = self.key_context(ctx, None if r is None or r.const is None else int(r.const))
        conds = tuple(self.em.cond_exprs)
        key = load_key(ld.buffer, ld.index, conds, kc, 0)
        return key, None if key is None else load_key(ld.buffer, ld.index, conds, kc, -1)

    def carried_load(self, ld: Load, ctx: NodeCtx, key: Key, prev: Key | None, masks: list[Val]) -> Val:
        """The value of a load that another load of the row before read: a loop-carried variable,
        first loaded before the loop at the band's first row."""
        em = self.em
        self.loads.append(WindowLoad(key, prev))
        hit = self.carried.get(key)
        if hit is None:
            with self.at_first_row():
                conds = tuple(
                    em.materialize(em.coerce(em.value(c, ctx, ()), DType.bool)) for c in em.cond_exprs
                )
                first = em.load(ld, ctx, conds)
            hit = self.carry_var(first)
            self.carried[key] = hit
            if masks:
                em.zero_masked[hit.text] = frozenset(m.text for m in masks)
        self.row_values.setdefault(key, hit)
        return hit

    def loaded(self, key: Key | None, prev: Key | None, out: Val) -> None:
        """A load emitted in the row (not carried)."""
        self.loads.append(WindowLoad(key if key is not None else ("load", out.text), prev))
        if key is not None:
            self.row_values.setdefault(key, out)

    # -- carried subexpressions ----------------------------------------------------------------------
    def prefix(self, e: Expr, ctx: NodeCtx, conds: tuple[Val, ...]) -> Val | None:
        """A pointwise subexpression of the row (outside any mask) whose loads are all carried, as
        one loop-carried variable (None: emit it as usual). Before the loop it takes the
        subexpression at the band's first row; each row then computes it for the next row with
        every load replaced by the load it is carried from (`close`)."""
        em = self.em
        if self.plain or conds or em.cond_exprs or em.unroll or em.loop is None or not isinstance(e, Binary):
            return None
        hit = self.prefixes.get((ctx.p.node.name, e))
        if hit is not None:
            return hit
        leaves = self._leaves(e, ctx, carried=True)
        if leaves is None or len(leaves) < 2:
            return None
        known = self._leaves(ctx.p.node.value, ctx, inner=True) or {}
        by_key = {k: leaf for leaf, k in known.items()}
        mapping = {leaf: by_key.get(self.carry[k]) for leaf, k in leaves.items()}
        if any(src is None for src in mapping.values()):
            return None
        # Not worth it when a load carried outside the subexpression takes its value from one
        # that only the subexpression reads: the row would have to load that one anyway.
        inside = set(leaves.values())
        sources = {self.carry[k] for k in inside}
        for k in set(known.values()) - inside:
            if k in self.carry and self.carry[k] in inside - sources:
                return None
        with self.plain_values(), self.at_first_row():
            first = em.value(e, ctx, ())
        var = self.carry_var(first)
        self.prefixes[(ctx.p.node.name, e)] = var
        self.prefix_next.append((var, _substitute(e, mapping), ctx))
        return var

    def _leaves(
        self, e: Expr, ctx: NodeCtx, *, inner: bool = False, carried: bool = False
    ) -> dict[Expr, Key] | None:
        """The loads of a pointwise expression (a load, or a masked load reading 0 where its
        condition fails) with their keys at this row; None if it holds any other kind of value,
        a load without a key, or (with `carried`) a load that is not carried. With `inner`, every
        such load anywhere inside `e` instead (the loads a carried subexpression can be carried
        from)."""
        out: dict[Expr, Key] = {}
        stack = [e]
        while stack:
            x = stack.pop()
            if isinstance(x, Masked | Load):
                key = self._leaf_key(x, ctx)
                if key is not None and not (carried and key not in self.carry):
                    out[x] = key
                    continue
            if inner or isinstance(x, Binary | Unary | Cast | Const):
                stack.extend(x.children())
            elif not inner:
                return None
        return out

    def _leaf_key(self, x: Masked | Load, ctx: NodeCtx) -> Key | None:
        """A leaf's load key at this row (cached: a chain's leaves are visited once per
        enclosing operation)."""
        cache_key = (ctx.p.node.name, x)
        if cache_key not in self.leaf_keys:
            leaf: Expr = x
            conds: tuple[Expr, ...] = ()
            zero = isinstance(x, Masked) and isinstance(x.other, Const) and x.other.value == 0
            if isinstance(x, Masked) and isinstance(x.body, Load) and zero:
                leaf, conds = x.body, (x.cond,)
            key = None
            if (
                isinstance(leaf, Load)
                and leaf.buffer not in self.em.launch.stores
                and leaf.buffer not in self.em.produced
            ):
                key = load_key(leaf.buffer, leaf.index, conds, self.key_context(ctx, None), 0)
            self.leaf_keys[cache_key] = key
        return self.leaf_keys[cache_key]

    # -- unrolled reductions -----------------------------------------------------------------------
    def unrolled(
        self, p: Placement, combine: str, acc: DType, point_values: Callable[[list[int]], Val]
    ) -> Val | None:
        """The reduction with its window's rows of points carried as partial results (None when
        its points do not fall into such rows): each row of points combined on its own, the rows
        combined oldest first. A reduction's order of combination is unspecified, so this grouping
        is one of its valid orders."""
        groups = self.rows(p)
        if groups is None:
            return None
        em = self.em
        partial = [point_values(groups[0])]
        for g in groups[1:]:
            with self.at_first_row():
                first = point_values(g)
            partial.append(self.carry_var(first))
        for k in range(1, len(partial)):
            self.partial_updates.append((partial[k].text, partial[k - 1]))
        self.carried_points += sum(len(g) for g in groups[1:])
        out = partial[-1]
        for v in reversed(partial[:-1]):
            out = em.emit(combine.format(a=out.text, b=v.text), [out, v], acc)
        return out

    def rows(self, p: Placement) -> list[list[int]] | None:
        """The unrolled reduction's points grouped by rows carried from row to row, or None."""
        em = self.em
        red = p.node.value
        assert isinstance(red, Reduce)
        ctx = em.ctxs[p.node.name]
        opaque = frozenset(em.produced) | frozenset(em.launch.stores)
        now: list[Key | None] = []
        before: list[Key | None] = []
        for r in range(em.unroll):
            kc = self.key_context(ctx, r)
            now.append(value_key(red.x, kc, 0, opaque))
            before.append(value_key(red.x, kc, -1, opaque))
        return row_groups(now, before)


def _substitute(e: Expr, mapping: Mapping[Expr, Expr | None]) -> Expr:
    """`e` with each of its subexpressions found in `mapping` replaced (outermost first)."""
    hit = mapping.get(e)
    if hit is not None:
        return hit
    kids = e.children()
    return e.with_children(tuple(_substitute(k, mapping) for k in kids)) if kids else e
