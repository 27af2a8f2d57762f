"""Register windows: a stencil's program as a small grid of cells unrolled at generation time.

A sliding window (`codegen.windows.sliding`) walks rows, but a point's neighbours along the row (one
column, `c` elements, away: a channels-last image) sit in other threads, so each row is loaded
once per horizontal offset. A register window instead splits a row's points into columns of `c`
points and gives each program T consecutive rows x S consecutive columns of one XBLOCK-point
slice of a column. Every cell (t, s) is the kernel's body at row y0 + t and column w0 + s,
emitted once per cell, with the cell's position as constant offsets from the program's base
(`Val.shifted`): index arithmetic folds them into its constant, so two cells that read the same
element under the same mask write the same load, which the emitter's CSE makes one statement. A
3x3 pooling window over 5 x 5 cells loads 7 x 7 values for 25 outputs (9 loads a point unfused,
3 for the sliding window), with the rows unrolled so the compiler can issue them all early.

A row of cells stores after its loads (a load cannot move above a store that may alias it); an
address is the cell's base pointer plus a constant; a cell's column and row come from the
program's ids (`chunk * S`, `band * T`), so the compiler folds the cells' bounds checks into a
few predicates. The shape limits and the slice are the target's (`fuseopt.targets`: the H200's
file gives the measurements behind them).

Shapes (`window_shapes`): T rows dividing the rows' period or as many as allowed, the period's
last band then ending at its edge and overlapping the band before (those points computed and
stored twice, the same values); S columns dividing a row's; the wrapper keeps the shape that
loads the fewest values a point of the output, overlap counted (`Cells.waste`).

Cells are exact shifts of the program's base when every digit of the flat index is one of: a
digit of the row index (the rows' period divides every one, as for sliding windows); the column
`x // c` (whole); or a digit within a column (`(x // d) % m` with d * m dividing c). Anything
else is still computed, per cell, from the cell's full index (`KernelEmitter.digit_val`), so
correctness never depends on the shape.
"""

from __future__ import annotations

import math
from dataclasses import replace

from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies import Cells, RegisterWindow, SlidingWindow
from fuseopt.codegen.strategies.rows import flat_digits
from fuseopt.codegen.tile_shapes import window_tilings
from fuseopt.codegen.tiling import Tiling
from fuseopt.ir.graph import Graph


def column_stride(flat_digits: set[Digit], row: int) -> int | None:
    """The column `c` of a row of `row` points: the divisor of the digit `x // c` below the row,
    if every digit below the row is that column or lies within one column."""
    inner = [d for d in flat_digits if d.div < row]
    cols = {d.div for d in inner if d.div > 1}
    if not cols:
        return None
    c = max(cols)
    if row % c:
        return None
    for d in inner:
        if d.div == 1 and d.mod is None:
            continue  # the flat index itself
        if d.div == c and (d.mod is None or d.div * d.mod == row):
            continue
        if d.mod is not None and c % (d.div * d.mod) == 0:
            continue
        return None
    return c


def _largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of n up to `at_most` (1 at least)."""
    return max(d for d in range(1, max(1, min(n, at_most)) + 1) if n % d == 0)


def window_shapes(period: int, ncols: int, options: CodegenOptions) -> list[tuple[int, int]]:
    """(rows, columns) of cells to try: rows dividing the period or as many as allowed (a period's
    last band then overlaps the one before), and for each, the most columns that divide a row's
    and fit; `CodegenOptions.window_shape` alone where set (its columns need not divide: a
    row's last chunk then overlaps the one before). Overlapping chunks are not tried otherwise
    (they measured slower than overlapping bands)."""
    if options.window_shape is not None:
        rows, cols = options.window_shape
        return [(rows, cols)] if rows <= period and cols <= ncols else []
    t = options.tuning
    most = min(t.window_rows, t.window_cells)
    out: list[tuple[int, int]] = []
    for rows in dict.fromkeys((_largest_divisor(period, most), min(period, most))):
        cols = _largest_divisor(ncols, min(t.window_cols, t.window_cells // rows))
        if rows * cols >= 2:
            out.append((rows, cols))
    return out


def cell_tilings(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> list[Tiling]:
    """Register-window tilings to try (`codegen.choice` keeps, of those whose cells share enough
    loads, counted by `codegen.windows.census`, the one that loads the fewest values a point
    computed, overlap counted): the shapes of `window_shapes` for every sliding-window row split whose rows split
    into columns of a multiple of `window_slice` points, one warp per `cells_points_per_warp`
    points of the slice."""
    t = options.tuning
    if not t.window_cells:
        return []
    numel = launch.axes[0].numel
    rnumel = launch.axes[1].numel if launch.kind != "pointwise" else 1
    flat = flat_digits(launch, numel, rnumel)
    out: list[Tiling] = []
    for walk in window_tilings(graph, launch, options):
        y, x = walk.launch.axes[0], walk.launch.axes[1]
        c = column_stride(flat, x.numel)
        piece = t.window_slice
        if c is None or c % piece or piece & (piece - 1):
            continue
        ncols = x.numel // c
        assert isinstance(walk.strategy, SlidingWindow)
        period, rnumel = math.gcd(walk.strategy.period, y.numel), walk.strategy.rnumel
        for rows, cols in window_shapes(period, ncols, options):
            shape = Cells(rows, cols, c, period, ncols)
            if y.numel // period * shape.bands > options.gpu.max_grid_y:
                continue
            config = LaunchConfig(
                (("YBLOCK", rows), ("XBLOCK", piece)), max(1, piece // t.cells_points_per_warp)
            )
            window = RegisterWindow(shape, rnumel)
            out.append(replace(walk, strategy=window, config=config, autotune=(), masked=()))
    return out
