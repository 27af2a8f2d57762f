"""Which tile a compute launch takes (`choose_tiling`): 1D or 2D pointwise tiles, a row split, an
unrolled, persistent or looped reduction, a split reduction; and the sliding-window row splits
(`window_tilings`) that `codegen.choice` weighs against it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from fuseopt.codegen.common import next_power_of_2
from fuseopt.codegen.index_width import choose_index_dtype, masked_axes
from fuseopt.codegen.indexing import Digit, digit_of
from fuseopt.codegen.launch_configs import (
    cluster_pays,
    clustered_config,
    configs_1d,
    configs_2d,
    configs_reduction,
    configs_unrolled,
    contiguous_bytes,
    launch_accesses,
    sfu_per_point,
    split_reduction,
    unique_configs,
    unit_digit,
    x_contiguous,
)
from fuseopt.codegen.schedule import (
    Axis,
    ComputeLaunch,
    Placement,
    Segment,
    digits_of,
    pointwise_segments,
)
from fuseopt.codegen.tiling import CodegenOptions, LaunchConfig, Tiling
from fuseopt.ir.expr import Reduce, walk
from fuseopt.ir.graph import Graph


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
            return _tiling(graph, launch, *configs_unrolled(launch, options), options, row_split=True)
        configs = configs_2d(launch, options) if len(launch.axes) == 2 else configs_1d(launch, options)
        return _tiling(graph, launch, *configs, options)
    if _unrollable(launch, options):
        rnumel = launch.axes[1].numel
        launch = _unrolled(launch, options)
        return _tiling(graph, launch, *configs_unrolled(launch, options), options, unroll=rnumel)
    persistent = launch.axes[1].numel <= options.tuning.persistent_rnumel
    along, x_item = contiguous_bytes(graph, launch)
    outer = x_contiguous(along, options.tuning.outer_x_ratio)
    split = None if persistent else split_reduction(launch, options)
    if split is not None:
        cfg, chunks, cands = split
        autotune = cands if options.autotune else ()
        return Tiling(
            launch,
            False,
            cfg,
            autotune,
            masked_axes(launch, autotune or (cfg,)),
            choose_index_dtype(graph, launch, autotune or (cfg,)),
            options.gpu.max_grid_y,
            split=chunks,
            part="partial",
        )
    sfu = outer and sfu_per_point(launch)
    default, cands = configs_reduction(launch, options, persistent=persistent, outer=outer, sfu=sfu)
    fallback = None
    cluster = clustered_config(launch, default, options) if persistent and outer else None
    if cluster is not None and cluster_pays(launch, default, sfu, x_item, options):
        default, fallback = cluster, default
        cands = unique_configs(default, list(cands))
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
        choose_index_dtype(graph, launch, configs),
        options.gpu.max_grid_y,
        unroll=unroll,
        row_split=row_split,
        fallback=None if autotune else fallback,
    )
    return replace(t, masked=masked_axes(launch, t.configs))  # masks that hold for every launch


def _maybe_2d(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> ComputeLaunch:
    if not options.tile_2d:
        return launch
    numel = launch.axes[0].numel
    coalesced = 0
    weights: dict[int, int] = {}
    for p in launch.placements:
        digits = digits_of(p, {"x": numel})
        for _, index, nbytes in launch_accesses(graph, launch, p):
            d, fastest = unit_digit(index, digits)
            if d is None:
                continue
            if d.div == 1:
                coalesced += nbytes
            elif fastest:
                weights[d.div] = weights.get(d.div, 0) + nbytes
    if not coalesced or not weights:
        return launch
    return _rows(launch, max(sorted(weights), key=lambda s: weights[s]))


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
    flat = flat_digits(launch, numel, rnumel)
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


def flat_digits(launch: ComputeLaunch, numel: int, rnumel: int) -> set[Digit]:
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
    flat = flat_digits(launch, numel, rnumel)
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
                for c in unique_configs(
                    default, [cfg(band, 512, 2), cfg(fewer, t.window_xblock, t.window_warps)]
                )
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
                masked_axes(wl, cands or (default,)),
                choose_index_dtype(graph, wl, cands or (default,)),
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
