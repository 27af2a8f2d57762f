"""One compute launch -> the source of one `@triton.jit` kernel.

Every value is a named temporary (`tmpN`, counters, never hashes) CSE'd by its right-hand side;
a statement lives in the outermost scope where its operands exist (loads that vary only along x
are hoisted out of a looped reduction's r loop), and statements that feed no store are dropped
at the end. Fused reads are replaced by the producer's value rounded through the buffer's dtype
(what a store and a reload would give); arithmetic runs in float32 for float16/bfloat16.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from fuseopt.analysis.access_match import FusedReadMismatch, match_read
from fuseopt.codegen.common import INT32_MAX, INT_RANGE, TL_DTYPE, CodegenError, wrap_int
from fuseopt.codegen.indexing import Digit, Flat, digit_of, normal_digit, unflatten
from fuseopt.codegen.layout import LINE_LENGTH, truncate_comment, wrap
from fuseopt.codegen.rules import (
    INT_DIV_BY_LITERAL,
    KERNEL_NAME_OF,
    POW_BY_CONST,
    binary_rule,
    divisor_reciprocal,
    reduction_rule,
    unary_rule,
)
from fuseopt.codegen.schedule import ComputeLaunch, Placement, axes_base, digits_of
from fuseopt.codegen.source_text import comment_text, ident, python_name
from fuseopt.codegen.tiling import LaunchConfig, Tiling
from fuseopt.codegen.values import Literal, LoopBlock, Stmt, Val
from fuseopt.codegen.walking import RowWalk
from fuseopt.codegen.window import Key, carry_plan, index_ops
from fuseopt.ir.bounds import index_magnitude, interval, linear_form
from fuseopt.ir.dtypes import DType, compute_dtype, promote
from fuseopt.ir.expr import (
    COMPARE_OPS,
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
    loads,
    to_text,
)
from fuseopt.ir.fold import fold_index
from fuseopt.ir.graph import Graph
from fuseopt.ir.typecheck import BINARY_RESULT, UNARY_RESULT

# Helpers that call tensor methods on their operands: Python literals must be materialised first.
_TENSOR_HELPERS = ("_pow(", "_ipow(", "_atan2(", "_int_floordiv(", "_int_remainder(", "_int_fmod(")


@dataclass(frozen=True)
class EmittedKernel:
    name: str
    source: str
    args: tuple[str, ...]  # buffer names, in parameter order
    numels: tuple[tuple[str, int], ...]  # (parameter, value)
    tiling: Tiling
    workspaces: tuple[tuple[str, DType, int], ...] = ()  # (name, dtype, elements) of a split's partials


def _fmt_float(v: float) -> str:
    if v != v:
        return 'float("nan")'
    if v in (float("inf"), float("-inf")):
        return 'float("inf")' if v > 0 else 'float("-inf")'
    return repr(float(v))


def literal_text(value: Literal, dtype: DType) -> str:
    if dtype.is_float:
        return _fmt_float(float(value))
    return str(wrap_int(int(value), dtype))


def _is_weak(e: Expr) -> bool:
    """Mirrors the type checker: literals, and same-dtype ops of literals, are weak."""
    if isinstance(e, Const):
        return True
    if isinstance(e, Unary):
        return UNARY_RESULT.get(e.op) == "same" and _is_weak(e.x)
    if isinstance(e, Binary):
        return BINARY_RESULT.get(e.op) == "promote" and _is_weak(e.a) and _is_weak(e.b)
    if isinstance(e, Where):
        return _is_weak(e.a) and _is_weak(e.b)
    return False


def _index_like(e: Expr, ranges: Mapping[str, int]) -> bool:
    """Whether `e` is integer index arithmetic of loop variables (no loads) whose every
    intermediate fits int32 (not just its result: `(i + 2**31 - 8) // 2**28` does not)."""
    if not index_ops(e, ranges):
        return False
    m = index_magnitude(e.index if isinstance(e, IndexValue) else e, ranges)
    return m is not None and m <= INT32_MAX


def _int32_exact(v: Val) -> bool:
    if v.literal:
        return type(v.const) is int and -INT32_MAX <= v.const <= INT32_MAX
    return v.dtype == DType.int32


def kernel_ops(placements: Sequence[Placement]) -> list[str]:
    """Op names of the nodes' values in evaluation order (indices excluded), for the kernel's name."""
    ops: dict[str, None] = {}

    def visit(e: Expr) -> None:
        if isinstance(e, Load | Var | Const):
            return
        if isinstance(e, IndexValue):
            ops["index"] = None
            return
        for c in e.children():
            visit(c)
        if isinstance(e, Binary | Unary | Reduce):
            ops[KERNEL_NAME_OF.get(e.op, e.op)] = None
        elif isinstance(e, Where):
            ops["where"] = None
        elif isinstance(e, Cast):
            ops["to_dtype"] = None
        elif isinstance(e, Masked):
            ops["masked"] = None

    for p in placements:
        visit(p.node.value)
    return list(ops)


def kernel_name(tiling: Tiling, position: int, max_ops: int = 5) -> str:
    # An unrolled reduction is a pointwise tile (as Inductor's pooling kernels are).
    prefix = (
        "poi" if tiling.launch.kind == "pointwise" or tiling.unroll else "per" if tiling.persistent else "red"
    )
    ops = kernel_ops(tiling.launch.placements)[:max_ops]
    return f"triton_{prefix}_fused_{'_'.join(ops) or 'copy'}_{position}"


class _NodeCtx:
    def __init__(self, p: Placement, digits: dict[str, Digit | None]):
        self.p = p
        self.digits = digits
        self.ranges = p.node.var_sizes


def workspace_names(graph: Graph, launch: ComputeLaunch) -> dict[str, str]:
    """Names of a split reduction's partial-result buffers, one per reduction node (never a
    graph buffer's name: they become kernel parameters and locals of `call`)."""
    taken = {b.name for b in graph.buffers}
    out: dict[str, str] = {}
    for p in launch.placements:
        if p.role == "reduction":
            name = f"ws_{ident(p.node.name)}"
            while name in taken:
                name += "_"
            taken.add(name)
            out[p.node.name] = name
    return out


class KernelEmitter:
    """Emits one kernel; `emit()` returns its source and call signature.

    A split reduction is two kernels: part "partial" runs the r loop over one chunk of r per
    program_id(1) (the loop's pointwise nodes store their outputs as usual) and stores each
    reduction's partial result; part "finish" combines the chunks' partials with the same
    reduction and runs the stores and epilogue that follow the loop."""

    def __init__(self, graph: Graph, tiling: Tiling, name: str, carry: Mapping[Key, Key] | None = None):
        self.graph = graph
        self.t = tiling
        self.part = tiling.part
        self.workspaces = workspace_names(graph, tiling.launch) if tiling.part != "whole" else {}
        self.ws_dtypes: dict[str, DType] = {}
        self.stored: dict[str, None] = {}
        self.launch = tiling.launch
        self.name = name
        self.axes = {a.name: a for a in self.launch.axes}
        if tiling.walk or tiling.cells:
            # rows walked one at a time, or a register window's cells: yindex is a scalar
            self.dims: tuple[str, ...] = ("x",)
        elif self.launch.kind == "pointwise" or tiling.unroll:
            self.dims = ("y", "x") if "y" in self.axes else ("x",)
        else:
            self.dims = ("x", "r0_")
        self.idt = tiling.index_dtype
        self.top: list[Stmt | LoopBlock] = []
        self.loop: LoopBlock | None = None
        self.caches: list[dict[str, Val]] = [{}, {}]
        self.counters: dict[str, int] = {}
        self.produced = self.launch.producer()
        self.order = {p.node.name: i for i, p in enumerate(self.launch.placements)}
        self.results: dict[str, Val] = {}
        self.values: dict[tuple[object, ...], Val] = {}  # fused producers' values (node_value)
        self.pending: list[Callable[[], None]] = []
        self.axis_val: dict[str, Val] = {}
        self.mask_val: dict[str, Val] = {}
        self.loads: dict[str, None] = {}
        # a register window's loads: each cell's (loads of distinct elements along x), and all
        self.cell_loads: list[dict[str, None]] = []
        self.window_loads: dict[str, None] = {}
        # A register window's program (cells_prologue): the chunk's first column, program_id(1)
        # and, where a period's last band overlaps, the band's first row within its period.
        self.cells_col: Val | None = None
        self.cells_ypid: Val | None = None
        self.cells_yrow: Val | None = None
        self.streams = False  # loads marked evict_first (set by body: see streaming)
        self.narrow: dict[str, Val] = {}  # float32 temporary -> the float16/bfloat16 value it widens
        self.zero_masked: dict[str, frozenset[str]] = {}  # load (widened or not) -> its mask terms
        self.extents = {axes_base((a.name,)): a.numel for a in self.launch.axes}
        sizes = {a.name: a.numel for a in self.launch.axes}
        if tiling.unroll:
            sizes["r0_"] = tiling.unroll  # digits of the reduce loops; bound to constants per point
        self.ctxs = {p.node.name: _NodeCtx(p, digits_of(p, sizes)) for p in self.launch.placements}
        self.cond_exprs: list[Expr] = []  # conditions of the enclosing masked values
        # a sliding window's row loop (`codegen.walking`), with the loads it carries
        self.walk = RowWalk(self, carry or {}) if tiling.walk else None
        self.flats: dict[str, Flat] = {}
        for p in self.launch.placements:
            for seg in p.segments:
                if len(seg.axes) > 1:
                    outer, inner = self.axes[seg.axes[0]], self.axes[seg.axes[-1]]
                    self.extents[axes_base(seg.axes)] = outer.numel * inner.numel
                    self.flats[axes_base(seg.axes)] = Flat(outer.index, inner.index, inner.numel)

    # -- statements ---------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        return f"{prefix}{n}"

    def _place(self, stmt: Stmt, level: int) -> None:
        if level >= 1:
            assert self.loop is not None
            self.loop.body.append(stmt)
        else:
            self.top.append(stmt)

    def emit(
        self,
        rhs: str,
        deps: Sequence[Val],
        dtype: DType,
        *,
        prefix: str = "tmp",
        name: str | None = None,
        axes: tuple[str, ...] | None = None,
        level: int | None = None,
    ) -> Val:
        lvl = max((d.level for d in deps), default=0) if level is None else level
        hit = self.caches[lvl].get(rhs)
        if hit is not None:
            return hit
        out = name or self.fresh(prefix)
        ax = self.union(*(d.axes for d in deps)) if axes is None else axes
        self._place(Stmt(f"{out} = {rhs}", out, self.uses(deps)), lvl)
        v = Val(out, dtype, ax, lvl, (out,))
        self.caches[lvl][rhs] = v
        return v

    def effect(self, text: str, deps: Sequence[Val], level: int | None = None) -> None:
        lvl = max((d.level for d in deps), default=0) if level is None else level
        self._place(Stmt(text, None, self.uses(deps), effect=True), lvl)

    def define(self, text: str, name: str, deps: Sequence[Val], level: int = 0) -> None:
        """A statement defining `name` that is not a plain `name = rhs` (tuple unpacking, ...)."""
        self._place(Stmt(text, name, self.uses(deps)), level)

    @staticmethod
    def uses(deps: Sequence[Val]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for d in deps for n in d.names))

    def union(self, *axes: tuple[str, ...]) -> tuple[str, ...]:
        have = {a for ax in axes for a in ax}
        return tuple(a for a in self.dims if a in have)

    def shape(self, axes: tuple[str, ...]) -> str:
        return "[" + ", ".join(self.axes[d].block if d in axes else "1" for d in self.dims) + "]"

    # -- literals and conversions -------------------------------------------------------------------
    def materialize(self, v: Val, dtype: DType | None = None) -> Val:
        if not v.literal:
            return v
        dt = dtype or v.dtype
        assert v.const is not None
        return self.emit(f"tl.full({self.shape(())}, {literal_text(v.const, dt)}, {TL_DTYPE[dt]})", [], dt)

    def coerce(self, v: Val, dtype: DType) -> Val:
        """`v` as a Triton value of `dtype` (a literal stays a weak Python literal where Triton's
        own promotion gives exactly `dtype`)."""
        if v.literal:
            assert v.const is not None
            if dtype in (DType.float32, DType.int32, DType.int64):
                value: Literal = float(v.const) if dtype.is_float else wrap_int(int(v.const), dtype)
                return Val(literal_text(value, dtype), dtype, const=value)
            return self.materialize(v, dtype)
        if v.dtype == dtype:
            return v
        if dtype == DType.bool:
            return self.emit(f"{v.text} != 0", [v], dtype)
        return self.emit(f"{v.text}.to({TL_DTYPE[dtype]})", [v], dtype)

    def to_storage(self, v: Val, dtype: DType) -> Val:
        """The value as stored in a buffer of `dtype` (rounded for float16/bfloat16)."""
        if v.literal:
            return self.materialize(v, dtype)
        if v.dtype == dtype:
            return v
        narrow = self.narrow.get(v.text)
        if narrow is not None and narrow.dtype == dtype:
            return narrow
        if dtype == DType.bool:
            return self.emit(f"{v.text} != 0", [v], dtype)
        if dtype.is_low_precision and v.dtype != DType.float32:
            v = self.emit(f"{v.text}.to(tl.float32)", [v], DType.float32)
        if dtype == DType.bfloat16:
            return self.emit(f"_to_bf16({v.text})", [v], dtype)
        return self.emit(f"{v.text}.to({TL_DTYPE[dtype]})", [v], dtype)

    def from_storage(self, v: Val) -> Val:
        cdt = compute_dtype(v.dtype)
        if cdt == v.dtype:
            return v
        wide = self.emit(f"{v.text}.to({TL_DTYPE[cdt]})", [v], cdt)
        self.narrow[wide.text] = v
        return wide

    # -- kernel axes -------------------------------------------------------------------------------
    def prologue(self) -> None:
        i64 = self.idt == DType.int64
        pid = "tl.program_id(0).to(tl.int64)" if i64 else "tl.program_id(0)"
        if self.walk is not None:
            self.walk.prologue()
        elif self.t.cells:
            self.cells_prologue()
        elif self.dims == ("y", "x") and self.t.grid_2d:
            cast = ".to(tl.int64)" if i64 else ""
            xoff = self.emit(f"tl.program_id(0){cast} * XBLOCK", [], self.idt, name="xoffset")
            yoff = self.emit(f"tl.program_id(1){cast} * YBLOCK", [], self.idt, name="yoffset")
            self.axis_val["y"] = self.emit(
                "yoffset + tl.arange(0, YBLOCK)[:, None]", [yoff], self.idt, name="yindex", axes=("y",)
            )
            self.axis_val["x"] = self.emit(
                "xoffset + tl.arange(0, XBLOCK)[None, :]", [xoff], self.idt, name="xindex", axes=("x",)
            )
        elif self.dims == ("y", "x"):
            p = self.emit("tl.program_id(0)", [], DType.int32, name="pid")
            tiles = self.emit("tl.cdiv(xnumel, XBLOCK)", [], DType.int32, name="xtiles")
            ytile = "(pid // xtiles).to(tl.int64)" if i64 else "(pid // xtiles)"
            xtile = "(pid % xtiles).to(tl.int64)" if i64 else "(pid % xtiles)"
            yoff = self.emit(f"{ytile} * YBLOCK", [p, tiles], self.idt, name="yoffset")
            xoff = self.emit(f"{xtile} * XBLOCK", [p, tiles], self.idt, name="xoffset")
            self.axis_val["y"] = self.emit(
                "yoffset + tl.arange(0, YBLOCK)[:, None]", [yoff], self.idt, name="yindex", axes=("y",)
            )
            self.axis_val["x"] = self.emit(
                "xoffset + tl.arange(0, XBLOCK)[None, :]", [xoff], self.idt, name="xindex", axes=("x",)
            )
        else:
            xoff = self.emit(f"{pid} * XBLOCK", [], self.idt, name="xoffset")
            rng = "tl.arange(0, XBLOCK)" + ("[:, None]" if len(self.dims) == 2 else "")
            self.axis_val["x"] = self.emit(f"xoffset + {rng}", [xoff], self.idt, name="xindex", axes=("x",))
        if self.part == "partial":
            self.top.append(Stmt("rsplit = tl.program_id(1)", "rsplit", (), effect=True))
        for a in self.dims:
            if a != "r0_":
                self._mask(a)
        if "r0_" in self.axes and self.t.persistent:
            self._r_axis("tl.arange(0, R0_BLOCK)[None, :]" + (".to(tl.int64)" if i64 else ""), [])

    def cells_prologue(self) -> None:
        """A register window's program: program_id(0) picks a chunk of `cols` columns and an
        XBLOCK-point slice of a column (xindex: the slice in the chunk's first column),
        program_id(1) a band of YBLOCK rows (yoffset: its first row); cells shift both. Where
        `cols` does not divide a row's columns (or `rows` the period of the rows), a row's last
        chunk (a period's last band) ends at its last column (row) and overlaps the one before:
        those points are computed and stored twice, the same values (a point's value depends only
        on the kernel's inputs: buffers of earlier kernels, never written by this one)."""
        c = self.t.cells
        assert c is not None
        over_rows, over_cols = c.overlap
        cast = ".to(tl.int64)" if self.idt == DType.int64 else ""
        one = f"tl.zeros([1], {TL_DTYPE[self.idt]})"
        pid = self.emit(f"tl.program_id(0){cast}", [], self.idt, name="pid")
        first = f"pid // ({c.col} // XBLOCK) * {c.cols}"
        if over_cols:
            first = f"tl.minimum({first}, {c.ncols - c.cols})"
        col0 = self.emit(first, [pid], self.idt, name="xcol0")
        xoff = self.emit(
            f"xcol0 * {c.col} + pid % ({c.col} // XBLOCK) * XBLOCK", [pid, col0], self.idt, name="xoffset"
        )
        self.axis_val["x"] = self.emit(
            "xoffset + tl.arange(0, XBLOCK)", [xoff], self.idt, name="xindex", axes=("x",)
        )
        # Digits of whole columns and rows are the same for every point of a cell, so they run on
        # [1] tensors (a 0-d scalar would trip the interpreter, see RowWalk.prologue), once, not
        # per point, and from the program's ids rather than from its flat offsets: the compiler
        # then sees a column as `chunk * cols` and a row as `band * rows`, and folds the bounds
        # checks of a stencil's cells into a few predicates (explore rounds 34-39).
        self.cells_col = self.emit(f"xcol0 + {one}", [col0], self.idt, name="xcol")
        self.cells_ypid = self.emit(f"tl.program_id(1){cast} + {one}", [], self.idt, name="ypid")
        if over_rows:
            self.cells_yrow = self.emit(
                f"tl.minimum(ypid % {c.bands} * YBLOCK, {c.period - c.rows})",
                [self.cells_ypid],
                self.idt,
                name="yrow",
            )
            first, deps = f"ypid // {c.bands} * {c.period} + yrow", [self.cells_ypid, self.cells_yrow]
        else:
            first, deps = "ypid * YBLOCK", [self.cells_ypid]
        self.axis_val["y"] = self.emit(first, deps, self.idt, name="yoffset")

    def cells_body(self) -> None:
        """Every cell of a register window, row by row: the kernel's nodes at the cell's row and
        column (loads that cells share are emitted once, by the emitter's CSE)."""
        c = self.t.cells
        assert c is not None
        x0, y0 = self.axis_val["x"], self.axis_val["y"]
        for t in range(c.rows):
            start = len(self.top)
            for s in range(c.cols):
                self.axis_val["y"], self.axis_val["x"] = y0.shifted(t), x0.shifted(s * c.col)
                self.results = {}  # a reduction's result is the cell's own
                self.cell_loads.append({})
                for p in self.launch.placements:
                    if p.role == "reduction":
                        self.reduction(p)
                    else:
                        self.pointwise(p)
            # The row's stores after all of its loads: a load cannot move above a store (the
            # buffers may alias), so interleaved they would keep one cell's loads in flight at a
            # time (explore round 36).
            row = self.top[start:]
            stores: list[Stmt | LoopBlock] = [it for it in row if isinstance(it, Stmt) and it.effect]
            self.top[start:] = [it for it in row if not (isinstance(it, Stmt) and it.effect)] + stores
        self.axis_val["x"], self.axis_val["y"] = x0, y0

    def _mask(self, a: str) -> None:
        if a in self.t.masked:
            ax = self.axes[a]
            self.mask_val[a] = self.emit(
                f"{ax.index} < {ax.numel_arg}", [self.axis_val[a]], DType.bool, name=ax.mask
            )

    def _r_axis(self, rhs: str, deps: list[Val]) -> None:
        self.axis_val["r0_"] = self.emit(rhs, deps, self.idt, name="r0_index", axes=("r0_",))
        self._mask("r0_")

    def open_loop(self) -> None:
        assert self.loop is None
        if self.part == "partial":
            chunk = self.launch.axes[1].numel // self.t.split
            header = f"for r0_offset in range(rsplit * {chunk}, (rsplit + 1) * {chunk}, R0_BLOCK):"
        else:
            header = "for r0_offset in range(0, r0_numel, R0_BLOCK):"
        self.loop = LoopBlock(header)
        self.caches[1] = {}
        cast = ".to(tl.int64)" if self.idt == DType.int64 else ""
        base = self.emit(
            f"tl.arange(0, R0_BLOCK)[None, :]{cast}", [], self.idt, name="r0_base", axes=("r0_",)
        )
        offset = Val("r0_offset", DType.int32, (), 1, ())
        self._r_axis("r0_offset + r0_base", [base, offset])

    def close_loop(self) -> None:
        assert self.loop is not None
        self.top.append(self.loop)
        self.loop = None
        self.caches[1] = {}
        self.axis_val.pop("r0_", None)
        self.mask_val.pop("r0_", None)
        pending, self.pending = self.pending, []
        for fn in pending:
            fn()

    def base_val(self, base: str) -> Val:
        if base == "r0_index" and self.t.unroll:
            return self.axis_val["r0_"]  # the unrolled reduction's current point, a literal
        for a in self.axes:
            if base == self.axes[a].index and a in self.axis_val:
                return self.axis_val[a]
        # A segment flattened over several axes (no loop boundary at the split).
        names = base.removeprefix("flat_").split("_")
        axes = [a for a in self.axes if a.rstrip("_") in names]
        inner = self.axes[axes[-1]]
        outer, k_outer = self.axis_val[axes[0]].rooted()
        ival, k_inner = self.axis_val[inner.name].rooted()
        flat = self.emit(f"{outer.text} * {inner.numel} + {ival.text}", [outer, ival], self.idt, name=base)
        return flat.shifted(k_outer * inner.numel + k_inner)

    def var(self, ctx: _NodeCtx, name: str) -> Val:
        d = ctx.digits[name]
        if d is None:
            return Val("0", self.idt, const=0)
        return self.digit_val(d)

    def digit_val(self, d: Digit) -> Val:
        """The digit `d` of its base axis' value: a constant where the base is one, the base
        itself for the whole index, a register window's form where it has one, else computed."""
        base = self.base_val(d.base)
        if base.literal:
            assert base.const is not None
            q = int(base.const) // d.div
            q = q if d.mod is None else q % d.mod
            return Val(str(q), self.idt, const=q)
        if d.div == 1 and d.mod is None:
            return base
        if self.t.cells and (cell := self.cell_digit(d, base)) is not None:
            return cell
        return self.emit(_digit_text(d, base.text), [base], self.idt, prefix=self._digit_prefix(d.base, base))

    def cell_digit(self, d: Digit, base: Val) -> Val | None:
        """A digit of a register window cell's axis value (`root + k`): the digit at the program's
        base (from its ids: `cells_prologue`) plus a constant where that is exact (see
        `codegen.cells`); None where it is not (`digit_val` then computes it from `root + k`)."""
        root, k = base.rooted()
        c = self.t.cells
        assert c is not None and self.cells_ypid is not None and self.cells_col is not None
        over_rows, _ = c.overlap
        found: tuple[str, list[Val], int] | None = None  # the base's digit, its deps, the shift
        ypid = self.cells_ypid
        if d.base == self.axes["y"].index:  # a band's first row: ypid * rows, or within a period
            unit = c.period if over_rows else c.rows  # a band stays within a multiple of it
            if d.div == 1 and d.mod is not None and d.mod % unit == 0:
                if not over_rows:
                    found = (f"ypid % {d.mod // c.rows} * {c.rows}", [ypid], k)
                else:
                    assert self.cells_yrow is not None
                    found = (
                        f"ypid // {c.bands} % {d.mod // c.period} * {c.period} + yrow",
                        [ypid, self.cells_yrow],
                        k,
                    )
            elif d.div % unit == 0:
                q = d.div // c.rows if not over_rows else c.bands * (d.div // c.period)
                found = (f"ypid // {q}" + ("" if d.mod is None else f" % {d.mod}"), [ypid], 0)
        elif d.base == self.axes["x"].index:  # a chunk's first column, plus a slice of it
            if d.mod is not None and c.col % (d.div * d.mod) == 0:  # within a column
                found = (_digit_text(d, root.text), [root], 0)
            elif d.div == c.col and (d.mod is None or d.mod >= c.ncols):  # the column
                return self.cells_col.shifted(k // c.col)
        if found is None:
            return None
        text, deps, shift = found
        rd = self.emit(text, deps, self.idt, prefix=self._digit_prefix(d.base, root))
        return rd.shifted(shift)

    def _digit_prefix(self, base_name: str, base: Val) -> str:
        if base_name == "yindex":
            return "y"
        return base.axes[0] if len(base.axes) == 1 else "x"

    # -- index expressions --------------------------------------------------------------------------
    def index(self, e: Expr, ctx: _NodeCtx, conds: tuple[Val, ...]) -> Val:
        """An integer index over the node's loop variables as an expression text (not a statement)."""
        f = linear_form(e)
        const = f.const
        terms: list[tuple[int, Val]] = []
        for atom, k in f.coeffs:
            a = self.index_atom(atom, ctx, conds)
            if a.const is not None:
                const += k * int(a.const)
            else:
                a, shift = a.rooted()  # a register window cell's offset, folded
                const += k * shift
                terms.append((k, a))
        if not terms:
            return Val(str(const), self.idt, const=const)
        text = ""
        for k, a in terms:
            term = a.text if k in (1, -1) else f"{abs(k)} * {_paren(a.text)}"
            if not text:
                text = term if k > 0 else f"-{_paren(term)}"
            else:
                text += f" {'+' if k > 0 else '-'} {term}"
        deps = [a for _, a in terms]
        out = Val(
            text, self.idt, self.union(*(d.axes for d in deps)), max(d.level for d in deps), self.uses(deps)
        )
        if self.t.cells:  # the constant kept apart: a cell's address is its base pointer + it
            return out.shifted(const)
        if const:
            text += f" {'+' if const > 0 else '-'} {abs(const)}"
        return replace(out, text=text)

    def index_atom(self, atom: Expr, ctx: _NodeCtx, conds: tuple[Val, ...]) -> Val:
        if isinstance(atom, Var):
            return self.var(ctx, atom.name)
        if isinstance(atom, IndexValue):  # index(e) inside integer arithmetic is e itself
            return self.index(atom.index, ctx, conds)
        if isinstance(atom, Load):
            v = self.load(atom, ctx, conds)
            return (
                v if v.dtype == self.idt else self.emit(f"{v.text}.to({TL_DTYPE[self.idt]})", [v], self.idt)
            )
        if isinstance(atom, Binary) and atom.op in ("floordiv", "mod") and isinstance(atom.b, Const):
            digit = self.digit_atom(atom, ctx)
            if digit is not None:
                return digit
            c = int(atom.b.value)
            a = self.index(atom.a, ctx, conds)
            if a.literal:
                assert a.const is not None
                q = int(a.const) // c if atom.op == "floordiv" else int(a.const) % c
                return Val(str(q), self.idt, const=q)
            r = interval(atom.a, ctx.ranges)
            if r is not None and r[0] >= 0:
                sym = "//" if atom.op == "floordiv" else "%"
                text = f"{_paren(a.text)} {sym} {c}"
            else:
                fn = "_floordiv_int" if atom.op == "floordiv" else "_remainder"
                text = f"{fn}({a.text}, {c})"
            return Val(text, self.idt, a.axes, a.level, a.names)
        if isinstance(atom, Binary) and atom.op in ("mul", "minimum", "maximum"):
            a, b = self.index(atom.a, ctx, conds), self.index(atom.b, ctx, conds)
            if atom.op == "mul":
                text = f"{_paren(a.text)} * {_paren(b.text)}"
            else:
                fn = "tl.minimum" if atom.op == "minimum" else "tl.maximum"
                if a.literal and b.literal:
                    assert a.const is not None and b.const is not None
                    m = (min if atom.op == "minimum" else max)(int(a.const), int(b.const))
                    return Val(str(m), self.idt, const=m)
                text = f"{fn}({a.text}, {b.text})"
            deps = [d for d in (a, b) if not d.literal]
            return Val(text, self.idt, self.union(a.axes, b.axes), max(a.level, b.level), self.uses(deps))
        raise CodegenError(f"node {ctx.p.node.name!r}: cannot emit index expression {to_text(atom)!r}")

    def digit_atom(self, atom: Expr, ctx: _NodeCtx) -> Val | None:
        """`v // c` or `v % c` of a loop variable as a digit of one tile axis: a digit of a flat
        index that falls on one side of the (y, x) split is computed on that axis alone (a
        [YBLOCK, 1] column instead of the whole tile: `(y * 192 + x) // 6720` is `y // 35`)."""
        d = digit_of(atom, ctx.digits)
        if d is None:
            return None
        parts = unflatten(d, self.flats)
        if len(parts) != 1 or parts[0][1] != 1:
            return None
        d = normal_digit(parts[0][0], self.extents)
        if d.base.startswith("flat_"):
            return None
        return self.digit_val(d)

    # -- loads ----------------------------------------------------------------------------------------
    def ptr(self, buffer: str) -> str:
        return python_name(f"{buffer}_ptr")

    def load(self, ld: Load, ctx: _NodeCtx, conds: tuple[Val, ...]) -> Val:
        if ld.buffer in self.produced:
            return self.fused_read(ld, ctx)
        self.loads[ld.buffer] = None
        idx = self.index(ld.index, ctx, conds)
        buf = self.graph.buffer(ld.buffer)
        mask_axes = self.union(idx.axes, *(c.axes for c in conds))
        masks = [self.mask_val[a] for a in mask_axes if a in self.mask_val] + list(conds)
        walk = self.walk if self.loop is not None and max(d.level for d in (idx, *masks)) else None
        key = prev = None
        if walk is not None:  # a load of the row: maybe what another load read a row earlier
            key, prev = walk.load_keys(ld, ctx)
            if key is not None and key in walk.carry:
                return walk.carried_load(ld, ctx, key, prev, masks)
        addr = self.address(ld.buffer, idx, mask_axes)
        args = addr
        if masks:
            other = "0.0" if buf.dtype.is_float else "0"
            args += f", {' & '.join(m.text for m in masks)}, other={other}"
        if self.t.transposed:
            # A transposed 2D tile: Inductor's choice for these loads, and faster on apbt (commit 0c70975).
            args += ', eviction_policy="evict_last"'
        elif self.streams and all(a in idx.axes for a in self.dims):
            # Data read once, a distinct element at every point of the tile, by a reduction that
            # writes only its results: the first lines the L2 replaces, so that what it holds
            # stays: faster for every such kernel tried, slower for every kernel that also writes
            # a point's output (explore rounds 29-30, benchmarks/results/README.md, History).
            args += ', eviction_policy="evict_first"'
        rhs = f"tl.load({args})"
        cdt = compute_dtype(buf.dtype)
        deps = [idx, *masks]
        axes = self.union(idx.axes, mask_axes)
        if cdt == buf.dtype:
            out = self.emit(rhs, deps, cdt, axes=axes)
        else:
            indent = 8 if max(d.level for d in deps) else 4
            if indent + len("tmp000 = ") + len(rhs) + len(".to(tl.float32)") <= LINE_LENGTH:
                out = self.emit(f"{rhs}.to({TL_DTYPE[cdt]})", deps, cdt, axes=axes)
            else:
                # Too long for one line: load, then widen (a chained call would wrap awkwardly).
                out = self.from_storage(self.emit(rhs, deps, buf.dtype, axes=axes))
        if masks:
            self.zero_masked[out.text] = frozenset(m.text for m in masks)
        if walk is not None:
            walk.loaded(key, prev, out)
        if self.t.cells and "x" in axes:
            self.cell_loads[-1][rhs] = None
            self.window_loads[rhs] = None
        return out

    def address(self, buffer: str, idx: Val, axes: tuple[str, ...]) -> str:
        """`ptr + index`, widened to `axes` when the index alone has fewer (so that the pointer
        carries the shape of its mask or value); a one-element access is a [1] tensor, never a
        0-d scalar, like every other value."""
        text = idx.text
        target = self.union(idx.axes, axes)
        root, offset = idx.rooted()
        if offset and idx.axes and not (set(target) - set(idx.axes)):
            # A register window cell: the pointer to the cell's base (one per distinct base, kept by
            # the compiler), then a constant it folds into the access's immediate offset. Written
            # `ptr + (base + k)` the 32-bit sum is recomputed and widened at every load instead
            # (explore round 36).
            sign = "+" if offset > 0 else "-"
            return f"{self.ptr(buffer)} + {_paren(root.text)} {sign} {abs(offset)}"
        if set(target) - set(idx.axes) or not idx.axes:
            shape, dt = self.shape(target), TL_DTYPE[self.idt]
            text = (
                f"tl.full({shape}, {text}, {dt})"
                if idx.literal
                else f"{_paren(text)} + tl.zeros({shape}, {dt})"
            )
        return f"{self.ptr(buffer)} + {_paren(text)}"

    def fused_read(self, ld: Load, ctx: _NodeCtx) -> Val:
        """The producer's value at this point (the planner's check, `match_read`, made sure the
        load reads exactly the element it writes here: a failure is a planner bug)."""
        p = self.produced[ld.buffer]
        m = match_read(p.node, ld, ctx.p.node, self.launch.space)
        if not m.ok:
            raise FusedReadMismatch(
                f"plan kernel {self.launch.plan_kernel!r}: {ctx.p.node.name!r} reads {ld.buffer}"
                f"[{to_text(ld.index)}], which is not the element {p.node.name!r} writes at the same point "
                f"({ld.buffer}[{to_text(p.node.store.index)}]): {m.reason}; the planner should not have "
                "fused them (a bug in fuseopt)"
            )
        v = self.node_value(p)
        return self.from_storage(self.to_storage(v, self.graph.buffer(ld.buffer).dtype))

    def node_value(self, p: Placement) -> Val:
        """A fused producer's value, computed once per point of emission and reused by every read
        (re-expanding it at each read is exponential in a chain of nodes reading the two before).

        A point of emission is all that can change the statements a value becomes: the axis
        values (a register window's cell, an unrolled reduction's point, a sliding window's first
        row), the loop being emitted (its statements live only there) and the sliding window's
        mode. The masks around the read are not: the producer's value is the same everywhere (its
        loads are its own, unmasked by the reader's condition), so it is computed outside them."""
        if p.role == "reduction":
            res = self.results.get(p.node.name)
            if res is None:
                raise FusedReadMismatch(
                    f"plan kernel {self.launch.plan_kernel!r}: the result of reduction {p.node.name!r} is "
                    "read before the reduction finishes (a bug in fuseopt's planner)"
                )
            return res
        key = (
            p.node.name,
            tuple((a, v.text, v.const) for a, v in sorted(self.axis_val.items())),
            id(self.loop),
            None if self.walk is None else self.walk.plain,
        )
        hit = self.values.get(key)
        if hit is None:
            outer, self.cond_exprs = self.cond_exprs, []
            try:
                hit = self.values[key] = self.value(p.node.value, self.ctxs[p.node.name], ())
            finally:
                self.cond_exprs = outer
        return hit

    # -- values -----------------------------------------------------------------------------------------
    def value(self, e: Expr, ctx: _NodeCtx, conds: tuple[Val, ...]) -> Val:
        assert e.dtype is not None
        if isinstance(e, Const):
            return Val(literal_text(e.value, e.dtype), e.dtype, const=e.value)
        if self.walk is not None and isinstance(e, Binary):
            carried = self.walk.prefix(e, ctx, conds)
            if carried is not None:
                return carried
        if isinstance(e, Load):
            return self.load(e, ctx, conds)
        if isinstance(e, IndexValue):
            # min/max decided by the loop ranges folded, a polynomial that cancels to a constant
            # replaced by it (a pooling window's divisor becomes the literal 9)
            folded = fold_index(e.index, ctx.ranges)
            if isinstance(folded, Const):
                return Val(literal_text(folded.value, DType.int64), DType.int64, const=folded.value)
            if folded != e.index:
                return self.value(replace(e, index=folded), ctx, conds)
        narrow = self.idt == DType.int32 and _index_like(e, ctx.ranges)
        if e.dtype == DType.int64 and (narrow or self.t.cells and index_ops(e, ctx.ranges)):
            # Integer arithmetic of loop variables (a window's bounds checks) as index arithmetic:
            # in int32 where it provably fits (plain // and % on non-negative operands, digits of
            # one tile axis) rather than int64 value arithmetic with sign-correcting helpers; in a
            # register window also in int64, so that its cells' offsets fold and cells name a
            # shared row's or column's bounds checks (and loads) alike.
            idx = self.index(e.index if isinstance(e, IndexValue) else e, ctx, conds)
            if idx.literal:
                assert idx.const is not None
                return Val(str(idx.const), DType.int64, const=int(idx.const))
            if idx.text.isidentifier():
                return Val(idx.text, self.idt, idx.axes, idx.level, idx.names)
            return self.emit(idx.text, [idx], self.idt)
        if isinstance(e, Var | IndexValue):
            idx = self.index(e if isinstance(e, Var) else e.index, ctx, conds)
            if idx.literal:
                assert idx.const is not None
                return Val(str(idx.const), DType.int64, const=int(idx.const))
            rhs = idx.text if self.idt == DType.int64 else f"({idx.text}).to(tl.int64)"
            return self.emit(rhs, [idx], DType.int64)
        if isinstance(e, Masked):
            return self.masked(e, ctx, conds)
        if isinstance(e, Where):
            c = self.materialize(self.coerce(self.value(e.cond, ctx, conds), DType.bool))
            res = compute_dtype(e.dtype)
            a = self.coerce(self.value(e.a, ctx, conds), res)
            b = self.coerce(self.value(e.b, ctx, conds), res)
            if a.literal and b.literal:
                a = self.materialize(a, res)
            return self.emit(f"tl.where({c.text}, {a.text}, {b.text})", [c, a, b], res)
        if isinstance(e, Cast):
            return self.cast(self.value(e.x, ctx, conds), e.to)
        if isinstance(e, Unary):
            return self.unary(e, self.value(e.x, ctx, conds))
        if isinstance(e, Binary):
            return self.binary(e, self.value(e.a, ctx, conds), self.value(e.b, ctx, conds))
        if isinstance(e, Reduce):
            raise CodegenError(f"node {ctx.p.node.name!r}: a reduction inside an expression")
        raise CodegenError(f"node {ctx.p.node.name!r}: no Triton rule for {type(e).__name__}")

    def masked(self, e: Masked, ctx: _NodeCtx, conds: tuple[Val, ...]) -> Val:
        assert e.dtype is not None
        c = self.coerce(self.value(e.cond, ctx, conds), DType.bool)
        res = compute_dtype(e.dtype)
        if c.literal:
            taken = e.body if c.const else e.other
            return self.coerce(self.value(taken, ctx, conds), res)
        self.cond_exprs.append(e.cond)
        try:
            body = self.coerce(self.value(e.body, ctx, (*conds, c)), res)
        finally:
            self.cond_exprs.pop()
        other = self.coerce(self.value(e.other, ctx, conds), res)
        if (
            other.literal
            and other.const == 0
            and str(other.const)[0] != "-"
            and c.text in self.zero_masked.get(body.text, ())
        ):
            return body  # a load masked by the condition already reads 0 where it fails
        if body.literal and other.literal:
            body = self.materialize(body, res)
        return self.emit(f"tl.where({c.text}, {body.text}, {other.text})", [c, body, other], res)

    def cast(self, v: Val, to: DType) -> Val:
        c = v.const
        if to in (DType.float32, DType.float64) and type(c) is int and abs(c) <= 2**24:
            return Val(literal_text(float(c), to), to, const=float(c))  # exact: a float literal
        if v.literal:
            v = self.materialize(v)
        stored = self.to_storage(v, to)
        return self.from_storage(stored)

    def unary(self, e: Unary, x: Val) -> Val:
        assert e.dtype is not None and e.x.dtype is not None
        res = compute_dtype(e.dtype)
        if e.op == "neg" and x.literal:
            assert x.const is not None
            return Val(literal_text(-x.const, x.dtype), x.dtype, const=-x.const)
        rule = unary_rule(e.op)
        operand = res if UNARY_RESULT.get(e.op) == "float" else compute_dtype(e.x.dtype)
        xv = self.materialize(self.coerce(x, operand), operand)
        template = rule.template(operand)
        if template is None:
            raise CodegenError(f"unary op {e.op!r} is not defined on {e.x.dtype.value} values", code="op")
        if template == "{x}":
            return xv
        return self.emit(template.format(x=xv.text), [xv], res)

    def binary(self, e: Binary, a: Val, b: Val) -> Val:
        assert e.dtype is not None and e.a.dtype is not None and e.b.dtype is not None
        res = compute_dtype(e.dtype)
        rule = binary_rule(e.op)
        if BINARY_RESULT.get(e.op) == "bool":
            operand = compute_dtype(promote(e.a.dtype, e.b.dtype, a_weak=_is_weak(e.a), b_weak=_is_weak(e.b)))
            if operand == DType.int64 and e.op in COMPARE_OPS and _int32_exact(a) and _int32_exact(b):
                operand = DType.int32  # both sides hold exact int32 values: the same comparison
        else:
            operand = res
        av, bv = self.coerce(a, operand), self.coerce(b, operand)
        template: str | None
        recip = (
            divisor_reciprocal(float(b.const), operand) if e.op == "truediv" and b.const is not None else None
        )
        if recip is not None:  # x / c as x * (1/c): see divisor_reciprocal
            template = "{a} * {b}"
            lit = b.dtype if b.dtype.is_float else operand  # an integer divisor's reciprocal is a float
            bv = self.coerce(Val(literal_text(recip, lit), lit, const=recip), operand)
        elif e.op == "pow" and operand.is_float and bv.literal and float(bv.const or 0) in POW_BY_CONST:
            template = POW_BY_CONST[float(bv.const or 0)]
            if template == "1":
                return Val(literal_text(1, res), res, const=1.0)
            if template == "{a}":
                return self.materialize(av, operand)
        elif e.op == "pow" and operand == DType.bool and b.literal:
            # pow(b, true) is b, pow(b, false) is 1 (the only pows of bools the type checker admits)
            return self.materialize(av, operand) if b.const else Val("True", res, const=True)
        elif (
            e.op in INT_DIV_BY_LITERAL
            and operand.is_int
            and type(b.const) in (int, bool)
            and wrap_int(int(b.const or 0), operand) not in (0, -1)
        ):
            template = INT_DIV_BY_LITERAL[e.op]  # a divisor the compiler sees: no run-time guards
        else:
            template = rule.template(operand)
        if template is None:
            raise CodegenError(f"binary op {e.op!r} is not defined on {operand.value} values", code="op")
        if av.literal and bv.literal or (av.literal and "{b}" not in template):
            av = self.materialize(av, operand)
        if template.startswith(_TENSOR_HELPERS):
            av, bv = self.materialize(av, operand), self.materialize(bv, operand)
        return self.emit(template.format(a=av.text, b=bv.text), [av, bv], res)

    # -- stores and nodes ----------------------------------------------------------------------------
    def store(self, p: Placement, v: Val) -> None:
        node = p.node
        if node.output not in self.launch.stores:
            return
        ctx = self.ctxs[node.name]
        sv = self.to_storage(v, self.graph.buffer(node.output).dtype)
        idx = self.index(node.store.index, ctx, ())
        region = p.axes
        masks = [self.mask_val[a] for a in region if a in self.mask_val]
        target = self.union(idx.axes, sv.axes, region if masks else ())
        addr = self.address(node.output, idx, target)
        mask = f", {' & '.join(m.text for m in masks)}" if masks else ""
        self.effect(f"tl.store({addr}, {sv.text}{mask})", [idx, sv, *masks])
        self.stored[node.output] = None

    def pointwise(self, p: Placement) -> None:
        self.store(p, self.value(p.node.value, self.ctxs[p.node.name], ()))

    def reduction(self, p: Placement) -> None:
        red = p.node.value
        assert isinstance(red, Reduce) and red.dtype is not None and red.x.dtype is not None
        rule = reduction_rule(red.op)
        if red.op in ("sum", "prod"):
            acc = compute_dtype(red.dtype)
        elif red.op == "any":
            acc = DType.int8
        else:
            acc = compute_dtype(red.x.dtype)
            if acc == DType.bool:
                acc = DType.int8
        back_to_bool = red.dtype == DType.bool

        def whole(res: Val) -> None:
            if back_to_bool:
                res = self.emit(f"{res.text} != 0", [res], DType.bool)
            self.results[p.node.name] = res
            self.store(p, res)

        finish: Callable[[Val], None] = whole
        if self.part == "partial":
            finish = functools.partial(self.store_partial, p, acc)

        if self.t.unroll:
            finish(self.unrolled(p, rule.combine, acc, back_to_bool=red.op == "any"))
            return
        final = rule.final.template(acc)
        if final is None:
            raise CodegenError(
                f"reduction {red.op!r} is not defined on {red.x.dtype.value} values", code="op"
            )
        if self.part == "finish":
            finish(self.combine_partials(p, acc, final))
            return
        v = self.value(red.x, self.ctxs[p.node.name], ())
        if red.op == "any":
            v = self.coerce(v, DType.bool)
        v = self.materialize(self.coerce(v, acc), acc)
        ident = self.identity(rule.identity, acc)
        full = ("x", "r0_")
        r0 = self.mask_val.get("r0_")
        if self.t.persistent:
            vt = v
            if v.axes != full:
                vt = self.emit(f"tl.broadcast_to({v.text}, [XBLOCK, R0_BLOCK])", [v], acc, axes=full)
            if r0 is not None:
                vt = self.emit(f"tl.where(r0_mask, {vt.text}, {ident})", [r0, vt], acc)
            deps = [vt]
            itext = ""
            if rule.pair:
                iv = self.emit(
                    "tl.broadcast_to(r0_index, [XBLOCK, R0_BLOCK]).to(tl.int64)",
                    [self.axis_val["r0_"]],
                    DType.int64,
                    axes=full,
                )
                deps.append(iv)
                itext = iv.text
            out = DType.int64 if rule.pair else acc
            finish(self.emit(f"{final.format(v=vt.text, i=itext)}[:, None]", deps, out, axes=("x",)))
            return

        name = self.fresh("_acc")
        self.define(f"{name} = tl.full([XBLOCK, R0_BLOCK], {ident}, {TL_DTYPE[acc]})", name, [])
        accv = Val(name, acc, full, 0, (name,))
        if rule.pair:
            iname = f"{name}_index"
            self.define(f"{iname} = tl.full([XBLOCK, R0_BLOCK], 0, tl.int64)", iname, [])
            ridx = self.emit("r0_index.to(tl.int64)", [self.axis_val["r0_"]], DType.int64)
            nxt, inxt = f"{name}_next", f"{iname}_next"
            iv = Val(iname, DType.int64, full, 0, (iname,))
            self.effect(
                f"{nxt}, {inxt} = {rule.combine}({name}, {iname}, {v.text}, {ridx.text})",
                [accv, iv, v, ridx],
                1,
            )
            nv = Val(nxt, acc, full, 1, (nxt, inxt))
            if r0 is not None:
                self.effect(f"{name} = tl.where(r0_mask, {nxt}, {name})", [nv, r0], 1)
                self.effect(f"{iname} = tl.where(r0_mask, {inxt}, {iname})", [nv, r0], 1)
            else:
                self.effect(f"{name} = {nxt}", [nv], 1)
                self.effect(f"{iname} = {inxt}", [nv], 1)

            def fin_pair() -> None:
                text = final.format(v=name, i=iname)
                finish(self.emit(f"{text}[:, None]", [accv, iv], DType.int64, axes=("x",)))

            self.pending.append(fin_pair)
            return
        combined = rule.combine.format(a=name, b=v.text)
        if r0 is not None:
            self.effect(f"{name} = tl.where(r0_mask, {combined}, {name})", [accv, v, r0], 1)
        else:
            self.effect(f"{name} = {combined}", [accv, v], 1)

        def fin() -> None:
            finish(self.emit(f"{final.format(v=name)}[:, None]", [accv], acc, axes=("x",)))

        self.pending.append(fin)

    def store_partial(self, p: Placement, acc: DType, res: Val) -> None:
        """A split reduction's chunk result, into row `rsplit` of its [chunks, xnumel] partials."""
        ws = self.workspace(p, acc)
        x = self.axis_val["x"]
        xnumel = self.launch.axes[0].numel
        masks = [self.mask_val["x"]] if "x" in self.mask_val else []
        mask = f", {masks[0].text}" if masks else ""
        rsplit = Val("rsplit", DType.int32, (), 0, ("rsplit",))
        self.effect(
            f"tl.store({self.ptr(ws)} + (rsplit * {xnumel} + {x.text}), {res.text}{mask})",
            [res, x, rsplit, *masks],
        )

    def workspace(self, p: Placement, acc: DType) -> str:
        """The partials buffer of reduction `p` (of dtype `acc`), a parameter of this kernel."""
        ws = self.workspaces[p.node.name]
        self.ws_dtypes[ws] = acc
        self.loads[ws] = None
        return ws

    def combine_partials(self, p: Placement, acc: DType, final: str) -> Val:
        """The finish of a split reduction: the chunks' partial results, reduced again."""
        ws = self.workspace(p, acc)
        x, r = self.axis_val["x"], self.axis_val["r0_"]
        xnumel = self.launch.axes[0].numel
        masks = [self.mask_val[a] for a in ("x", "r0_") if a in self.mask_val]
        mask = ""
        if masks:
            red = p.node.value
            assert isinstance(red, Reduce)
            ident = self.identity(reduction_rule(red.op).identity, acc)
            mask = f", {' & '.join(m.text for m in masks)}, other={ident}"
        v = self.emit(
            f"tl.load({self.ptr(ws)} + ({r.text} * {xnumel} + {x.text}){mask})",
            [x, r, *masks],
            acc,
            axes=("x", "r0_"),
        )
        return self.emit(f"{final.format(v=v.text)}[:, None]", [v], acc, axes=("x",))

    def unrolled(self, p: Placement, combine: str, acc: DType, *, back_to_bool: bool) -> Val:
        """A small reduction unrolled at generation time: the value at each point of the reduction
        (its loop variables bound to constants), combined left to right in r order; in a sliding
        window, row by row of the window with the rows' partial results carried (`RowWalk`)."""

        def combined(points: list[int]) -> Val:
            red = p.node.value
            assert isinstance(red, Reduce)
            ctx = self.ctxs[p.node.name]
            out: Val | None = None
            for r in points:
                self.axis_val["r0_"] = Val(str(r), self.idt, const=r)
                v = self.value(red.x, ctx, ())
                if back_to_bool:
                    v = self.coerce(v, DType.bool)
                v = self.materialize(self.coerce(v, acc), acc)
                out = v if out is None else self.emit(combine.format(a=out.text, b=v.text), [out, v], acc)
            assert out is not None
            return out

        res = self.walk.unrolled(p, combine, acc, combined) if self.walk is not None else None
        if res is None:
            res = combined(list(range(self.t.unroll)))
        self.axis_val.pop("r0_", None)
        return res

    @staticmethod
    def identity(kind: str, dtype: DType) -> str:
        if kind == "zero":
            return literal_text(0, dtype)
        if kind == "one":
            return literal_text(1, dtype)
        if dtype.is_float:
            return 'float("-inf")' if kind == "lowest" else 'float("inf")'
        lo, hi = INT_RANGE[dtype]
        return str(lo if kind == "lowest" else hi)

    # -- driver -------------------------------------------------------------------------------------------
    def streaming(self) -> bool:
        """A reduction kernel that writes no point's value (its stores are the reductions' results
        and what follows them, a row each) and reads each input once: in one pass (persistent, or
        one r loop; not an unrolled window, whose loads overlap), through one index expression,
        none of them indirect. Its loads stream data it reads once."""
        ps = self.launch.placements
        if self.launch.kind != "reduction" or self.t.unroll or self.walk is not None:
            return False
        if any(p.role == "inner" and p.node.output in self.launch.stores for p in ps):
            return False
        indices: dict[str, set[Expr]] = {}
        for ld in (ld for p in ps for ld in p.node.reads() if ld.buffer not in self.produced):
            if loads(ld.index):
                return False
            indices.setdefault(ld.buffer, set()).add(ld.index)
        if any(len(ix) > 1 for ix in indices.values()):
            return False
        if self.part == "whole" and not self.t.persistent:
            return max(self.phases()[0].values(), default=0) == 0
        return True

    def body(self) -> None:
        self.streams = self.streaming()
        if self.part == "finish":
            # Launched while the partial kernel's last programs run (programmatic dependent
            # launch, where the GPU has it): its partial results are complete only after this.
            self.effect("_gdc_wait(PDL)", [])
        self.prologue()
        ps = self.launch.placements
        if self.part == "finish":
            for p in ps:
                if p.role == "reduction":
                    self.reduction(p)
                elif p.role == "epilogue":
                    self.pointwise(p)
            return
        if self.part == "partial":
            self.open_loop()
            for p in ps:
                if p.role == "reduction":
                    self.reduction(p)
                elif p.role == "inner":
                    self.pointwise(p)
            self.close_loop()  # (stores the partial results)
            self.effect("_gdc_launch_dependents(PDL)", [])
            return
        if self.t.cells:
            self.cells_body()
            return
        if self.launch.kind == "pointwise" or self.t.persistent or self.t.unroll:
            if self.walk is not None:
                self.walk.open()  # the whole body runs once a row
            for p in ps:
                if p.role == "reduction":
                    self.reduction(p)
                else:
                    self.pointwise(p)
            if self.walk is not None:
                self.walk.close()
            return
        phase, post = self.phases()
        for k in range(max(phase.values(), default=-1) + 1):
            inside = [p for p in ps if phase.get(p.node.name) == k]
            if inside:
                self.open_loop()
                for p in inside:
                    if p.role == "reduction":
                        self.reduction(p)
                    else:
                        self.pointwise(p)
                self.close_loop()
            for p in ps:
                if post.get(p.node.name) == k:
                    self.pointwise(p)

    def phases(self) -> tuple[dict[str, int], dict[str, int]]:
        """Which r loop each inner/reduction node runs in and after which loop each epilogue runs:
        a value that needs a finished reduction opens the next loop."""
        phase: dict[str, int] = {}
        post: dict[str, int] = {}
        for p in self.launch.placements:
            deps = [self.produced[b] for b in p.node.read_buffers() if b in self.produced]
            if p.role == "epilogue":
                k = 0
                for d in deps:
                    if d.role == "inner":  # `match_read` refuses this: a planner bug
                        raise FusedReadMismatch(
                            f"plan kernel {self.launch.plan_kernel!r}: epilogue {p.node.name!r} reads "
                            f"{d.node.output!r}, a value of the reduction loop"
                        )
                    k = max(k, phase[d.node.name] if d.role == "reduction" else post[d.node.name])
                post[p.node.name] = k
            else:
                k = 0
                for d in deps:
                    if d.role == "reduction":
                        k = max(k, phase[d.node.name] + 1)
                    elif d.role == "epilogue":
                        k = max(k, post[d.node.name] + 1)
                    else:
                        k = max(k, phase[d.node.name])
                phase[p.node.name] = k
        return phase, post

    def emit_kernel(self) -> EmittedKernel:
        self.body()
        assert self.loop is None
        items = _renumber(_dead_code(self.top))
        used = {n for it in items for s in (it.body if isinstance(it, LoopBlock) else [it]) for n in s.uses}
        used |= {
            name
            for it in items
            for s in (it.body if isinstance(it, LoopBlock) else [it])
            for name in _names_in(s.text)
        }
        stores = [b for b in self.launch.stores if b in self.stored or self.part == "whole"]
        args = [b for b in self.loads if self.ptr(b) in used] + stores
        numels = [(a.numel_arg, a.numel) for a in self.launch.axes]
        if self.part == "finish":  # its r axis runs over the chunks' partial results
            numels = [(n, self.t.split if n == "r0_numel" else v) for n, v in numels]
        blocks = [a.block for a in self.launch.axes]
        params = [self.ptr(b) for b in args] + [n for n, _ in numels] + [f"{b}: tl.constexpr" for b in blocks]
        if self.part != "whole":  # a split's kernels: grid dependency control (see _gdc_wait)
            params.append("PDL: tl.constexpr")
        lines: list[str] = []
        lines.extend(self.header())
        lines.append("@triton.jit")
        sig = f"def {python_name(self.name)}({', '.join(params)}):"
        if len(sig) > LINE_LENGTH:
            lines.append(f"def {self.name}(")
            lines.extend(f"    {p}," for p in params)
            lines.append("):")
        else:
            lines.append(sig)
        for it in items:
            if isinstance(it, LoopBlock):
                lines.append(f"    {it.header}")
                for s in it.body:
                    lines.extend(wrap(f"        {s.text}"))
            else:
                lines.extend(wrap(f"    {it.text}"))
        xnumel = self.launch.axes[0].numel
        ws = tuple((w, dt, self.t.split * xnumel) for w, dt in self.ws_dtypes.items())
        return EmittedKernel(self.name, "\n".join(lines) + "\n", tuple(args), tuple(numels), self.t, ws)

    def cells_counts(self) -> tuple[int, int]:
        """(loads of every cell together, distinct loads) of a register window."""
        return sum(len(c) for c in self.cell_loads), len(self.window_loads)

    def header(self) -> list[str]:
        t = self.t
        launch = self.launch
        shape = " x ".join(f"{a.name.rstrip('_')}={a.numel}" for a in launch.axes)
        style = {
            ("pointwise", 1): "pointwise",
            ("pointwise", 2): "pointwise, 2D tile (transposed access)",
        }.get((launch.kind, len(launch.axes)), "persistent reduction" if t.persistent else "looped reduction")
        if t.part == "partial":
            style = f"split reduction, part 1: {t.split} chunks of r, partial results"
        elif t.part == "finish":
            style = f"split reduction, part 2: combines {t.split} chunks, then the epilogue"
        if t.walk:
            assert self.walk is not None
            carried, loads = self.walk.counts()
            bands = sorted({c.block("YBLOCK") for c in t.configs}, reverse=True)
            rows = "/".join(map(str, bands)) + (" (autotuned)" if t.autotune else "")
            style = (
                f"sliding window, {rows} rows a program, {carried} of {loads} row loads "
                "carried from the row before"
            )
            if t.unroll:
                style = f"reduction unrolled over r0={t.unroll}, {style}"
        elif t.cells:
            needed, distinct = self.cells_counts()
            style = f"register window, {t.cells.rows} x {t.cells.cols} cells, {distinct} loads for {needed}"
            over = [w for w, o in zip(("bands", "chunks"), t.cells.overlap, strict=True) if o]
            if over:  # a period's last band, a row's last chunk, overlapping the one before
                style += ", overlapping " + " and ".join(over)
            if t.unroll:
                style = f"reduction unrolled over r0={t.unroll}, {style}"
        elif t.unroll:
            tile = ", 2D tile (row index arithmetic per row)" if len(launch.axes) == 2 else ""
            style = f"reduction unrolled over r0={t.unroll}{tile}"
        elif t.row_split:
            style = "pointwise, 2D tile (row index arithmetic per row)"
        ctas = max(c.num_ctas for c in t.configs)
        cluster = f"; {ctas} programs a tile on GPUs with clusters" if ctas > 1 else ""
        src = f"plan kernel {comment_text(launch.plan_kernel)}"
        if launch.epilogue_of:
            src += f" (epilogue of template {ident(launch.epilogue_of)})"
        out = [truncate_comment(f"# {src}: {style}, {shape}{cluster}")]
        elsewhere = {"partial": ("epilogue",), "finish": ("inner",)}.get(t.part, ())
        for p in launch.placements:
            stored = "" if p.node.output in launch.stores else "  [not stored]"
            if p.role in elsewhere:
                stored = f"  [in part {1 if t.part == 'finish' else 2}]"
            loops = ", ".join(f"{ident(lv.name)}={lv.size}" for lv in (*p.node.loops, *p.node.reduce))
            text = comment_text(f"{to_text(p.node.store)} = {to_text(p.node.value)}")
            head = f"#   {ident(p.node.name)} [{loops}]: "
            room = LINE_LENGTH - len(head) - len(stored)
            if len(text) > room:
                text = text[: max(room - 3, 10)] + "..."
            out.append(truncate_comment(f"{head}{text}{stored}"))
        if t.autotune:
            clusters = any(c.num_ctas > 1 for c in t.autotune)
            out.append("@triton.autotune(")
            out.append("    configs=[")
            out.extend(f"        {config_text(c)}," for c in t.autotune)
            out.append("    ],")
            keys = ", ".join(f'"{a.numel_arg}"' for a in launch.axes)
            out.append(f"    key=[{keys}],")
            if clusters:
                out.append('    prune_configs_by={"early_config_prune": _cluster_prune},')
            out.append(")")
        return out


def window_plan(graph: Graph, tiling: Tiling) -> tuple[dict[Key, Key], int, int]:
    """A sliding-window tiling's load carries (a load's key -> the key of the load whose previous
    row it reads), the values a row needs and how many of them come from the row before (carried
    loads and reduction points), from a dry run of the emitter."""
    probe = KernelEmitter(graph, tiling, "probe")
    probe.body()
    assert probe.walk is not None
    plan = carry_plan(probe.walk.loads)
    loads = len({ld.key for ld in probe.walk.loads}) + probe.walk.carried_points
    return plan, loads, len(plan) + probe.walk.carried_points


def cells_plan(graph: Graph, tiling: Tiling) -> tuple[int, int]:
    """A register-window tiling's loads (of distinct elements along x): what its cells load
    together and how many distinct loads that is, from a dry run of the emitter."""
    probe = KernelEmitter(graph, tiling, "probe")
    probe.body()
    return probe.cells_counts()


def config_text(c: LaunchConfig) -> str:
    blocks = ", ".join(f'"{k}": {v}' for k, v in c.blocks)
    ctas = f", num_ctas={c.num_ctas}" if c.num_ctas > 1 else ""
    return f"triton.Config({{{blocks}}}, num_warps={c.num_warps}{ctas})"


def _digit_text(d: Digit, base: str) -> str:
    """`(base // div) % mod` over the text of the digit's base value (Digit.rhs over its name)."""
    return replace(d, base=_paren(base)).rhs()


def _paren(text: str) -> str:
    """Parenthesise a compound expression (anything but a name, a number, a call or an attribute)."""
    if text.lstrip("-").isdigit():
        return f"({text})" if text.startswith("-") else text
    depth = 0
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == " " and depth == 0:
            return f"({text})"
    return f"({text})" if text.startswith("-") else text


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _names_in(text: str) -> list[str]:
    out: list[str] = []
    cur = ""
    for ch in text + " ":
        if ch in _NAME_CHARS:
            cur += ch
        else:
            if cur and not cur[0].isdigit():
                out.append(cur)
            cur = ""
    return out


_TEMP = re.compile(r"\b(tmp|x|y|r0_)(\d+)\b")


def _renumber(items: list[Stmt | LoopBlock]) -> list[Stmt | LoopBlock]:
    """Number temporaries (tmpN, xN, yN, r0_N) in the order their definitions appear."""
    stmts = [s for it in items for s in (it.body if isinstance(it, LoopBlock) else [it])]
    names: dict[str, str] = {}
    counters: dict[str, int] = {}
    for s in stmts:
        if s.defines is None:
            continue
        m = _TEMP.fullmatch(s.defines)
        if m and s.defines not in names:
            n = counters.get(m.group(1), 0)
            counters[m.group(1)] = n + 1
            names[s.defines] = f"{m.group(1)}{n}"

    def sub(text: str) -> str:
        return _TEMP.sub(lambda m: names.get(m.group(0), m.group(0)), text)

    out: list[Stmt | LoopBlock] = []
    for it in items:
        if isinstance(it, LoopBlock):
            out.append(
                LoopBlock(it.header, [Stmt(sub(s.text), s.defines, s.uses, s.effect) for s in it.body])
            )
        else:
            out.append(Stmt(sub(it.text), it.defines, it.uses, it.effect))
    return out


def _dead_code(items: list[Stmt | LoopBlock]) -> list[Stmt | LoopBlock]:
    """Drop statements whose names nothing kept uses (stores and accumulator updates are kept)."""
    stmts = [s for it in items for s in (it.body if isinstance(it, LoopBlock) else [it])]
    # The least set closed under: effects are kept, so is a statement defining a name a kept one
    # uses -- found with a worklist, in time linear in the statements (a fixpoint over repeated
    # passes was quadratic in a kernel of thousands of fused nodes).
    defining: dict[str, list[Stmt]] = {}
    for s in stmts:
        if s.defines is not None:
            defining.setdefault(s.defines, []).append(s)
    live: set[str] = set()
    keep: set[int] = set()
    work = [s for s in stmts if s.effect]
    while work:
        s = work.pop()
        if id(s) in keep:
            continue
        keep.add(id(s))
        for name in (*s.uses, *_names_in(s.text.split(" = ", 1)[1] if s.defines is not None else s.text)):
            if name not in live:
                live.add(name)
                work.extend(defining.get(name, ()))
    out: list[Stmt | LoopBlock] = []
    for it in items:
        if isinstance(it, LoopBlock):
            body = [s for s in it.body if id(s) in keep]
            if any(s.effect for s in body):
                out.append(LoopBlock(it.header, body))
        elif id(it) in keep:
            out.append(it)
    return out
