"""Which tile a compute launch takes (`choose_tiling`: of the strategies of `strategies.TABLE`
that apply, the one the cost model says is fastest), the finishing kernel of a split reduction
(`finish_tiling`), and the sliding-window row splits (`window_tilings`) that `codegen.choice`
weighs against it.
"""

from __future__ import annotations

import dataclasses
import math

from fuseopt.codegen.common import next_power_of_2
from fuseopt.codegen.cost import estimate
from fuseopt.codegen.index_width import choose_index_dtype, masked_axes
from fuseopt.codegen.launch_configs import finish_config, unique_configs
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies import (
    TABLE,
    Applies,
    Planned,
    SlidingWindow,
    SplitFinish,
    SplitPartial,
    Strategy,
)
from fuseopt.codegen.strategies.rows import flat_digits, rows
from fuseopt.codegen.strategies.unrolled import unrollable
from fuseopt.codegen.tiling import Tiling
from fuseopt.ir.graph import Graph


def choose_tiling(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Tiling:
    """The strategy of `TABLE` that applies with the least estimated time (`codegen.cost`), the
    first in the table's order of those within `cost_tie_pct` percent of the least (the
    estimate's resolution: the table's order breaks a tie); `options.strategy` where it applies."""
    forced = forced_tiling(graph, launch, options)
    if forced is not None:
        return forced
    applicable: list[tuple[str, Tiling]] = []
    for applies in TABLE:
        planned = applies(graph, launch, options)
        if planned is not None:
            applicable.append((strategy_name(applies), tiling_of(graph, planned, options)))
    assert applicable, f"no strategy for a {launch.kind} launch"  # looped_row takes every reduction
    if len(applicable) == 1:
        return applicable[0][1]
    times = [estimate(graph, t, options).us for _, t in applicable]
    bound = min(times) * (1 + options.tuning.cost_tie_pct / 100)
    pick = next(i for i, us in enumerate(times) if us <= bound)
    weighed = tuple(
        (name, us, i == pick) for i, ((name, _), us) in enumerate(zip(applicable, times, strict=True))
    )
    return dataclasses.replace(applicable[pick][1], weighed=weighed)


def forced_tiling(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Tiling | None:
    """The tiling of `options.strategy` where it is a strategy of `TABLE` that applies to the
    launch; None otherwise (none forced, a window, or it does not apply)."""
    if options.strategy is None:
        return None
    for applies in TABLE:
        if strategy_name(applies) == options.strategy:
            planned = applies(graph, launch, options)
            return None if planned is None else tiling_of(graph, planned, options)
    return None


def strategy_name(applies: Applies) -> str:
    """A strategy's name (`--strategy`, the kernel header's estimates): its module's."""
    return applies.__module__.rsplit(".", 1)[-1]


def tiling_of(graph: Graph, planned: Planned[Strategy], options: CodegenOptions) -> Tiling:
    """The Tiling of a planned strategy: autotune candidates where autotuning, masks and index
    width that hold for every launch it may run with."""
    autotune = planned.candidates if options.autotune else ()
    fallback = None if autotune else planned.fallback
    configs = autotune or ((planned.config,) if fallback is None else (planned.config, fallback))
    launch = planned.launch
    return Tiling(
        launch,
        planned.strategy,
        planned.config,
        autotune,
        masked_axes(launch, configs),
        choose_index_dtype(graph, launch, configs),
        options.gpu.max_grid_y,
        fallback=fallback,
    )


def finish_tiling(t: Tiling, o: CodegenOptions) -> Tiling:
    """The kernel that finishes a split reduction `t`: a persistent [XBLOCK, chunks] tile of
    partial results per x tile, then the kernel's epilogue."""
    assert isinstance(t.strategy, SplitPartial)
    chunks = t.strategy.chunks
    xnumel = t.launch.axes[0].numel
    cfg = finish_config(xnumel, chunks, o)
    xb, rb = cfg.block("XBLOCK"), cfg.block("R0_BLOCK")
    masked = tuple(a for a, n, b in (("x", xnumel, xb), ("r0_", chunks, rb)) if n % b)
    return Tiling(t.launch, SplitFinish(chunks), cfg, (), masked, t.index_dtype, t.grid_y_max)


def window_tilings(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> list[Tiling]:
    """Sliding-window tilings to try for a pointwise launch or a small reduction to unroll, best
    first (`codegen.choice` keeps the first that carries enough of a row's loads from the row
    before, counted by `codegen.windows.census`).

    Rows: the flat index splits at a divisor s that its `//` digits use, so a row is one value of
    the digits above s (an image row of a channels-last tensor, s = W * C). The tile is XBLOCK
    points of a row (up to `window_xblock`); a program walks `band` consecutive rows. Bands are
    aligned to the period of the row digits (35 image rows), the largest band up to `window_band`
    that divides it."""
    t = options.tuning
    if not (t.window_min_row and t.window_band):
        return []
    if launch.kind != "pointwise" and not unrollable(launch, options):
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
        wl = rows(launch, s)

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
                SlidingWindow(band, period, rnumel if launch.kind != "pointwise" else 0),
                default,
                cands,
                masked_axes(wl, cands or (default,)),
                choose_index_dtype(graph, wl, cands or (default,)),
                grid_y,
            )
        )
    return out
