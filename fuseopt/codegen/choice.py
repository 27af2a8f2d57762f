"""Which kernel shape a compute launch takes: the first sliding window that carries enough from
row to row, unless a register window loads fewer values a point; else `tiling.choose_tiling`.

The loads a window shape needs are counted from the IR (`codegen.windows.census`), not from
emitted code. The wrapper then renders the chosen tiling.
"""

from __future__ import annotations

from fractions import Fraction

from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies import RegisterWindow, register_window, sliding_window
from fuseopt.codegen.tile_shapes import choose_tiling, window_tilings
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
    twice by overlapping bands or chunks counted (`Cells.waste`); else `choose_tiling`'s tile."""
    t = options.tuning
    window: tuple[Tiling, dict[Key, Key]] | None = None
    per_point: int | None = None
    for cand in window_tilings(graph, launch, options):
        carry, loads, carried = row_loads(cand)
        if sliding_window.applies(loads, carried, t.window_carry_ratio):
            window, per_point = (cand, carry), sliding_window.cost(loads, carried)
            break
    best: tuple[Fraction, Tiling] | None = None
    for cand in cell_tilings(graph, launch, options):
        needed, distinct = cell_loads(cand)
        assert isinstance(cand.strategy, RegisterWindow)
        cells = cand.strategy.cells.rows * cand.strategy.cells.cols
        limit = Fraction(needed, cells) if per_point is None else per_point  # values a point otherwise
        cost = register_window.cost(cand.strategy, distinct)  # values loaded a point of the output
        shared = register_window.applies(needed, distinct, t.cells_share_ratio)
        keep = options.window_shape is not None and needed > 0 or shared and cost < limit
        if keep and (best is None or cost < best[0]):
            best = (cost, cand)
    if best is not None:
        return best[1], {}
    return window or (choose_tiling(graph, launch, options), {})
