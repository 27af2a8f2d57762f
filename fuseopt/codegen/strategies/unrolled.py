"""A reduction over a few points (a pooling window) unrolled into a pointwise tile: each point its
own load, every load coalesced along the output's contiguous dimension, instead of a
[XBLOCK, R0_BLOCK] tile whose r lanes are strided and mostly padding (rnumel 9 in a block of 16)."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.launch_configs import configs_unrolled
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import Axis, ComputeLaunch
from fuseopt.codegen.strategies.base import Planned
from fuseopt.codegen.strategies.rows import digit_split, placed, rows
from fuseopt.ir.expr import Reduce
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class Unrolled:
    """A pointwise tile (1D, or rows x points when the index arithmetic splits) of a reduction
    over `rnumel` points, each point of r its own load."""

    rnumel: int


def unrollable(launch: ComputeLaunch, options: CodegenOptions) -> bool:
    """A reduction over 1..`unroll_rnumel` points; not for pair reductions (argmax keeps an
    index) nor for kernels with pointwise work inside the reduction loop (those run on r too)."""
    if launch.kind == "pointwise":
        return False
    rnumel = launch.axes[1].numel
    if not 1 <= rnumel <= options.tuning.unroll_rnumel:
        return False
    for p in launch.placements:
        if p.role == "inner":
            return False
        if (
            p.role == "reduction"
            and isinstance(p.node.value, Reduce)
            and p.node.value.op in ("argmax", "argmin")
        ):
            return False
    return True


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[Unrolled] | None:
    if not unrollable(launch, options):
        return None
    numel, rnumel = launch.axes[0].numel, launch.axes[1].numel
    s = digit_split(launch, numel, rnumel, options.tuning.row_split_min_points) if options.tile_2d else None
    if s is not None:
        launch = rows(launch, s)
    else:
        x = Axis("x", numel)
        launch = launch.with_axes((x,), tuple(placed(p, x, None) for p in launch.placements))
    return Planned(launch, Unrolled(rnumel), *configs_unrolled(launch, options))
