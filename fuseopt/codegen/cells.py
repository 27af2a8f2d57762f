"""Register windows: a stencil's program as a small grid of cells unrolled at generation time.

A sliding window (`codegen.window`) walks rows, but a point's neighbours along the row (one
column, `c` elements, away: a channels-last image) sit in other threads, so each row is loaded
once per horizontal offset. A register window instead splits a row's points into columns of `c`
points and gives each program T consecutive rows x S consecutive columns of one XBLOCK-point
slice of a column. Every cell (t, s) is the kernel's body at row y0 + t and column w0 + s,
emitted once per cell, with the cell's position as constant offsets from the program's base
(`Val.shifted`): index arithmetic folds them into its constant, so two cells that read the same
element under the same mask write the same load, which the emitter's CSE makes one statement. A
3x3 pooling window over 5 x 5 cells loads 7 x 7 values for 25 outputs (9 loads a point unfused,
3 for the sliding window), with the rows unrolled so the compiler can issue them all early.

On an H200 (bfloat16 avgpool_cl, 192 channels; benchmarks/results/explore rounds 34-36): the
generated kernel (5 x 5 cells of 64 channels, one warp) runs at 69.8-71.8% of copy against
66.2-67.6% for the sliding window; round 34's hand-written one at 73.6-75.6% (5 x 5 or 7 x 3
cells); walked rows instead of unrolled ones 66-70%, wider slices (128 or 256 channels with
more warps) or several images a program 57-73%. A row of cells stores after its loads (a load
cannot move above a store that may alias it: 48-50% interleaved), and an address is the cell's
base pointer plus a constant (the compiler folds it into the access: 63-64% as `ptr + (base +
k)`).

Cells are exact shifts of the program's base when every digit of the flat index is one of: a
digit of the row index (the rows' period divides every one, as for sliding windows: T divides
the period); the column `x // c` (whole, or modulo a multiple of S); or a digit within a column
(`(x // d) % m` with d * m dividing c). Anything else is still computed, per cell, from the
cell's full index (`KernelEmitter.cell_digit`), so correctness never depends on the shape.
"""

from __future__ import annotations

from dataclasses import replace

from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.tiling import (
    GRID_Y_MAX,
    CodegenOptions,
    LaunchConfig,
    Tiling,
    _flat_digits,
    window_tilings,
)
from fuseopt.ir.graph import Graph

# A program's slice of a column is `CodegenOptions.window_slice` points (64: one warp, two
# bfloat16 or float32 elements a thread; round 34: 128 or 256 points with 2-4 warps were 5-10
# points slower), with one warp up to 64 points, more above.
MAX_ROWS = 5
MAX_COLUMNS = 7


def _largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of n up to `at_most` (1 at least)."""
    return max(d for d in range(1, max(1, min(n, at_most)) + 1) if n % d == 0)


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


def cell_tilings(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> list[Tiling]:
    """Register-window tilings to try, best first (`codegen.wrapper` keeps the first whose dry run
    shares enough loads between cells): one per sliding-window row split whose rows split into
    columns of a multiple of `window_slice` points."""
    if not options.window_cells or options.autotune:
        return []
    numel = launch.axes[0].numel
    rnumel = launch.axes[1].numel if launch.kind != "pointwise" else 1
    flat = _flat_digits(launch, numel, rnumel)
    out: list[Tiling] = []
    for walk in window_tilings(graph, launch, options):
        y, x = walk.launch.axes[0], walk.launch.axes[1]
        c = column_stride(flat, x.numel)
        piece = options.window_slice
        if c is None or c % piece or piece & (piece - 1):
            continue
        rows = _largest_divisor(walk.walk_period, min(MAX_ROWS, options.window_cells))
        cols = _largest_divisor(x.numel // c, min(MAX_COLUMNS, options.window_cells // rows))
        if rows * cols < 2 or y.numel % rows or y.numel // rows > GRID_Y_MAX:
            continue
        config = LaunchConfig((("YBLOCK", rows), ("XBLOCK", piece)), max(1, piece // 64))
        out.append(
            replace(walk, config=config, autotune=(), masked=(), walk=0, walk_period=0, cells=(rows, cols, c))
        )
    return out
