"""A looped reduction: XBLOCK rows a program, r walked R0_BLOCK points at a time (the fallback
of every reduction); a tile whose data is contiguous along x reads at least
`looped_outer_x_bytes` of it a row, and rows too few to fill the multiprocessors widen R0_BLOCK
until their programs keep `looped_bytes_in_flight` bytes a multiprocessor in flight, on
`looped_widened_warps` warps. A tile read along r whose rows fill the GPU takes a row a program, on as
many warps as keep the rows its later r loops read again within half the L2
(`launch_configs._row_warps`, `reread_row_bytes`)."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.common import cdiv
from fuseopt.codegen.launch_configs import configs_reduction, resident_programs
from fuseopt.codegen.launch_counts import contiguous_bytes, read_bytes, x_contiguous
from fuseopt.codegen.loop_phases import online_sums, phases
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned, Work
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class LoopedRow:
    """XBLOCK rows a program, an r loop of R0_BLOCK points. `waves`: its programs outnumber what
    the multiprocessors keep resident at once (as many as their warps allow), so a row's last
    read may make room in the L2 for rows later programs read again (`codegen.eviction`)."""

    waves: bool


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[LoopedRow] | None:
    if launch.kind == "pointwise":
        return None
    along, x_item = contiguous_bytes(graph, launch)
    outer = x_contiguous(along, options.tuning.outer_x_ratio)
    read_item = read_bytes(graph, launch)
    configs = configs_reduction(
        launch,
        options,
        persistent=False,
        outer=outer,
        x_item=x_item,
        read_item=read_item,
        again=reread_row_bytes(graph, launch),
    )
    default = configs[0]
    programs = cdiv(launch.axes[0].numel, default.block(launch.axes[0].block))
    return Planned(
        launch, LoopedRow(waves=programs > resident_programs(default.num_warps, options)), *configs
    )


def work(s: LoopedRow, launch: ComputeLaunch, config: LaunchConfig, loops: int) -> Work:
    """Every r loop (`loops`, from `loop_phases`) walks the row R0_BLOCK points a step."""
    r = launch.axes[-1]
    return Work(steps=loops * cdiv(r.numel, config.block(r.block)), accumulates=True)


def reread_row_bytes(graph: Graph, launch: ComputeLaunch) -> int:
    """Bytes a row of x of the buffers the tile reads in more than one of its r loops: what a
    later loop reads again, from the L2 while the rows in flight fit there. 0 for one loop."""
    phase, _ = phases(launch, online_sums(launch))
    produced = launch.producer()
    loops: dict[str, set[int]] = {}
    for p in launch.placements:
        for ld in p.node.reads() if p.node.name in phase else ():
            if ld.buffer not in produced:
                loops.setdefault(ld.buffer, set()).add(phase[p.node.name])
    again = 0
    for buf in sorted(b for b, ks in loops.items() if len(ks) > 1):
        b = graph.buffer(buf)
        again += b.dtype.itemsize * b.storage_size
    return again // launch.axes[0].numel
