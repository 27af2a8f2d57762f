"""Tile shapes and launch parameters of each compute kernel (deterministic, per shape).

Pointwise kernels are 1D unless reads and writes disagree on which flat position is contiguous
(a transpose): then a 2D tile [YBLOCK, XBLOCK] splits the flat index at the transposed access's
contiguous loop so both sides are coalesced (Triton picks each access's layout from its
contiguity). Reductions are persistent (one [XBLOCK, R0_BLOCK] tile holds whole rows) up to
`persistent_rnumel`, looped otherwise; the tile leans towards x when the reduced data is
contiguous along x (outer reductions). Masks are dropped on an axis whose size every block
candidate divides. Index arithmetic is int64 only where some index can leave int32.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fuseopt.codegen.common import INT32_MAX, cdiv, next_power_of_2, prod
from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.schedule import Axis, ComputeLaunch, Placement, digits_of, pointwise_segments
from fuseopt.ir.bounds import interval, linear_form
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Expr, IndexValue, Load, Var, walk
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class CodegenOptions:
    """Knobs of the generator (tests shrink the blocks so that tiny shapes still take every path)."""

    autotune: bool = False
    persistent_rnumel: int = 1024  # largest rnumel kept in registers (persistent reduction)
    max_xblock: int = 1024
    max_yblock: int = 64
    max_r0_block: int = 1024
    tile_2d: bool = True  # allow 2D tiles for transposes


@dataclass(frozen=True)
class LaunchConfig:
    blocks: tuple[tuple[str, int], ...]  # (constexpr name, value), in signature order
    num_warps: int

    def block(self, name: str) -> int:
        return dict(self.blocks)[name]

    def grid(self, axes: tuple[Axis, ...]) -> int:
        return prod(cdiv(a.numel, self.block(a.block)) for a in axes if a.name != "r0_")


@dataclass(frozen=True)
class Tiling:
    launch: ComputeLaunch  # with its final axes and placements
    persistent: bool
    config: LaunchConfig
    autotune: tuple[LaunchConfig, ...]  # empty unless autotuning
    masked: tuple[str, ...]  # axes whose lanes can fall outside the box
    index_dtype: DType  # int32 or int64

    @property
    def configs(self) -> tuple[LaunchConfig, ...]:
        return self.autotune or (self.config,)


def choose_tiling(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Tiling:
    if launch.kind == "pointwise":
        launch = _maybe_2d(graph, launch, options)
        if len(launch.axes) == 2:
            default, cands = _configs_2d(launch, options)
        else:
            default, cands = _configs_1d(launch, options)
        persistent = False
    else:
        rnumel = launch.axes[1].numel
        persistent = rnumel <= options.persistent_rnumel
        outer = _x_contiguous(graph, launch)
        default, cands = _configs_reduction(launch, options, persistent=persistent, outer=outer)
    autotune = cands if options.autotune else ()
    configs = autotune or (default,)
    masked = tuple(a.name for a in launch.axes if any(a.numel % c.block(a.block) != 0 for c in configs))
    return Tiling(launch, persistent, default, autotune, masked, _index_dtype(graph, launch))


# -- accesses ---------------------------------------------------------------------------------
def _accesses(graph: Graph, launch: ComputeLaunch, p: Placement) -> Iterator[tuple[Expr, int]]:
    """(index, bytes) of each global memory access of a placed node (fused reads excluded)."""
    produced = launch.producer()
    node = p.node
    for ld in node.reads():
        if ld.buffer not in produced:
            yield ld.index, graph.buffer(ld.buffer).dtype.itemsize * node.numel * node.rnumel
    if node.output in launch.stores:
        yield node.store.index, graph.buffer(node.output).dtype.itemsize * node.numel


def _unit_digit(index: Expr, digits: dict[str, Digit | None]) -> tuple[Digit | None, bool]:
    """The digit along which `index` is contiguous (coefficient 1), and whether the index varies
    along any axis's fastest digit (div 1). Non-affine indices give (None, False)."""
    f = linear_form(index)
    best: Digit | None = None
    fastest = False
    for atom, k in f.coeffs:
        if not isinstance(atom, Var):
            return None, False
        d = digits.get(atom.name)
        if d is None:
            continue
        if d.div == 1:
            fastest = True
        if k == 1 and (best is None or d.div < best.div):
            best = d
    return best, fastest


def _maybe_2d(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> ComputeLaunch:
    if not options.tile_2d:
        return launch
    numel = launch.axes[0].numel
    coalesced = 0
    weights: dict[int, int] = {}
    for p in launch.placements:
        digits = digits_of(p, {"x": numel})
        for index, nbytes in _accesses(graph, launch, p):
            d, fastest = _unit_digit(index, digits)
            if d is None:
                continue
            if d.div == 1:
                coalesced += nbytes
            elif fastest:
                weights[d.div] = weights.get(d.div, 0) + nbytes
    if not coalesced or not weights:
        return launch
    split = max(sorted(weights), key=lambda s: weights[s])
    y, x = Axis("y", numel // split), Axis("x", split)
    placements = tuple(Placement(p.node, p.role, pointwise_segments(p.node, y, x)) for p in launch.placements)
    return launch.with_axes((y, x), placements)


def _x_contiguous(graph: Graph, launch: ComputeLaunch) -> bool:
    """Whether most reduced bytes are contiguous along x rather than along r (outer reduction)."""
    sizes = {a.name: a.numel for a in launch.axes}
    along_x = along_r = 0
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        digits = digits_of(p, sizes)
        for index, nbytes in _accesses(graph, launch, p):
            d, _ = _unit_digit(index, digits)
            if d is None or d.div != 1:
                continue
            if d.base == "xindex":
                along_x += nbytes
            elif d.base == "r0_index":
                along_r += nbytes
    return along_x > along_r


# -- configurations ------------------------------------------------------------------------------
def _warps(elements: int, most: int = 8) -> int:
    return max(1, min(most, elements // 256))


def _unique(default: LaunchConfig, cands: list[LaunchConfig]) -> tuple[LaunchConfig, ...]:
    out = [default]
    for c in cands:
        if c not in out:
            out.append(c)
    return tuple(out)


def _configs_1d(launch: ComputeLaunch, o: CodegenOptions) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    cap = next_power_of_2(launch.axes[0].numel)
    xb = min(cap, o.max_xblock)
    default = LaunchConfig((("XBLOCK", xb),), _warps(xb, 4))
    cands = [
        LaunchConfig((("XBLOCK", min(cap, b)),), _warps(min(cap, b), w))
        for b, w in ((256, 2), (512, 4), (2048, 8))
    ]
    return default, _unique(default, cands)


def _configs_2d(launch: ComputeLaunch, o: CodegenOptions) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    ycap, xcap = next_power_of_2(launch.axes[0].numel), next_power_of_2(launch.axes[1].numel)

    def cfg(yb: int, xb: int) -> LaunchConfig:
        yb, xb = min(ycap, yb), min(xcap, xb)
        return LaunchConfig((("YBLOCK", yb), ("XBLOCK", xb)), _warps(yb * xb // 2, 4))

    default = cfg(min(64, o.max_yblock), min(128, o.max_xblock))
    return default, _unique(default, [cfg(32, 32), cfg(64, 64), cfg(128, 64), cfg(32, 128)])


def _configs_reduction(
    launch: ComputeLaunch, o: CodegenOptions, *, persistent: bool, outer: bool
) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    xcap = next_power_of_2(launch.axes[0].numel)
    rcap = next_power_of_2(launch.axes[1].numel)

    def cfg(xb: int, rb: int) -> LaunchConfig:
        xb, rb = max(1, min(xcap, xb, o.max_xblock)), max(1, min(rcap, rb, o.max_r0_block))
        return LaunchConfig((("XBLOCK", xb), ("R0_BLOCK", rb)), _warps(xb * rb // 2))

    if persistent:
        rb = rcap
        target = 16384 if outer else 8192
        default = LaunchConfig(
            (("XBLOCK", max(1, min(xcap, target // rb, o.max_xblock))), ("R0_BLOCK", rb)), 1
        )
        default = LaunchConfig(default.blocks, _warps(default.block("XBLOCK") * rb // 2))
        cands = [cfg(xb, rb) for xb in (1, 2, 4, 8, 16, 32, 64) if 1024 <= xb * rb <= 16384]
        return default, _unique(default, cands)
    default = cfg(64, 64) if outer else cfg(max(1, 4096 // min(rcap, 1024)), 1024)
    cands = [cfg(1, 2048), cfg(4, 1024), cfg(8, 512), cfg(64, 64), cfg(128, 16)]
    return default, _unique(default, cands)


# -- index dtype ---------------------------------------------------------------------------------
def _index_dtype(graph: Graph, launch: ComputeLaunch) -> DType:
    if prod(a.numel for a in launch.axes) > INT32_MAX:
        return DType.int64
    for p in launch.placements:
        ranges = p.node.var_sizes
        exprs: list[tuple[Expr, str | None]] = [(p.node.store.index, p.node.output)]
        for e in walk(p.node.value):
            if isinstance(e, Load):
                exprs.append((e.index, e.buffer))
            elif isinstance(e, IndexValue):
                exprs.append((e.index, None))
            elif isinstance(e, Var):
                exprs.append((e, None))
        for index, buf in exprs:
            r = interval(index, ranges)
            if r is None:
                if buf is None or graph.buffer(buf).storage_size > INT32_MAX:
                    return DType.int64
            elif r[0] < -INT32_MAX or r[1] > INT32_MAX:
                return DType.int64
    return DType.int32
