"""Which kernel shape a compute launch takes: the first sliding window that carries enough from
row to row, unless a register window loads fewer values a point; else `tiling.choose_tiling`.

The loads a window shape needs are counted by a dry run of the emitter over the candidate tiling
(`window_plan`, `cells_plan`): the counts depend on the emitter's CSE of folded index text, so
they are not yet derived from the IR alone. The wrapper then renders the chosen tiling.
"""

from __future__ import annotations

from fractions import Fraction

from fuseopt.codegen.kernel import KernelEmitter
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies import RegisterWindow, register_window, sliding_window
from fuseopt.codegen.tile_shapes import choose_tiling, window_tilings
from fuseopt.codegen.tiling import CodegenOptions, Tiling
from fuseopt.codegen.windows.register import cell_tilings
from fuseopt.codegen.windows.sliding import Key, carry_plan
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
        carry, loads, carried = window_plan(graph, cand)
        if sliding_window.applies(loads, carried, t.window_carry_ratio):
            window, per_point = (cand, carry), sliding_window.cost(loads, carried)
            break
    best: tuple[Fraction, Tiling] | None = None
    for cand in cell_tilings(graph, launch, options):
        needed, distinct = cells_plan(graph, cand)
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
