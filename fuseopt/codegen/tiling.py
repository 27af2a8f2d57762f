"""Tile shapes and launch parameters of each compute kernel (deterministic, per shape).

Pointwise kernels are 1D unless reads and writes disagree on which flat position is contiguous
(a transpose): then a 2D tile [YBLOCK, XBLOCK] splits the flat index at the transposed access's
contiguous loop so both sides are coalesced (Triton picks each access's layout from its
contiguity). Reductions are persistent (one [XBLOCK, R0_BLOCK] tile holds whole rows) up to
`persistent_rnumel`, looped otherwise; the tile leans towards x when the reduced data is
contiguous along x (outer reductions). Masks are dropped on an axis whose size every block
candidate divides. Index arithmetic is int64 only where some intermediate of an index can leave int32.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
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

GRID_Y_MAX = 65535  # CUDA's limit on a launch grid's second dimension


DEFAULT_MULTIPROCESSORS = 132  # an H200


@dataclass(frozen=True)
class CodegenOptions:
    """Knobs of the generator (tests shrink the blocks so that tiny shapes still take every path)."""

    autotune: bool = False
    persistent_rnumel: int = 1024  # largest rnumel kept in registers (persistent reduction)
    max_xblock: int = 1024
    max_yblock: int = 64
    max_r0_block: int = 1024
    tile_2d: bool = True  # allow 2D tiles for transposes
    unroll_rnumel: int = 16  # largest rnumel of a reduction unrolled at generation time (0: never)
    # The target GPU's multiprocessors (an H200 has 132; `fuseopt bench` generates for the GPU it
    # times on, `fuseopt optimize --multiprocessors` sets it): split reductions aim at 16 programs
    # each, looped reductions at about 4 (the power of two below, 512 on an H200), the kernel that
    # finishes a split at about 1 (128).
    multiprocessors: int = DEFAULT_MULTIPROCESSORS
    # Split reductions: a looped reduction with fewer x tiles than `split_programs` programs is
    # cut along r into chunks reduced by a partial kernel and finished by a second kernel (16
    # programs a multiprocessor keep enough loads in flight). None: 16 x multiprocessors; 0: never.
    split_programs: int | None = None

    @property
    def split_target(self) -> int:
        return 16 * self.multiprocessors if self.split_programs is None else self.split_programs

    split_min_r_blocks: int = 4  # each chunk covers at least this many R0_BLOCKs
    # Sliding windows (see window_tilings): rows of at least `window_min_row` points, walked
    # `window_band` rows (at most) per program; 0: never.
    window_min_row: int = 256
    window_band: int = 8
    # Register windows (see codegen.cells): at most this many cells (rows x columns) a program,
    # at most `window_cols` columns and `window_rows` rows of them; 0: never. `window_shape`
    # (rows, columns) takes that shape alone (explore rounds).
    window_cells: int = 25
    window_cols: int = 7
    window_rows: int = 5
    window_shape: tuple[int, int] | None = None
    # Points of a column a register window's program covers (a power of two; the column must be
    # a multiple): 64, one warp, the slice measured (explore round 34).
    window_slice: int = 64
    # Thread-block clusters for the transposed persistent reductions that do more than one
    # reduction or a special function at every point (see _clustered).
    clusters: bool = True


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
        return all(cdiv(axes[0].numel, c.block("YBLOCK")) <= GRID_Y_MAX for c in self.configs)

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
            else _digit_split(launch, launch.axes[0].numel, 1)
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
    persistent = launch.axes[1].numel <= options.persistent_rnumel
    along, x_item = _contiguous_bytes(graph, launch)
    outer = _x_contiguous(along)
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
            split=chunks,
            part="partial",
        )
    sfu = outer and _sfu_per_point(launch)
    default, cands = _configs_reduction(launch, options, persistent=persistent, outer=outer, sfu=sfu)
    fallback = None
    cluster = _clustered(launch, default, options) if persistent and outer else None
    if cluster is not None and _cluster_pays(launch, default, sfu, x_item):
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
        unroll,
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
    if not 1 <= rnumel <= o.unroll_rnumel:
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


def _digit_split(launch: ComputeLaunch, numel: int, rnumel: int) -> int | None:
    """Where to split the flat x index of an unrolled reduction into (y, x) so that all its `//`
    and `%` arithmetic (the window's bounds checks: `x // 6720 % 35` for a channels-last image row)
    runs on the [YBLOCK, 1] column of row indices, once per row, instead of once per element.

    The split s is the gcd of every divisor applied to the flat index: each `x // d` digit is then
    a digit of the row index alone (`y // (d / s)`); a bare `x % m` needs m | s (it falls on x).
    Only when the x tile keeps at least 16 points (a channels-last image: s = channels)."""
    flat = _flat_digits(launch, numel, rnumel)
    divs = {d.div for d in flat if d.div > 1}
    mods = {d.mod for d in flat if d.div == 1 and d.mod is not None}
    if not divs:
        return None
    s = 0
    for div in sorted(divs):
        s = math.gcd(s, div)
    if s < 16 or s >= numel or numel % s or any(s % m for m in mods):
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
    points of a row (up to 1024, 2 KiB of bfloat16: 16-byte loads for 4 warps); a program walks
    `band` consecutive rows. Bands are aligned to the period of the row digits (35 image rows),
    the largest band up to `window_band` that divides it. On an H200, the hand-written form of
    this kernel ran avgpool_cl at 69% of the copy bandwidth, against 57% for 2D tiles; the
    generated one runs at 62-63% where the window is a chain of additions (loads carried) and at
    67-69% where it is a reduction (row partial results carried; benchmarks/results)."""
    if not (options.window_min_row and options.window_band):
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
        if s < options.window_min_row or s >= numel or numel % s:
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
        band = max((b for b in range(2, options.window_band + 1) if period % b == 0), default=0)
        if not ok or not band or ynumel % band or ynumel // band > GRID_Y_MAX:
            continue
        wl = _rows(launch, s)

        def cfg(b: int, xb: int, nw: int, row: int = s) -> LaunchConfig:
            xb = max(1, min(xb, options.max_xblock, next_power_of_2(row)))
            return LaunchConfig((("YBLOCK", b), ("XBLOCK", xb)), max(1, min(nw, xb // 256)))

        # 1024 points and 4 warps: 0.0451 ms on avgpool_cl, against 0.0452 for 512 points and 2
        # warps, 0.0519 for 2048 and 8, 0.0468 for 8 warps (benchmarks/results/explore round 5).
        default = cfg(band, 1024, 4)
        fewer = max((b for b in range(2, band) if period % b == 0), default=band)
        cands = (
            tuple(
                c
                for c in _unique(default, [cfg(band, 512, 2), cfg(fewer, 1024, 4)])
                if ynumel % c.block("YBLOCK") == 0 and ynumel // c.block("YBLOCK") <= GRID_Y_MAX
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
    s = _digit_split(launch, numel, rnumel) if o.tile_2d else None
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
    """About 2048 points a program and 4 warps: with 16-byte loads that is 2-4 loads in flight per
    thread and window point. 2D: XBLOCK is the largest power of two dividing the row (no mask, each
    row a whole number of 128-byte lines for bf16 channels of 64), rows fill the rest."""
    if len(launch.axes) == 1:
        cap = next_power_of_2(launch.axes[0].numel)

        def cfg1(xb: int, w: int) -> LaunchConfig:
            xb = max(1, min(cap, xb, o.max_xblock))
            return LaunchConfig((("XBLOCK", xb),), max(1, min(w, xb // 128)))

        default = cfg1(1024, 4)
        return default, _unique(default, [cfg1(512, 4), cfg1(2048, 8)])
    ynumel, xnumel = launch.axes[0].numel, launch.axes[1].numel
    ycap = next_power_of_2(ynumel)
    xb = min(_pow2_divisor(xnumel), 128, o.max_xblock)
    if xb < 16:
        xb = min(next_power_of_2(xnumel), 128, o.max_xblock)

    def cfg(yb: int, w: int) -> LaunchConfig:
        yb = max(1, min(ycap, yb, o.max_yblock))
        return LaunchConfig((("YBLOCK", yb), ("XBLOCK", xb)), max(1, min(w, yb * xb // 256)))

    # 32 rows of 64 bf16 channels for avgpool_cl: 0.0496 ms on an H200, against 0.0587 ms for 64
    # rows (16 rows 0.0495, 8 rows 0.0557).
    default = cfg(max(1, 2048 // xb), 4)
    return default, _unique(default, [cfg(max(1, 1024 // xb), 4), cfg(max(1, 2048 // xb), 8)])


def _x_contiguous(along: dict[str, int]) -> bool:
    """Whether the tile reads or writes a large share of its data contiguously along x (an outer
    or transposed reduction), so that rows of x are worth widening.

    Each distinct access counts the elements it touches (a broadcast along x, such as a bias
    indexed by r, touches only its own few). An access contiguous along x moves XBLOCK elements
    per memory segment, so narrow tiles waste bandwidth on it (on an H200 a bare transposed float32
    read ran at 57%, 66% and 73% of the read ceiling with 8, 16 and 32 rows, explore round 10); an
    access contiguous along r is indifferent to XBLOCK. So half as many bytes along x as along r
    already decide (softmax_bias_t: the input along x, the output along r).
    """
    return along["xindex"] > 0 and 2 * along["xindex"] >= along["r0_index"]


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


def _cluster_pays(launch: ComputeLaunch, single: LaunchConfig, sfu: bool, x_item: int) -> bool:
    """Whether a transposed persistent reduction gains from a cluster of two programs over its
    single-program launch `single`, for one of two reasons:
    - `single` holds a multiprocessor alone (8 warps, 128 elements a thread) and the kernel does
      two or more reductions: the cluster's two smaller programs overlap one's reductions with the
      other's loads;
    - every point runs a special function, which keeps `single` to 16384 elements, and its run of
      a column (its rows x the itemsize) is shorter than a 128-byte line: the pair of programs
      reads whole lines.
    Otherwise the cluster only constrains scheduling. On an H200 (explore rounds 19, 23): two
    reductions, no special function: layernorm_t 82.8% of copy against 80.0% (1024 columns),
    85.7% against 71.8% (512), 86.3% against 68.7% (256); softmax_bias_t 78.3% against 76.4%
    with 16 rows of 1024 (64-byte runs), but 71.6% against 79.9% with 32 rows of 512 and 62.4%
    against 64.9% with 64 of 256 (128- and 256-byte runs); one reduction (RMS norm, column
    mean): the single program wins by 1.5-3%."""
    threads = single.num_warps * 32
    xb, rb = single.block("XBLOCK"), single.block("R0_BLOCK")
    alone = single.num_warps >= 8 and xb * rb >= 128 * threads
    if alone and sum(1 for p in launch.placements if p.role == "reduction") > 1:
        return True
    return sfu and 0 < xb * x_item < 128


def _clustered(launch: ComputeLaunch, single: LaunchConfig, o: CodegenOptions) -> LaunchConfig | None:
    """A transposed persistent reduction's tile as a cluster of two programs, 4 warps each: 32768
    elements (32 rows of 1024, 64 of 512, ...) split by rows, 128 elements a thread (about
    190-250 registers: two programs a multiprocessor). `_cluster_pays` decides whether it
    replaces the single-program launch. None when clusters are off, or a program would get fewer
    than 8 rows.

    Shapes measured on an H200 (explore rounds 18-19, % of copy, layernorm_t / softmax_bias_t at
    1024 columns): this one 82.8% / 76.8-78.3%; clusters of 4 or 8 programs, of 2 programs of 8
    warps, or of programs of 8 rows lose (46-78%)."""
    if not o.clusters:
        return None
    rb = single.block("R0_BLOCK")
    xb = min(next_power_of_2(launch.axes[0].numel), o.max_xblock, max(1, 32768 // rb))
    if xb < 16:
        return None
    return LaunchConfig((("XBLOCK", xb), ("R0_BLOCK", rb)), 4, num_ctas=2)


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
    launch: ComputeLaunch, o: CodegenOptions, *, persistent: bool, outer: bool, sfu: bool = False
) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    xcap = next_power_of_2(launch.axes[0].numel)
    rcap = next_power_of_2(launch.axes[1].numel)

    def cfg(xb: int, rb: int) -> LaunchConfig:
        xb, rb = max(1, min(xcap, xb, o.max_xblock)), max(1, min(rcap, rb, o.max_r0_block))
        return LaunchConfig((("XBLOCK", xb), ("R0_BLOCK", rb)), _warps(xb * rb // 2))

    if persistent:
        # (choose_tiling may turn a transposed tile into a cluster of two programs, keeping this
        # launch as its fallback: see _clustered.)
        # Rows of x hold whole reductions; 8192 elements with 32 a thread, unless the tile is
        # contiguous along x (a transposed reduction), where wider rows make longer memory
        # segments: 32768 elements (8 warps, 128 a thread), or 16384 (4 warps) when every point
        # also runs a special-function op (exp, sigmoid, ...). At 32 x 1024 a program holds
        # 184-226 registers a thread, one program a multiprocessor, and per-point exps then sit
        # between each program's load and store with nothing to hide them. On an H200 (explore
        # rounds 11-14; % of copy, or ms): softmax_bias_t 71% with 8 rows x 8 warps, 76-77% with
        # 16 x 4, 67% with 32 x 8; layernorm+sigmoid 0.0826 ms with 16 x 8, 0.0857 with 32 x 8;
        # layernorm_t 78-80% with 16 x 4, 80-81% with 32 x 8; an RMS norm 0.0805 -> 0.0770 ms and
        # a column mean 0.0506 -> 0.0440 ms from 16 x 4 to 32 x 8.
        rb = rcap
        target, per_thread = ((16384 if sfu else 32768), 128) if outer else (8192, 32)
        xb = max(1, min(xcap, target // rb, o.max_xblock))
        default = LaunchConfig(
            (("XBLOCK", xb), ("R0_BLOCK", rb)), max(1, min(8, xb * rb // (32 * per_thread)))
        )
        cands = [cfg(xb, rb) for xb in (1, 2, 4, 8, 16, 32, 64) if 1024 <= xb * rb <= 16384]
        if outer:
            cands += [cfg(xb, rb) for xb in (32, 64) if xb * rb == 32768]
        return default, _unique(default, cands)
    # Looped: about four programs a multiprocessor (512 on an H200's 132), else a few
    # programs stream the whole tensor with too few loads in flight (64 programs of 64 rows ran
    # tsum at 57% of the copy bandwidth); the tile holds ~8192 elements of tile-wide accesses per
    # program (tsum, 2 loads: 8 x 512; three_layouts_mean, 3 loads and a store: 16 x 128; both
    # measured best of their sweeps on an H200) with one warp per 512 elements.
    programs = _prev_power_of_2(4 * o.multiprocessors)
    xb = max(1, min(64, o.max_xblock, _prev_power_of_2(max(1, launch.axes[0].numel // programs))))
    rb = max(16, _prev_power_of_2(8192 // (xb * _tile_accesses(launch))))
    default = cfg(xb, rb)
    default = LaunchConfig(
        default.blocks, max(1, min(8, default.block("XBLOCK") * default.block("R0_BLOCK") // 512))
    )
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
    over few columns, a row sum over few rows). The tile is 32 wide in x, so that an access
    contiguous along x moves 128 bytes per row. Chunks are counted in blocks of ~8192 elements
    of tile-wide accesses: the fewest chunks that reach `split_target` programs, each a whole
    number of blocks (no r mask) and at least `split_min_r_blocks` of them. The loop's R0_BLOCK
    is then widened within a chunk, up to 256 points and 32768 elements of tile-wide accesses
    (an access contiguous along r moves 1 KB of float32); one warp per 512 elements, at most 8.
    On an H200: three_layouts_mean 16 x 256 programs, 0.156 -> 0.139 ms (benchmarks/results);
    its R0_BLOCK 64 -> 256 (8 warps), 0.1480-0.1485 -> 0.1399 ms, 86% -> 91% of copy, and
    tsum's 128 -> 256, 0.0781-0.0784 -> 0.0772-0.0773 ms (explore round 17, twice)."""
    if not o.split_target or not _splittable(launch):
        return None
    xnumel, rnumel = launch.axes[0].numel, launch.axes[1].numel
    xb = max(1, min(32, o.max_xblock, next_power_of_2(xnumel)))
    rb = max(16, _prev_power_of_2(8192 // (xb * _tile_accesses(launch))))
    rb = max(1, min(rb, o.max_r0_block, next_power_of_2(rnumel)))
    xtiles = cdiv(xnumel, xb)
    if xtiles >= o.split_target or rnumel % rb:
        return None
    blocks = rnumel // rb
    chunks = 0
    # The first divisor of `blocks` that reaches the target (so at most about split_target
    # candidates are tried), else the largest allowed one; the grid's second dimension caps it.
    for d in range(2, min(blocks // max(1, o.split_min_r_blocks), GRID_Y_MAX) + 1):
        if blocks % d == 0:
            chunks = d
            if xtiles * d >= o.split_target:
                break
    if chunks < 2 or chunks * xnumel > INT32_MAX:  # partials indexed in int32
        return None
    chunk = rnumel // chunks
    wide = max(1, min(o.max_r0_block, 256, _prev_power_of_2(max(1, 32768 // (xb * _tile_accesses(launch))))))
    while wide > rb and chunk % wide:
        wide //= 2
    rb = max(rb, wide)

    def cfg(x: int, r: int) -> LaunchConfig:
        return LaunchConfig((("XBLOCK", x), ("R0_BLOCK", r)), max(1, min(8, x * r // 512)))

    # Candidates keep the chunks (the grid's second dimension and the partials' layout) and an
    # R0_BLOCK that divides a chunk (the chunk loop has no r mask): the tile halved or doubled
    # along either axis, and the same elements spread the other way.
    xcap, rcap = min(o.max_xblock, next_power_of_2(xnumel)), min(o.max_r0_block, next_power_of_2(rnumel))
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
    xnumel = t.launch.axes[0].numel
    rb = next_power_of_2(t.split)
    # About one program (x tile) a multiprocessor or more (128 on an H200's 132), one warp per
    # 512 partials: on an H200, tsum's 4096 results in 16 programs of 256 x 4 warps took 0.0791
    # ms with its partial kernel, in 128 of 32 x 1 warp 0.0783 ms; three_layouts_mean's 8192 in
    # 128 of 64 x 2 warps 0.1481 against 0.1487 ms (explore round 8)
    spread = _prev_power_of_2(max(1, xnumel // _prev_power_of_2(o.multiprocessors)))
    xb = max(1, min(o.max_xblock, next_power_of_2(xnumel), max(1, 4096 // rb), spread))
    cfg = LaunchConfig((("XBLOCK", xb), ("R0_BLOCK", rb)), max(1, min(4, xb * rb // 512)))
    masked = tuple(a for a, n, b in (("x", xnumel, xb), ("r0_", t.split, rb)) if n % b)
    return Tiling(t.launch, True, cfg, (), masked, t.index_dtype, split=t.split, part="finish")


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
