"""Kernel strategies as data: each a frozen variant with only its own fields, in its own file with
its applicability test and its cost. `TABLE` is the order `tile_shapes.choose_tiling` tries them
(the first that applies); the windows are weighed against its choice by `codegen.choice`."""

from __future__ import annotations

from collections.abc import Callable

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies import (
    looped_row,
    persistent_row,
    row_split,
    split,
    tile_1d,
    tile_2d,
    unrolled,
)
from fuseopt.codegen.strategies.base import Planned
from fuseopt.codegen.strategies.looped_row import LoopedRow
from fuseopt.codegen.strategies.persistent_row import PersistentRow
from fuseopt.codegen.strategies.register_window import Cells, RegisterWindow
from fuseopt.codegen.strategies.row_split import RowSplit
from fuseopt.codegen.strategies.sliding_window import SlidingWindow
from fuseopt.codegen.strategies.split import SplitFinish, SplitPartial
from fuseopt.codegen.strategies.tile_1d import Tile1D
from fuseopt.codegen.strategies.tile_2d import Tile2D
from fuseopt.codegen.strategies.unrolled import Unrolled
from fuseopt.ir.graph import Graph

Strategy = (
    Tile1D
    | Tile2D
    | RowSplit
    | Unrolled
    | PersistentRow
    | LoopedRow
    | SplitPartial
    | SplitFinish
    | SlidingWindow
    | RegisterWindow
)

Applies = Callable[[Graph, ComputeLaunch, CodegenOptions], "Planned[Strategy] | None"]

# Pointwise: a transpose's 2D tile, else a row split, else 1D. Reductions: a few points unrolled,
# else persistent rows, else split along r when x tiles are too few, else looped.
TABLE: tuple[Applies, ...] = (
    tile_2d.applies,
    row_split.applies,
    tile_1d.applies,
    unrolled.applies,
    persistent_row.applies,
    split.applies,
    looped_row.applies,
)


def unrolled_points(s: Strategy) -> int:
    """Points of a reduction unrolled into a pointwise tile (alone or in a window); 0: none."""
    return s.rnumel if isinstance(s, Unrolled | SlidingWindow | RegisterWindow) else 0


def persistent(s: Strategy) -> bool:
    """Whether a reduction's rows are whole in the tile (no r loop)."""
    return isinstance(s, PersistentRow | SplitFinish)


__all__ = [
    "TABLE",
    "Cells",
    "LoopedRow",
    "PersistentRow",
    "Planned",
    "RegisterWindow",
    "RowSplit",
    "SlidingWindow",
    "SplitFinish",
    "SplitPartial",
    "Strategy",
    "Tile1D",
    "Tile2D",
    "Unrolled",
    "persistent",
    "unrolled_points",
]
