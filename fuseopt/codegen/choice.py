"""Which kernel shape a compute launch takes: the first sliding window that carries enough from
row to row, unless a register window loads fewer values a point; else `tile_shapes.choose_tiling`
(the strategy the cost model says is fastest). `candidates`: every shape it could take.

The loads a window shape needs are counted from the IR (`codegen.windows.census`), not from
emitted code. The wrapper then renders the chosen tiling.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from fuseopt.codegen.index_width import choose_index_dtype, masked_axes
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies import TABLE, RegisterWindow, register_window, sliding_window
from fuseopt.codegen.tile_shapes import choose_tiling, forced_tiling, tiling_of, window_tilings
from fuseopt.codegen.tiling import CodegenOptions, Tiling
from fuseopt.codegen.windows.census import cell_loads, row_loads
from fuseopt.codegen.windows.register import cell_tilings
from fuseopt.codegen.windows.sliding import Key
from fuseopt.ir.graph import Graph


def choose(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> tuple[Tiling, dict[Key, Key]]:
    """The first sliding window where at least 1/`window_carry_ratio` of the values a row needs
    (loads, points of an unrolled reduction) come from the row before (and at least one), unless
    a register window (`codegen.windows.register`) whose cells share at least 1/`cells_share_ratio` of their
    loads loads fewer values a point of the output than it (or than the kernel's own loads when
    no sliding window qualifies): then the register window that loads the fewest, points computed
    twice by overlapping bands or chunks counted (`Cells.waste`); else `choose_tiling`'s tile.
    `options.strategy`, where it applies, before all of these: a strategy of the table, or
    "sliding_window" (the first row split that carries a value from row to row) or
    "register_window" (the cells that load the fewest values a point)."""
    forced = forced_tiling(graph, launch, options)
    if forced is not None:  # `options.strategy` applies: no window either
        return forced, {}
    t = options.tuning
    sliding, cells = options.strategy == "sliding_window", options.strategy == "register_window"
    window: tuple[Tiling, dict[Key, Key]] | None = None
    per_point: int | None = None
    for cand in [] if cells else window_tilings(graph, launch, options):
        carry, loads, carried = row_loads(cand)
        ratio = loads if sliding else t.window_carry_ratio  # forced: any row that carries a value
        if sliding_window.applies(loads, carried, ratio):
            window, per_point = (cand, carry), sliding_window.cost(loads, carried)
            break
    if sliding and window is not None:
        return window
    best: tuple[Fraction, Tiling] | None = None
    for cand in [] if sliding else cell_tilings(graph, launch, options):
        needed, distinct = cell_loads(cand)
        assert isinstance(cand.strategy, RegisterWindow)
        n = cand.strategy.cells.rows * cand.strategy.cells.cols
        limit = Fraction(needed, n) if per_point is None else per_point  # values a point otherwise
        cost = register_window.cost(cand.strategy, distinct)  # values loaded a point of the output
        shared = register_window.applies(needed, distinct, t.cells_share_ratio)
        taken = (cells or options.window_shape is not None) and needed > 0
        keep = taken or shared and cost < limit
        if keep and (best is None or cost < best[0]):
            best = (cost, cand)
    if best is not None:
        return best[1], {}
    return window or (choose_tiling(graph, launch, options), {})


def candidates(
    graph: Graph, launch: ComputeLaunch, options: CodegenOptions
) -> list[tuple[Tiling, dict[Key, Key]]]:
    """Every tiling the launch could run with: each strategy of `TABLE` that applies with each
    of its launch candidates, then each sliding and register window with each of its own, one
    fixed launch each (no autotuning). What `benchmarks/strategies.py` times."""
    tuned = replace(options, autotune=True)
    fixed = replace(options, autotune=False)
    out: list[tuple[Tiling, dict[Key, Key]]] = []
    for applies in TABLE:
        planned = applies(graph, launch, tuned)
        if planned is None:
            continue
        for c in planned.candidates:
            fallback = planned.fallback if c.num_ctas > 1 else None
            planned_c = replace(planned, config=c, candidates=(c,), fallback=fallback)
            out.append((tiling_of(graph, planned_c, fixed), {}))
    windows = window_tilings(graph, launch, tuned) + cell_tilings(graph, launch, tuned)
    for w in windows:
        carry = row_loads(w)[0] if not isinstance(w.strategy, RegisterWindow) else {}
        for c in w.autotune or (w.config,):
            one = replace(
                w,
                config=c,
                autotune=(),
                masked=masked_axes(w.launch, (c,)) if w.masked else (),
                index_dtype=choose_index_dtype(graph, w.launch, (c,)),
            )
            out.append((one, carry))
    return out
