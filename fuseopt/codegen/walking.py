"""The row loop of a sliding-window kernel (`Tiling.walk`): the emitter's part that walks a band of
rows and carries values from one row to the next (which values: `codegen.window`).

A program covers XBLOCK points of a row and walks YBLOCK consecutive rows from the band's first
row (`yoffset`). A load whose element another load read one row earlier is a loop-carried
variable, loaded before the loop at the first row; an unrolled reduction whose points fall into
rows of the window carries the rows' partial results instead. At the end of each row every
carried variable takes its value for the next row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from fuseopt.codegen.common import TL_DTYPE, CodegenError
from fuseopt.codegen.values import LoopBlock, Val
from fuseopt.codegen.window import Key, KeyContext, Walk, WindowLoad, load_key, row_groups, value_key
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Load, Reduce

if TYPE_CHECKING:
    from fuseopt.codegen.kernel import KernelEmitter, _NodeCtx
    from fuseopt.codegen.schedule import Placement


class RowWalk:
    def __init__(self, em: KernelEmitter, carry: Mapping[Key, Key]):
        self.em = em
        self.carry = carry  # a load's key -> the key of the load whose previous row it reads
        self.loads: list[WindowLoad] = []  # every load of the row, in emission order
        self.carried: dict[Key, Val] = {}  # carried loads' variables
        self.row_values: dict[Key, Val] = {}  # this row's value of each keyed load
        self.partial_updates: list[tuple[str, Val]] = []  # (carried partial result, next value)
        self.carried_points = 0  # reduction points carried in partial results
        self.first_row: Val | None = None

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
        """Each carried variable takes its value for the next row (its source load's value, or the
        partial result of the row before): every update runs before any update of a variable it
        reads."""
        em = self.em
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

    def carry_var(self, first: Val) -> Val:
        """A loop-carried variable holding `first` before the loop."""
        name = self.em.fresh("win")
        self.em.define(f"{name} = {first.text}", name, [first], level=0)
        return Val(name, first.dtype, first.axes, 1, (name,))

    def counts(self) -> tuple[int, int]:
        """(values a row takes from the row before, values a row needs): loads carried plus
        reduction points carried in partial results, over distinct loads plus those points."""
        loads = len({ld.key for ld in self.loads})
        return len(self.carried) + self.carried_points, loads + self.carried_points

    # -- loads ---------------------------------------------------------------------------------------
    def key_context(self, ctx: _NodeCtx, point: int | None) -> KeyContext:
        """Keys of a node's values (at one point of an unrolled reduction)."""
        consts = {} if point is None else {"r0_index": point}
        walk = Walk("yindex", self.em.t.walk_period)
        return KeyContext(ctx.digits, ctx.ranges, self.em.extents, self.em.flats, walk, consts)

    def load_keys(self, ld: Load, ctx: _NodeCtx) -> tuple[Key | None, Key | None]:
        """A load's key at this row and one row earlier (None: never carried)."""
        if ld.buffer in self.em.launch.stores:
            return None, None
        r = self.em.axis_val.get("r0_")
        kc = self.key_context(ctx, None if r is None or r.const is None else int(r.const))
        conds = tuple(self.em.cond_exprs)
        key = load_key(ld.buffer, ld.index, conds, kc, 0)
        return key, None if key is None else load_key(ld.buffer, ld.index, conds, kc, -1)

    def carried_load(self, ld: Load, ctx: _NodeCtx, key: Key, prev: Key | None, masks: list[Val]) -> Val:
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
        for r in range(em.t.unroll):
            kc = self.key_context(ctx, r)
            now.append(value_key(red.x, kc, 0, opaque))
            before.append(value_key(red.x, kc, -1, opaque))
        return row_groups(now, before)
