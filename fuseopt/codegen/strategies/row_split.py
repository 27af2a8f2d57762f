"""A pointwise row split: a 2D tile of rows (y) x a row's inner points (x), so that the index's
`//` and `%` arithmetic runs once a row (a channels-last image row) instead of once a point."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.launch_configs import configs_unrolled
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned
from fuseopt.codegen.strategies.rows import digit_split, rows
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class RowSplit:
    """Rows of the flat index (y) x a row's points (x): index arithmetic per row."""


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[RowSplit] | None:
    if launch.kind != "pointwise" or len(launch.axes) != 1 or not options.tile_2d:
        return None
    s = digit_split(launch, launch.axes[0].numel, 1, options.tuning.row_split_min_points)
    if s is None:
        return None
    launch = rows(launch, s)
    return Planned(launch, RowSplit(), *configs_unrolled(launch, options))
