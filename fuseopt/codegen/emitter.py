"""The emitter's core: one kernel's statements, CSE by right-hand side, names, literals and
conversions (`EmitterCore`); `kernel.KernelEmitter` builds on it (expressions, reductions,
register windows, the driver).

Every value is a named temporary (`tmpN`, counters, never hashes) CSE'd by its right-hand side;
a statement lives in the outermost scope where its operands exist (loads that vary only along x
are hoisted out of a looped reduction's r loop), and statements that feed no store are dropped
at the end. Fused reads are replaced by the producer's value rounded through the buffer's dtype
(what a store and a reload would give); arithmetic runs in float32 for float16/bfloat16.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fuseopt.codegen.common import INT32_MAX, INT_RANGE, TL_DTYPE, wrap_int
from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.rules import KERNEL_NAME_OF
from fuseopt.codegen.schedule import ComputeLaunch, Placement, frame_of
from fuseopt.codegen.source_text import ident, python_name
from fuseopt.codegen.strategies import (
    Cells,
    RegisterWindow,
    SlidingWindow,
    SplitFinish,
    SplitPartial,
    persistent,
    unrolled_points,
)
from fuseopt.codegen.tiling import Tiling
from fuseopt.codegen.values import Literal, LoopBlock, NodeCtx, Stmt, Val
from fuseopt.codegen.windows.sliding import index_ops
from fuseopt.ir.bounds import index_magnitude
from fuseopt.ir.dtypes import DType, compute_dtype
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
)
from fuseopt.ir.graph import Graph

if TYPE_CHECKING:
    from fuseopt.codegen.windows.sliding_emit import RowWalk

from fuseopt.ir.typecheck import BINARY_RESULT, UNARY_RESULT


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


def literal_as(value: Literal, dtype: DType) -> Literal | None:
    """A literal as a value of `dtype`, as torch converts a scalar: a float exactly; nonzero to
    bool; an integer wrapped into an integer dtype (weak literals); a float truncated toward zero
    into an integer dtype that holds it. None where that conversion is not defined (a non-finite
    float, or one out of the dtype's range: torch's result differs by device), for the kernel to
    convert at run time as its device does."""
    if dtype.is_float:
        return float(value)
    if dtype == DType.bool:
        return int(value != 0)
    if isinstance(value, float):
        lo, hi = INT_RANGE[dtype]
        if not math.isfinite(value) or not lo <= int(value) <= hi:
            return None
    return wrap_int(int(value), dtype)


def literal_text(value: Literal, dtype: DType) -> str:
    if dtype.is_float:
        return _fmt_float(float(value))
    return str(wrap_int(int(value), dtype))


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
    s = tiling.strategy
    prefix = (
        "poi"
        if tiling.launch.kind == "pointwise" or unrolled_points(s)
        else "per"
        if persistent(s)
        else "red"
    )
    ops = kernel_ops(tiling.launch.placements)[:max_ops]
    return f"triton_{prefix}_fused_{'_'.join(ops) or 'copy'}_{position}"


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


class EmitterCore:
    """The statements of one kernel (`emit`, `effect`, `define`), its names, literals and
    conversions; `kernel.KernelEmitter` returns the kernel's source and call signature.

    A split reduction is two kernels: part "partial" runs the r loop over one chunk of r per
    program_id(1) (the loop's pointwise nodes store their outputs as usual) and stores each
    reduction's partial result; part "finish" combines the chunks' partials with the same
    reduction and runs the stores and epilogue that follow the loop."""

    def __init__(self, graph: Graph, tiling: Tiling, name: str):
        self.graph = graph
        self.t = tiling
        s = self.strategy = tiling.strategy
        self.unroll = unrolled_points(s)  # points of a reduction unrolled into a pointwise tile
        self.persistent = persistent(s)  # whole rows of r in the tile: no r loop
        self.cells: Cells | None = s.cells if isinstance(s, RegisterWindow) else None
        self.workspaces = (
            workspace_names(graph, tiling.launch) if isinstance(s, SplitPartial | SplitFinish) else {}
        )
        self.ws_dtypes: dict[str, DType] = {}
        self.stored: dict[str, None] = {}
        self.launch = tiling.launch
        self.name = name
        self.axes = {a.name: a for a in self.launch.axes}
        if isinstance(s, SlidingWindow | RegisterWindow):
            # rows walked one at a time, or a register window's cells: yindex is a scalar
            self.dims: tuple[str, ...] = ("x",)
        elif self.launch.kind == "pointwise" or self.unroll:
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
        self.reread: set[str] = set()  # buffers a later r loop of the kernel reads again
        self.read_before: set[str] = set()  # buffers an earlier r loop of the kernel read
        self.narrow: dict[str, Val] = {}  # float32 temporary -> the float16/bfloat16 value it widens
        self.zero_masked: dict[str, frozenset[str]] = {}  # load (widened or not) -> its mask terms
        frame = frame_of(self.launch, self.unroll)  # an unrolled reduction's digits: bound per point
        self.extents = dict(frame.extents)
        self.flats = frame.flats
        self.ctxs = {p.node.name: NodeCtx(p, dict(frame.digits[p.node.name])) for p in self.launch.placements}
        self.cond_exprs: list[Expr] = []  # conditions of the enclosing masked values
        # a sliding window's row loop (`codegen.windows.sliding_emit`), with the loads it carries: set by
        # KernelEmitter
        self.walk: RowWalk | None = None

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
        value = literal_as(v.const, dt)
        if value is None:  # a conversion torch leaves to the device: the kernel's, at run time
            assert v.dtype != dt, (v, dt)  # a literal holds a value of its own dtype
            own = self.materialize(v)
            return self.emit(f"{own.text}.to({TL_DTYPE[dt]})", [own], dt)
        return self.emit(f"tl.full({self.shape(())}, {literal_text(value, dt)}, {TL_DTYPE[dt]})", [], dt)

    def coerce(self, v: Val, dtype: DType) -> Val:
        """`v` as a Triton value of `dtype` (a literal stays a weak Python literal where Triton's
        own promotion gives exactly `dtype`)."""
        if v.literal:
            assert v.const is not None
            value = literal_as(v.const, dtype)
            if value is not None and dtype in (DType.float32, DType.int32, DType.int64):
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

    # -- addresses ----------------------------------------------------------------------------------
    def ptr(self, buffer: str) -> str:
        return python_name(f"{buffer}_ptr")

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
            return f"{self.ptr(buffer)} + {paren(root.text)} {sign} {abs(offset)}"
        if set(target) - set(idx.axes) or not idx.axes:
            shape, dt = self.shape(target), TL_DTYPE[self.idt]
            text = (
                f"tl.full({shape}, {text}, {dt})"
                if idx.literal
                else f"{paren(text)} + tl.zeros({shape}, {dt})"
            )
        return f"{self.ptr(buffer)} + {paren(text)}"


# Helpers whose operands must be typed tensors (tl.broadcast, libdevice's dispatch by dtype):
# literal operands are materialised in the operation's dtype first.
TENSOR_HELPERS: tuple[str, ...] = ("_pow(", "_ipow(", "_atan2(", "_int_floordiv(", "_int_remainder(")
TENSOR_HELPERS += ("_int_fmod(", "_fmod(", "_remainder_float(", "_floordiv_float(")


def is_weak(e: Expr) -> bool:
    """Mirrors the type checker: literals, and same-dtype ops of literals, are weak."""
    if isinstance(e, Const):
        return True
    if isinstance(e, Unary):
        return UNARY_RESULT.get(e.op) == "same" and is_weak(e.x)
    if isinstance(e, Binary):
        return BINARY_RESULT.get(e.op) == "promote" and is_weak(e.a) and is_weak(e.b)
    if isinstance(e, Where):
        return is_weak(e.a) and is_weak(e.b)
    if isinstance(e, Masked):
        return is_weak(e.body)  # masked() keeps its body's dtype
    return False


def index_like(e: Expr, ranges: Mapping[str, int]) -> bool:
    """Whether `e` is integer index arithmetic of loop variables (no loads) whose every
    intermediate fits int32 (not just its result: `(i + 2**31 - 8) // 2**28` does not)."""
    if not index_ops(e, ranges):
        return False
    m = index_magnitude(e.index if isinstance(e, IndexValue) else e, ranges)
    return m is not None and m <= INT32_MAX


def int32_exact(v: Val) -> bool:
    if v.literal:
        return type(v.const) is int and -INT32_MAX <= v.const <= INT32_MAX
    return v.dtype == DType.int32


def digit_text(d: Digit, base: str) -> str:
    """`(base // div) % mod` over the text of the digit's base value (Digit.rhs over its name)."""
    return replace(d, base=paren(base)).rhs()


def paren(text: str) -> str:
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
