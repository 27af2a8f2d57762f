"""Tile shapes and launch parameters of each compute kernel (deterministic, per shape).

Pointwise kernels are 1D unless reads and writes disagree on which flat position is contiguous
(a transpose): then a 2D tile [YBLOCK, XBLOCK] splits the flat index at the transposed access's
contiguous loop so both sides are coalesced (Triton picks each access's layout from its
contiguity). Reductions are persistent (one [XBLOCK, R0_BLOCK] tile holds whole rows) up to
`persistent_rnumel`, looped otherwise; the tile leans towards x when the reduced data is
contiguous along x (outer reductions). Masks are dropped on an axis whose size every block
candidate divides. Index arithmetic is int64 only where some intermediate of an index can leave int32.
Every size, limit and count of programs comes from the target (`CodegenOptions.gpu`:
`fuseopt.targets`, whose files say why each tuned constant has its value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from fractions import Fraction

from fuseopt.codegen.common import INT32_MAX, INT_RANGE, cdiv, next_power_of_2, prod
from fuseopt.codegen.indexing import Digit, decompose, digit_of
from fuseopt.codegen.schedule import (
    Axis,
    ComputeLaunch,
    Placement,
    Segment,
    axes_base,
    digits_of,
    pointwise_segments,
)
from fuseopt.codegen.window import index_ops
from fuseopt.ir.bounds import index_magnitude, indirect_bounds, linear_form
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Expr, IndexValue, Load, Reduce, Unary, Var, to_text, walk
from fuseopt.ir.graph import Graph
from fuseopt.targets import DEFAULT
from fuseopt.targets.base import Target, Tuning

# Overrides of the target's tuned constants that CodegenOptions takes (tests shrink the blocks so
# that tiny shapes still take every path; `fuseopt.targets.base.Tuning` says what each means).
_TUNING_OVERRIDES = (
    "persistent_rnumel",
    "max_xblock",
    "max_yblock",
    "max_r0_block",
    "unroll_rnumel",
    "split_min_r_blocks",
    "window_min_row",
    "window_band",
    "window_cells",
    "window_cols",
    "window_rows",
    "window_slice",
)


@dataclass(frozen=True)
class CodegenOptions:
    """What the generator generates for: a target GPU (`fuseopt.targets`: its hardware facts and
    tuned constants), switches, and overrides of the target's values (None: the target's). The
    rules read `gpu`, the target with the overrides applied, and its `tuning`."""

    target: Target = DEFAULT
    autotune: bool = False
    tile_2d: bool = True  # allow 2D tiles for transposes
    # Register windows (see codegen.cells): (rows, columns) of cells to take alone, where set.
    window_shape: tuple[int, int] | None = None
    # Thread-block clusters for the transposed persistent reductions that do more than one
    # reduction or a special function at every point (see _clustered); None: where the target
    # has them.
    clusters: bool | None = None
    # The GPU's multiprocessors, when not the target's (`fuseopt optimize --multiprocessors`):
    # split reductions, looped reductions and a split's finishing kernel size their grids by them.
    multiprocessors: int | None = None
    # Split reductions: a looped reduction with fewer x tiles than `split_programs` programs is
    # cut along r into chunks reduced by a partial kernel and finished by a second kernel. None:
    # the target's split_programs_per_multiprocessor x multiprocessors; 0: never.
    split_programs: int | None = None
    persistent_rnumel: int | None = None
    max_xblock: int | None = None
    max_yblock: int | None = None
    max_r0_block: int | None = None
    unroll_rnumel: int | None = None
    split_min_r_blocks: int | None = None
    window_min_row: int | None = None
    window_band: int | None = None
    window_cells: int | None = None
    window_cols: int | None = None
    window_rows: int | None = None
    window_slice: int | None = None
    gpu: Target = field(init=False, repr=False, compare=False)  # the target, overrides applied

    def __post_init__(self) -> None:
        gpu = self.target
        given = {name: getattr(self, name) for name in _TUNING_OVERRIDES if getattr(self, name) is not None}
        if given:
            gpu = replace(gpu, tuning=replace(gpu.tuning, **given))
        if self.multiprocessors is not None:
            gpu = replace(gpu, multiprocessors=self.multiprocessors)
        object.__setattr__(self, "gpu", gpu)

    @property
    def tuning(self) -> Tuning:
        """The target's tuned constants, overrides applied."""
        return self.gpu.tuning

    @property
    def split_target(self) -> int:
        if self.split_programs is not None:
            return self.split_programs
        return self.tuning.split_programs_per_multiprocessor * self.gpu.multiprocessors

    @property
    def use_clusters(self) -> bool:
        return self.gpu.clusters if self.clusters is None else self.clusters


@dataclass(frozen=True)
class LaunchConfig:
    blocks: tuple[tuple[str, int], ...]  # (constexpr name, value), in signature order
    num_warps: int
    # Programs of a thread-block cluster sharing one program's tile (Triton's num_ctas; NVIDIA
    # compute capability 9.0 and later): a tile of XBLOCK rows is split over them by rows.
    num_ctas: int = 1

    def block(self, name: str) -> int:
        return dict(self.blocks)[name]


@dataclass(frozen=True)
class Cells:
    """A register window's shape (codegen.cells): a program covers `rows` consecutive rows x
    `cols` consecutive columns of `col` points each (XBLOCK of them, a slice of a column). Bands
    of rows stay within a multiple of `period` rows and chunks of columns within a row of `ncols`
    columns: where `rows` or `cols` does not divide them, the last band or chunk ends at the
    boundary and overlaps the one before."""

    rows: int
    cols: int
    col: int
    period: int
    ncols: int

    @property
    def bands(self) -> int:
        """Bands of rows in a period."""
        return cdiv(self.period, self.rows)

    @property
    def chunks(self) -> int:
        """Chunks of columns in a row."""
        return cdiv(self.ncols, self.cols)

    @property
    def waste(self) -> Fraction:
        """Points computed over points of the output (above 1 where bands or chunks overlap)."""
        return Fraction(self.bands * self.rows, self.period) * Fraction(self.chunks * self.cols, self.ncols)

    @property
    def overlap(self) -> tuple[bool, bool]:
        """Whether the last band of a period, and the last chunk of a row, overlap the one before."""
        return self.period % self.rows != 0, self.ncols % self.cols != 0


@dataclass(frozen=True)
class Tiling:
    launch: ComputeLaunch  # with its final axes and placements
    persistent: bool
    config: LaunchConfig
    autotune: tuple[LaunchConfig, ...]  # empty unless autotuning
    masked: tuple[str, ...]  # axes whose lanes can fall outside the box
    index_dtype: DType  # int32 or int64
    grid_y_max: int  # the target's limit on a launch grid's second dimension
    unroll: int = 0  # rnumel of a reduction unrolled into a pointwise tile (0: not unrolled)
    split: int = 1  # chunks of a split reduction (1: not split)
    part: str = "whole"  # "whole" | "partial" (a split's chunks) | "finish" (combines the chunks)
    row_split: bool = False  # a 2D tile of rows (y) x a row's inner points (x): index arithmetic per row
    walk: int = 0  # a sliding window: rows per program, walked in order (YBLOCK); 0: no walk
    walk_period: int = 0  # bands of rows never cross a multiple of this many rows
    # A register window (codegen.cells): the cells a program unrolls, XBLOCK points of a column
    # each; None otherwise.
    cells: Cells | None = None
    # The launch where thread-block clusters are not available, when `config` uses them
    # (the wrapper picks one at run time); None when `config` runs everywhere.
    fallback: LaunchConfig | None = None

    @property
    def transposed(self) -> bool:
        """A pointwise 2D tile that makes a transposed access coalesced."""
        return (
            self.launch.kind == "pointwise"
            and len(self.launch.axes) == 2
            and not (self.unroll or self.row_split or self.walk or self.cells)
        )

    @property
    def configs(self) -> tuple[LaunchConfig, ...]:
        """Every launch the kernel may run with (autotune candidates, or the fixed launch and its
        fallback): masks and grid limits hold for all of them."""
        fixed = (self.config,) if self.fallback is None else (self.config, self.fallback)
        return self.autotune or fixed

    @property
    def grid_2d(self) -> bool:
        """Whether a 2D tile launches on a 2D grid (program_id(0) along x, program_id(1) along y):
        y tiles must fit the grid's second dimension."""
        axes = self.launch.axes
        if len(axes) != 2 or axes[0].name != "y":
            return False
        return all(cdiv(axes[0].numel, c.block("YBLOCK")) <= self.grid_y_max for c in self.configs)

    def grid_dims(self, config: LaunchConfig) -> tuple[dict[str, int], ...]:
        """Per grid dimension, the (block, numel) pairs whose tile counts multiply into it."""
        axes = [a for a in self.launch.axes if a.name != "r0_"]
        if self.cells:  # program_id(0): the row's column chunks x their XBLOCK-point slices
            y, x = axes
            c = self.cells
            return ({x.block: c.chunks * c.col}, {y.block: y.numel // c.period * c.bands * c.rows})
        if self.part == "partial":
            return ({a.block: a.numel for a in axes}, {"": self.split})
        if self.grid_2d:
            return tuple({a.block: a.numel} for a in reversed(axes))
        return ({a.block: a.numel for a in axes},)

    def grid(self, config: LaunchConfig) -> tuple[int, ...]:
        return tuple(
            prod(n if not b else cdiv(n, config.block(b)) for b, n in dim.items())
            for dim in self.grid_dims(config)
        )


def choose_tiling(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Tiling:
    if launch.kind == "pointwise":
        launch = _maybe_2d(graph, launch, options)
        rows = (
            None
            if len(launch.axes) == 2 or not options.tile_2d
            else _digit_split(launch, launch.axes[0].numel, 1, options.tuning.row_split_min_points)
        )
        if rows is not None:
            launch = _rows(launch, rows)
            return _tiling(graph, launch, *_configs_unrolled(launch, options), options, row_split=True)
        configs = _configs_2d(launch, options) if len(launch.axes) == 2 else _configs_1d(launch, options)
        return _tiling(graph, launch, *configs, options)
    if _unrollable(launch, options):
        rnumel = launch.axes[1].numel
        launch = _unrolled(launch, options)
        return _tiling(graph, launch, *_configs_unrolled(launch, options), options, unroll=rnumel)
    persistent = launch.axes[1].numel <= options.tuning.persistent_rnumel
    along, x_item = _contiguous_bytes(graph, launch)
    outer = _x_contiguous(along, options.tuning.outer_x_ratio)
    split = None if persistent else _split(launch, options)
    if split is not None:
        cfg, chunks, cands = split
        autotune = cands if options.autotune else ()
        return Tiling(
            launch,
            False,
            cfg,
            autotune,
            _masked(launch, autotune or (cfg,)),
            _index_dtype(graph, launch, autotune or (cfg,)),
            options.gpu.max_grid_y,
            split=chunks,
            part="partial",
        )
    sfu = outer and _sfu_per_point(launch)
    default, cands = _configs_reduction(launch, options, persistent=persistent, outer=outer, sfu=sfu)
    fallback = None
    cluster = _clustered(launch, default, options) if persistent and outer else None
    if cluster is not None and _cluster_pays(launch, default, sfu, x_item, options):
        default, fallback = cluster, default
        cands = _unique(default, list(cands))
    return _tiling(graph, launch, default, cands, options, persistent=persistent, fallback=fallback)


def _tiling(
    graph: Graph,
    launch: ComputeLaunch,
    default: LaunchConfig,
    cands: tuple[LaunchConfig, ...],
    options: CodegenOptions,
    *,
    persistent: bool = False,
    unroll: int = 0,
    row_split: bool = False,
    fallback: LaunchConfig | None = None,
) -> Tiling:
    autotune = cands if options.autotune else ()
    configs = autotune or ((default,) if fallback is None else (default, fallback))
    t = Tiling(
        launch,
        persistent,
        default,
        autotune,
        (),
        _index_dtype(graph, launch, configs),
        options.gpu.max_grid_y,
        unroll=unroll,
        row_split=row_split,
        fallback=None if autotune else fallback,
    )
    return replace(t, masked=_masked(launch, t.configs))  # masks that hold for every launch


def _masked(launch: ComputeLaunch, configs: tuple[LaunchConfig, ...]) -> tuple[str, ...]:
    """Axes whose size some config's block does not divide: their lanes need a mask."""
    return tuple(a.name for a in launch.axes if any(a.numel % c.block(a.block) != 0 for c in configs))


# -- accesses ---------------------------------------------------------------------------------
def _accesses(graph: Graph, launch: ComputeLaunch, p: Placement) -> Iterator[tuple[str, Expr, int]]:
    """(buffer, index, bytes) of each global memory access of a placed node (fused reads
    excluded)."""
    produced = launch.producer()
    node = p.node
    for ld in node.reads():
        if ld.buffer not in produced:
            yield ld.buffer, ld.index, graph.buffer(ld.buffer).dtype.itemsize * node.numel * node.rnumel
    if node.output in launch.stores:
        yield node.output, node.store.index, graph.buffer(node.output).dtype.itemsize * node.numel


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
        for _, index, nbytes in _accesses(graph, launch, p):
            d, fastest = _unit_digit(index, digits)
            if d is None:
                continue
            if d.div == 1:
                coalesced += nbytes
            elif fastest:
                weights[d.div] = weights.get(d.div, 0) + nbytes
    if not coalesced or not weights:
        return launch
    return _rows(launch, max(sorted(weights), key=lambda s: weights[s]))


# -- unrolled small reductions ------------------------------------------------------------------
def _unrollable(launch: ComputeLaunch, o: CodegenOptions) -> bool:
    """A reduction over a few points (a pooling window) is cheaper unrolled: each point becomes its
    own load of a pointwise tile, every load coalesced along the output's contiguous dimension,
    instead of a [XBLOCK, R0_BLOCK] tile whose r lanes are strided and mostly padding (rnumel 9 in a
    block of 16). Not for pair reductions (argmax keeps an index) nor for kernels with pointwise
    work inside the reduction loop (those run on the r axis too)."""
    rnumel = launch.axes[1].numel
    if not 1 <= rnumel <= o.tuning.unroll_rnumel:
        return False
    for p in launch.placements:
        if p.role == "inner":
            return False
        if (
            p.role == "reduction"
            and isinstance(p.node.value, Reduce)
            and p.node.value.op in ("argmax", "argmin")
        ):
            return False
    return True


def _digit_split(launch: ComputeLaunch, numel: int, rnumel: int, min_points: int) -> int | None:
    """Where to split the flat x index of an unrolled reduction into (y, x) so that all its `//`
    and `%` arithmetic (the window's bounds checks: `x // 6720 % 35` for a channels-last image row)
    runs on the [YBLOCK, 1] column of row indices, once per row, instead of once per element.

    The split s is the gcd of every divisor applied to the flat index: each `x // d` digit is then
    a digit of the row index alone (`y // (d / s)`); a bare `x % m` needs m | s (it falls on x).
    Only when the x tile keeps at least `min_points` points (a channels-last image: s = channels)."""
    flat = _flat_digits(launch, numel, rnumel)
    divs = {d.div for d in flat if d.div > 1}
    mods = {d.mod for d in flat if d.div == 1 and d.mod is not None}
    if not divs:
        return None
    s = 0
    for div in sorted(divs):
        s = math.gcd(s, div)
    if s < min_points or s >= numel or numel % s or any(s % m for m in mods):
        return None
    return s


def _flat_digits(launch: ComputeLaunch, numel: int, rnumel: int) -> set[Digit]:
    """The digits `(x // div) % mod` of the flat index that a 1D launch's indices and values use."""
    sizes = {"x": numel, "r0_": rnumel}
    out: set[Digit] = set()
    for p in launch.placements:
        digits = digits_of(p, sizes)
        for root in (p.node.store.index, p.node.value):
            for e in walk(root):
                d = digit_of(e, digits)
                if d is not None and d.base == "xindex":
                    out.add(d)
    return out


def window_tilings(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> list[Tiling]:
    """Sliding-window tilings to try for a pointwise launch or a small reduction to unroll, best
    first (`codegen.wrapper` keeps the first whose dry run carries enough of a row's loads from
    the row before: `codegen.window`).

    Rows: the flat index splits at a divisor s that its `//` digits use, so a row is one value of
    the digits above s (an image row of a channels-last tensor, s = W * C). The tile is XBLOCK
    points of a row (up to `window_xblock`); a program walks `band` consecutive rows. Bands are
    aligned to the period of the row digits (35 image rows), the largest band up to `window_band`
    that divides it."""
    t = options.tuning
    if not (t.window_min_row and t.window_band):
        return []
    if launch.kind != "pointwise" and not _unrollable(launch, options):
        return []
    if launch.kind == "pointwise" and len(launch.axes) != 1:
        return []
    numel = launch.axes[0].numel
    rnumel = launch.axes[1].numel if launch.kind != "pointwise" else 1
    flat = _flat_digits(launch, numel, rnumel)
    out: list[Tiling] = []
    for s in sorted({d.div for d in flat if d.div > 1}, reverse=True):
        if s < t.window_min_row or s >= numel or numel % s:
            continue
        period = 0
        ok = True
        for d in flat:
            if d.div >= s:
                if d.div % s:
                    ok = False  # a digit across the row boundary
                    break
                period = math.gcd(period, d.div // s if d.div > s else (d.mod or 0))
            elif d.mod is not None and s % (d.div * d.mod):
                ok = False
                break
        ynumel = numel // s
        period = period or ynumel
        band = max((b for b in range(2, t.window_band + 1) if period % b == 0), default=0)
        if not ok or not band or ynumel % band or ynumel // band > options.gpu.max_grid_y:
            continue
        wl = _rows(launch, s)

        def cfg(b: int, xb: int, nw: int, row: int = s) -> LaunchConfig:
            xb = max(1, min(xb, t.max_xblock, next_power_of_2(row)))
            return LaunchConfig(
                (("YBLOCK", b), ("XBLOCK", xb)), max(1, min(nw, xb // t.window_points_per_warp))
            )

        default = cfg(band, t.window_xblock, t.window_warps)
        fewer = max((b for b in range(2, band) if period % b == 0), default=band)
        grid_y = options.gpu.max_grid_y
        cands = (
            tuple(
                c
                for c in _unique(default, [cfg(band, 512, 2), cfg(fewer, t.window_xblock, t.window_warps)])
                if ynumel % c.block("YBLOCK") == 0 and ynumel // c.block("YBLOCK") <= grid_y
            )
            if options.autotune
            else ()
        )
        out.append(
            Tiling(
                wl,
                False,
                default,
                cands,
                _masked(wl, cands or (default,)),
                _index_dtype(graph, wl, cands or (default,)),
                grid_y,
                unroll=rnumel if launch.kind != "pointwise" else 0,
                walk=band,
                walk_period=period,
            )
        )
    return out


def _rows(launch: ComputeLaunch, s: int) -> ComputeLaunch:
    """A launch's flat x axis as rows (y) of `s` points (x): a transposed access's contiguous run,
    a pooling window's row arithmetic (`x // 6720 % 35` once per row, see `_digit_split`), a
    sliding window's rows. A small reduction to unroll keeps its loops as an r0_ segment."""
    numel = launch.axes[0].numel
    y, x = Axis("y", numel // s), Axis("x", s)
    return launch.with_axes((y, x), tuple(_placed(p, y, x) for p in launch.placements))


def _placed(p: Placement, outer: Axis, inner: Axis | None) -> Placement:
    segs = pointwise_segments(p.node, outer, inner)
    if p.role == "reduction":
        segs = (*segs, Segment(("r0_",), p.node.reduce))
    return Placement(p.node, p.role, segs)


def _unrolled(launch: ComputeLaunch, o: CodegenOptions) -> ComputeLaunch:
    numel, rnumel = launch.axes[0].numel, launch.axes[1].numel
    s = _digit_split(launch, numel, rnumel, o.tuning.row_split_min_points) if o.tile_2d else None
    if s is not None:
        return _rows(launch, s)
    x = Axis("x", numel)
    return launch.with_axes((x,), tuple(_placed(p, x, None) for p in launch.placements))


def _tile_accesses(launch: ComputeLaunch) -> int:
    """Global loads and stores in a reduction kernel's loop body (reads of fused buffers excluded)."""
    produced = launch.producer()
    n = 0
    for p in launch.placements:
        if p.role in ("inner", "reduction"):
            n += len({(ld.buffer, ld.index) for ld in p.node.reads() if ld.buffer not in produced})
            n += int(p.role == "inner" and p.node.output in launch.stores)
    return max(1, n)


def _prev_power_of_2(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n >= 1 else 1


def _pow2_divisor(n: int) -> int:
    return n & -n


def _configs_unrolled(
    launch: ComputeLaunch, o: CodegenOptions
) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    """A few thousand points a program (`unrolled_1d_xblock`, `unrolled_points`): with 16-byte
    loads a few loads in flight per thread and window point. 2D: XBLOCK is the largest power of
    two dividing the row up to `unrolled_row_xblock` (no mask, each row a whole number of 128-byte
    lines for bf16 channels of 64), rows fill the rest."""
    t = o.tuning
    if len(launch.axes) == 1:
        cap = next_power_of_2(launch.axes[0].numel)

        def cfg1(xb: int, w: int) -> LaunchConfig:
            xb = max(1, min(cap, xb, t.max_xblock))
            return LaunchConfig((("XBLOCK", xb),), max(1, min(w, xb // t.unrolled_1d_points_per_warp)))

        default = cfg1(t.unrolled_1d_xblock, t.unrolled_warps)
        return default, _unique(default, [cfg1(512, 4), cfg1(2048, 8)])
    ynumel, xnumel = launch.axes[0].numel, launch.axes[1].numel
    ycap = next_power_of_2(ynumel)
    xb = min(_pow2_divisor(xnumel), t.unrolled_row_xblock, t.max_xblock)
    if xb < t.unrolled_min_xblock:
        xb = min(next_power_of_2(xnumel), t.unrolled_row_xblock, t.max_xblock)

    def cfg(yb: int, w: int) -> LaunchConfig:
        yb = max(1, min(ycap, yb, t.max_yblock))
        return LaunchConfig(
            (("YBLOCK", yb), ("XBLOCK", xb)), max(1, min(w, yb * xb // t.unrolled_points_per_warp))
        )

    default = cfg(max(1, t.unrolled_points // xb), t.unrolled_warps)
    return default, _unique(default, [cfg(max(1, 1024 // xb), 4), cfg(max(1, 2048 // xb), 8)])


def _x_contiguous(along: dict[str, int], ratio: int) -> bool:
    """Whether the tile reads or writes a large share of its data contiguously along x (an outer
    or transposed reduction), so that rows of x are worth widening.

    Each distinct access counts the elements it touches (a broadcast along x, such as a bias
    indexed by r, touches only its own few). An access contiguous along x moves XBLOCK elements
    per memory segment, so narrow tiles waste bandwidth on it; an access contiguous along r is
    indifferent to XBLOCK. So 1/`ratio` as many bytes along x as along r already decide
    (softmax_bias_t: the input along x, the output along r).
    """
    return along["xindex"] > 0 and ratio * along["xindex"] >= along["r0_index"]


def _contiguous_bytes(graph: Graph, launch: ComputeLaunch) -> tuple[dict[str, int], int]:
    """Bytes the tile's distinct accesses touch, by the axis each is contiguous along (xindex,
    r0_index), and the smallest itemsize among those contiguous along x (0: none)."""
    sizes = {a.name: a.numel for a in launch.axes}
    seen: set[tuple[str, Expr]] = set()
    along = {"xindex": 0, "r0_index": 0}
    x_item = 0
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        digits = digits_of(p, sizes)
        for buf, index, _ in _accesses(graph, launch, p):
            d, _ = _unit_digit(index, digits)  # None unless the index is affine in loop variables
            if d is None or d.div != 1 or d.base not in along or (buf, index) in seen:
                continue
            seen.add((buf, index))
            item = graph.buffer(buf).dtype.itemsize
            along[d.base] += _touched(index, p.node.var_sizes) * item
            if d.base == "xindex":
                x_item = min(x_item or item, item)
    return along, x_item


def _touched(index: Expr, var_sizes: dict[str, int]) -> int:
    """How many points an affine index of loop variables can touch: the product of their sizes."""
    return prod(var_sizes.get(atom.name, 1) for atom, _ in linear_form(index).coeffs if isinstance(atom, Var))


# Unary and binary functions that run on the special-function units (exp, log, sqrt, sin, ...).
_SFU_OPS = frozenset(
    {"exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh"}
    | {"sigmoid", "erf", "pow", "atan2"}
)


def _sfu_per_point(launch: ComputeLaunch) -> bool:
    """Whether some point of the tile (not just a row of x) runs a special-function op: one whose
    operands vary along r (`exp(x[...r...] - max)` does; `rsqrt(var[x0] + eps)` does not)."""
    sizes = {a.name: a.numel for a in launch.axes}
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        per_point = {v for v, d in digits_of(p, sizes).items() if d is not None and d.base != "xindex"}
        for e in walk(p.node.value):
            sfu = isinstance(e, (Unary, Binary)) and e.op in _SFU_OPS
            if sfu and any(isinstance(v, Var) and v.name in per_point for v in walk(e)):
                return True
    return False


def _cluster_pays(
    launch: ComputeLaunch, single: LaunchConfig, sfu: bool, x_item: int, o: CodegenOptions
) -> bool:
    """Whether a transposed persistent reduction gains from a cluster of programs over its
    single-program launch `single`, for one of two reasons:
    - `single` holds a multiprocessor alone (the most warps, `persistent_outer_per_thread`
      elements a thread) and the kernel does two or more reductions: the cluster's smaller
      programs overlap one's reductions with the other's loads;
    - every point runs a special function, which keeps `single` to fewer elements, and its run of
      a column (its rows x the itemsize) is shorter than a cache line: the programs together read
      whole lines.
    Otherwise the cluster only constrains scheduling (one reduction, or runs of a line or more:
    the single program wins)."""
    g, t = o.gpu, o.tuning
    threads = single.num_warps * g.warp_size
    xb, rb = single.block("XBLOCK"), single.block("R0_BLOCK")
    alone = single.num_warps >= t.max_warps and xb * rb >= t.persistent_outer_per_thread * threads
    if alone and sum(1 for p in launch.placements if p.role == "reduction") > 1:
        return True
    return sfu and 0 < xb * x_item < g.cache_line_bytes


def _clustered(launch: ComputeLaunch, single: LaunchConfig, o: CodegenOptions) -> LaunchConfig | None:
    """A transposed persistent reduction's tile as a cluster of `cluster_size` programs of
    `cluster_warps` warps: `cluster_elements` elements (32 rows of 1024, 64 of 512, ...) split by
    rows. `_cluster_pays` decides whether it replaces the single-program launch. None when
    clusters are off (or the GPU has none), or a program would get fewer than `cluster_min_rows`
    rows."""
    if not o.use_clusters:
        return None
    t = o.tuning
    rb = single.block("R0_BLOCK")
    xb = min(next_power_of_2(launch.axes[0].numel), t.max_xblock, max(1, t.cluster_elements // rb))
    if xb < t.cluster_min_rows * t.cluster_size:
        return None
    return LaunchConfig((("XBLOCK", xb), ("R0_BLOCK", rb)), t.cluster_warps, num_ctas=t.cluster_size)


# -- configurations ------------------------------------------------------------------------------
def _warps(elements: int, per_warp: int, most: int) -> int:
    """One warp per `per_warp` elements, at least one and at most `most`."""
    return max(1, min(most, elements // per_warp))


def _unique(default: LaunchConfig, cands: list[LaunchConfig]) -> tuple[LaunchConfig, ...]:
    out = [default]
    for c in cands:
        if c not in out:
            out.append(c)
    return tuple(out)


def _configs_1d(launch: ComputeLaunch, o: CodegenOptions) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    t = o.tuning
    cap = next_power_of_2(launch.axes[0].numel)
    xb = min(cap, t.max_xblock)
    default = LaunchConfig((("XBLOCK", xb),), _warps(xb, t.pointwise_points_per_warp, t.pointwise_max_warps))
    cands = [
        LaunchConfig((("XBLOCK", min(cap, b)),), _warps(min(cap, b), t.pointwise_points_per_warp, w))
        for b, w in ((256, 2), (512, 4), (2048, 8))
    ]
    return default, _unique(default, cands)


def _configs_2d(launch: ComputeLaunch, o: CodegenOptions) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    t = o.tuning
    ycap, xcap = next_power_of_2(launch.axes[0].numel), next_power_of_2(launch.axes[1].numel)

    def cfg(yb: int, xb: int) -> LaunchConfig:
        yb, xb = min(ycap, yb), min(xcap, xb)
        return LaunchConfig(
            (("YBLOCK", yb), ("XBLOCK", xb)),
            _warps(yb * xb, t.transpose_points_per_warp, t.pointwise_max_warps),
        )

    default = cfg(min(t.transpose_yblock, t.max_yblock), min(t.transpose_xblock, t.max_xblock))
    return default, _unique(default, [cfg(32, 32), cfg(64, 64), cfg(128, 64), cfg(32, 128)])


def _configs_reduction(
    launch: ComputeLaunch, o: CodegenOptions, *, persistent: bool, outer: bool, sfu: bool = False
) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    g, t = o.gpu, o.tuning
    xcap = next_power_of_2(launch.axes[0].numel)
    rcap = next_power_of_2(launch.axes[1].numel)

    def cfg(xb: int, rb: int) -> LaunchConfig:
        xb, rb = max(1, min(xcap, xb, t.max_xblock)), max(1, min(rcap, rb, t.max_r0_block))
        return LaunchConfig(
            (("XBLOCK", xb), ("R0_BLOCK", rb)), _warps(xb * rb, t.reduction_points_per_warp, t.max_warps)
        )

    if persistent:
        # (choose_tiling may turn a transposed tile into a cluster of programs, keeping this
        # launch as its fallback: see _clustered.)
        # Rows of x hold whole reductions; `persistent_elements` elements, unless the tile is
        # contiguous along x (a transposed reduction), where wider rows make longer memory
        # segments: `persistent_outer_elements` (the most warps, a multiprocessor's registers for
        # one program), or fewer when every point also runs a special-function op (exp, sigmoid,
        # ...): per-point exps would sit between a lone program's load and store with nothing to
        # hide them.
        rb = rcap
        if outer:
            target = t.persistent_outer_sfu_elements if sfu else t.persistent_outer_elements
            per_thread = t.persistent_outer_per_thread
        else:
            target, per_thread = t.persistent_elements, t.persistent_per_thread
        xb = max(1, min(xcap, target // rb, t.max_xblock))
        default = LaunchConfig(
            (("XBLOCK", xb), ("R0_BLOCK", rb)),
            max(1, min(t.max_warps, xb * rb // (g.warp_size * per_thread))),
        )
        cands = [cfg(xb, rb) for xb in (1, 2, 4, 8, 16, 32, 64) if 1024 <= xb * rb <= 16384]
        if outer:
            cands += [cfg(xb, rb) for xb in (32, 64) if xb * rb == t.persistent_outer_elements]
        return default, _unique(default, cands)
    # Looped: about `looped_programs_per_multiprocessor` programs a multiprocessor, else a few
    # programs stream the whole tensor with too few loads in flight; the tile holds about
    # `looped_elements` elements of tile-wide accesses per program.
    programs = _prev_power_of_2(t.looped_programs_per_multiprocessor * g.multiprocessors)
    xb = max(
        1, min(t.looped_max_xblock, t.max_xblock, _prev_power_of_2(max(1, launch.axes[0].numel // programs)))
    )
    rb = max(t.looped_min_r0_block, _prev_power_of_2(t.looped_elements // (xb * _tile_accesses(launch))))
    default = cfg(xb, rb)
    cands = [cfg(1, 2048), cfg(4, 1024), cfg(8, 512), cfg(16, 256), cfg(32, 64), cfg(64, 64), cfg(128, 16)]
    return default, _unique(default, cands)


# -- split reductions -----------------------------------------------------------------------------
def _splittable(launch: ComputeLaunch) -> bool:
    """One r loop (no node inside it needs a finished reduction), reductions whose partial
    results combine with the same reduction (not argmax/argmin, which carry an index), and a
    finished result something stores (else the finishing kernel would have nothing to do)."""
    if not any(
        p.role in ("reduction", "epilogue") and p.node.output in launch.stores for p in launch.placements
    ):
        return False
    produced = launch.producer()
    for p in launch.placements:
        if (
            p.role == "reduction"
            and isinstance(p.node.value, Reduce)
            and p.node.value.op in ("argmax", "argmin")
        ):
            return False
        if p.role in ("inner", "reduction"):
            for b in p.node.read_buffers():
                if b in produced and produced[b].role in ("reduction", "epilogue"):
                    return False
    return True


def _split(
    launch: ComputeLaunch, o: CodegenOptions
) -> tuple[LaunchConfig, int, tuple[LaunchConfig, ...]] | None:
    """(config, chunks, autotune candidates) of a split reduction, or None to keep one program
    per x tile.

    Split when the x tiles alone give fewer than `split_target` programs (an outer reduction
    over few columns, a row sum over few rows). The tile is `split_xblock` wide in x, so that an
    access contiguous along x moves a cache line or more per row. Chunks are counted in blocks
    of a looped tile (`looped_elements` elements of tile-wide accesses): the fewest chunks that
    reach `split_target` programs, each a whole number of blocks (no r mask) and at least
    `split_min_r_blocks` of them. The loop's R0_BLOCK is then widened within a chunk, up to
    `split_max_r0_block` points and `split_wide_elements` elements of tile-wide accesses; one
    warp per `reduction_points_per_warp` elements."""
    if not o.split_target or not _splittable(launch):
        return None
    t = o.tuning
    xnumel, rnumel = launch.axes[0].numel, launch.axes[1].numel
    xb = max(1, min(t.split_xblock, t.max_xblock, next_power_of_2(xnumel)))
    rb = max(t.looped_min_r0_block, _prev_power_of_2(t.looped_elements // (xb * _tile_accesses(launch))))
    rb = max(1, min(rb, t.max_r0_block, next_power_of_2(rnumel)))
    xtiles = cdiv(xnumel, xb)
    if xtiles >= o.split_target or rnumel % rb:
        return None
    blocks = rnumel // rb
    chunks = 0
    # The first divisor of `blocks` that reaches the target (so at most about split_target
    # candidates are tried), else the largest allowed one; the grid's second dimension caps it.
    for d in range(2, min(blocks // max(1, t.split_min_r_blocks), o.gpu.max_grid_y) + 1):
        if blocks % d == 0:
            chunks = d
            if xtiles * d >= o.split_target:
                break
    if chunks < 2 or chunks * xnumel > INT32_MAX:  # partials indexed in int32
        return None
    chunk = rnumel // chunks
    wide = max(
        1,
        min(
            t.max_r0_block,
            t.split_max_r0_block,
            _prev_power_of_2(max(1, t.split_wide_elements // (xb * _tile_accesses(launch)))),
        ),
    )
    while wide > rb and chunk % wide:
        wide //= 2
    rb = max(rb, wide)

    def cfg(x: int, r: int) -> LaunchConfig:
        return LaunchConfig(
            (("XBLOCK", x), ("R0_BLOCK", r)), _warps(x * r, t.reduction_points_per_warp, t.max_warps)
        )

    # Candidates keep the chunks (the grid's second dimension and the partials' layout) and an
    # R0_BLOCK that divides a chunk (the chunk loop has no r mask): the tile halved or doubled
    # along either axis, and the same elements spread the other way.
    xcap, rcap = min(t.max_xblock, next_power_of_2(xnumel)), min(t.max_r0_block, next_power_of_2(rnumel))
    cands = [cfg(xb, rb)]
    for x, r in (
        (xb, rb // 2),
        (xb, rb * 2),
        (xb // 2, rb),
        (xb * 2, rb),
        (xb * 2, rb // 2),
        (xb // 2, rb * 2),
    ):
        if 1 <= x <= xcap and 1 <= r <= rcap and chunk % r == 0 and cfg(x, r) not in cands:
            cands.append(cfg(x, r))
    return cands[0], chunks, tuple(cands)


def finish_tiling(t: Tiling, o: CodegenOptions) -> Tiling:
    """The kernel that finishes a split reduction: a persistent [XBLOCK, chunks] tile of partial
    results per x tile, then the kernel's epilogue."""
    tu = o.tuning
    xnumel = t.launch.axes[0].numel
    rb = next_power_of_2(t.split)
    # About `finish_programs_per_multiprocessor` programs (x tiles) a multiprocessor or more, one
    # warp per `reduction_points_per_warp` partials.
    programs = _prev_power_of_2(tu.finish_programs_per_multiprocessor * o.gpu.multiprocessors)
    spread = _prev_power_of_2(max(1, xnumel // programs))
    xb = max(1, min(tu.max_xblock, next_power_of_2(xnumel), max(1, tu.finish_elements // rb), spread))
    cfg = LaunchConfig(
        (("XBLOCK", xb), ("R0_BLOCK", rb)), _warps(xb * rb, tu.reduction_points_per_warp, tu.finish_max_warps)
    )
    masked = tuple(a for a, n, b in (("x", xnumel, xb), ("r0_", t.split, rb)) if n % b)
    return Tiling(t.launch, True, cfg, (), masked, t.index_dtype, t.grid_y_max, split=t.split, part="finish")


# -- index dtype ---------------------------------------------------------------------------------
def _index_dtype(graph: Graph, launch: ComputeLaunch, configs: tuple[LaunchConfig, ...]) -> DType:
    """int32 when every value the kernel's index arithmetic computes provably fits it, else int64.

    Bounded over the whole launch grid, not just the loop box: lanes past an axis' end (masked
    off from memory) compute their indices too, so each axis index reaches its tiles x block
    (`pid * XBLOCK + arange`), and the outermost loop variable of an axis past its loop's size.
    Every intermediate of every index, `index()` value and integer value arithmetic emitted as
    index arithmetic counts (`bounds.index_magnitude`: the final interval alone misses
    `(x + 2**31 - 8) // 2**28`, whose sum leaves int32 on its way to a small index); an indirect
    load's value by what keeps its access in bounds where it is a term of the index, else by its
    dtype's range (`_valid_run`)."""
    padded = {
        a.name: max(cdiv(a.numel, c.block(a.block)) * c.block(a.block) for c in configs)
        if all(a.block in dict(c.blocks) for c in configs)
        else next_power_of_2(a.numel)
        for a in launch.axes
    }
    if prod(padded.values()) > INT32_MAX:  # the grid's lanes counted, as Inductor counts numel
        return DType.int64

    def load_range(ld: Load) -> tuple[int, int]:
        return INT_RANGE.get(graph.buffer(ld.buffer).dtype, INT_RANGE[DType.int64])

    for p in launch.placements:
        ranges = _grid_ranges(p, launch, padded)
        exprs: list[tuple[Expr, str | None]] = [(p.node.store.index, None)]
        exprs += [(e.index, e.buffer if isinstance(e, Load) else None) for e in walk(p.node.value)
                  if isinstance(e, Load | IndexValue)]  # fmt: skip
        exprs += [(e, None) for e in _index_arithmetic(p.node.value, ranges)]
        for index, buf in exprs:
            m = index_magnitude(index, ranges, _valid_run(graph, index, buf, p.node.var_sizes, load_range))
            if m is None or m > INT32_MAX:
                return DType.int64
    return DType.int32


def _valid_run(
    graph: Graph,
    index: Expr,
    buffer: str | None,
    box: dict[str, int],
    load_range: Callable[[Load], tuple[int, int]],
) -> Callable[[Load], tuple[int, int]]:
    """Load values in an index of `buffer`: a load that is a term of the index takes only the values
    that keep the access in bounds (`bounds.indirect_bounds`: an embedding's `8*ids[i] + j` in a
    table under 2**31 elements is int32 arithmetic whatever the dtype of ids), or 0 (a masked lane
    loads `other`); any other load its dtype's range."""
    if buffer is None:
        return load_range
    valid = indirect_bounds(index, graph.buffer(buffer).storage_size, box, load_range)

    def bounded(ld: Load) -> tuple[int, int]:
        lo, hi = load_range(ld)
        r = valid.get(to_text(ld))
        return (lo, hi) if r is None else (max(lo, min(r[0], 0)), min(hi, max(r[1], 0)))

    return bounded


def _grid_ranges(p: Placement, launch: ComputeLaunch, padded: dict[str, int]) -> dict[str, int]:
    """Each loop variable's range over the launch grid: its digit `(axis // div) % mod` of its
    axis' padded extent (a flat segment: `outer * inner_numel + inner` over both padded axes)."""
    numel = {a.name: a.numel for a in launch.axes}
    ranges: dict[str, int] = {}
    for seg in p.segments:
        sizes = [lv.size for lv in seg.loops]
        if not all(a in numel for a in seg.axes):  # an unrolled reduction's points: constants
            ranges.update({lv.name: lv.size for lv in seg.loops})
            continue
        extent = prod(numel[a] for a in seg.axes)
        grid = padded[seg.axes[0]]
        for a in seg.axes[1:]:
            grid = (grid - 1) * numel[a] + padded[a]
        for lv, d in zip(seg.loops, decompose(sizes, axes_base(seg.axes), extent), strict=True):
            ranges[lv.name] = 1 if d is None else d.mod if d.mod is not None else (grid - 1) // d.div + 1
    return ranges


def _index_arithmetic(e: Expr, ranges: dict[str, int]) -> Iterator[Expr]:
    """The largest sub-expressions of a value that are integer arithmetic of loop variables (the
    emitter may compute them in the index dtype: `KernelEmitter.value`)."""
    if index_ops(e, ranges):
        yield e
        return
    if isinstance(e, Load):  # its index is an index of its own
        return
    for c in e.children():
        yield from _index_arithmetic(c, ranges)
