"""A pointwise 2D tile [YBLOCK, XBLOCK] for a transpose: the flat index split at the transposed
access's contiguous loop, so that reads and writes are both coalesced (Triton picks each access's
layout from its contiguity)."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.launch_configs import configs_2d
from fuseopt.codegen.launch_counts import launch_accesses, unit_digit
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, digits_of
from fuseopt.codegen.strategies.base import Planned
from fuseopt.codegen.strategies.rows import rows
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class Tile2D:
    """Rows (y) x a row's contiguous points (x) of a transposed pointwise launch."""


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[Tile2D] | None:
    if launch.kind != "pointwise":
        return None
    launch = transposed(graph, launch, options)
    if len(launch.axes) != 2:
        return None
    return Planned(launch, Tile2D(), *configs_2d(launch, options))


def transposed(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> ComputeLaunch:
    """The launch as rows at the split that the transposed accesses' bytes weigh most, when some
    bytes move coalesced along the flat index and others only along a digit above it; else as is."""
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
    return rows(launch, max(sorted(weights), key=lambda s: weights[s]))
