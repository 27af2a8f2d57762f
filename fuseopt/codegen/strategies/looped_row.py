"""A looped reduction: XBLOCK rows a program, r walked R0_BLOCK points at a time (the fallback
of every reduction); a tile whose data is contiguous along x reads at least
`looped_outer_x_bytes` of it a row, and rows too few to fill the multiprocessors widen R0_BLOCK
until their programs keep `looped_bytes_in_flight` bytes a multiprocessor in flight, on
`looped_widened_warps` warps."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.common import cdiv
from fuseopt.codegen.launch_configs import configs_reduction
from fuseopt.codegen.launch_counts import contiguous_bytes, read_bytes, x_contiguous
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned, Work
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class LoopedRow:
    """XBLOCK rows a program, an r loop of R0_BLOCK points."""


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[LoopedRow] | None:
    if launch.kind == "pointwise":
        return None
    along, x_item = contiguous_bytes(graph, launch)
    outer = x_contiguous(along, options.tuning.outer_x_ratio)
    read_item = read_bytes(graph, launch)
    configs = configs_reduction(
        launch, options, persistent=False, outer=outer, x_item=x_item, read_item=read_item
    )
    return Planned(launch, LoopedRow(), *configs)


def work(s: LoopedRow, launch: ComputeLaunch, config: LaunchConfig, loops: int) -> Work:
    """Every r loop (`loops`, from `loop_phases`) walks the row R0_BLOCK points a step."""
    r = launch.axes[-1]
    return Work(steps=loops * cdiv(r.numel, config.block(r.block)), accumulates=True)
