"""The cost the tile strategies share: waves of programs over the multiprocessors (a launch of
fewer programs than multiprocessors leaves some idle; each further wave adds a round of latency)."""

from __future__ import annotations

from fractions import Fraction

from fuseopt.codegen.common import cdiv, prod
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch


def waves(launch: ComputeLaunch, config: LaunchConfig, options: CodegenOptions, chunks: int = 1) -> Fraction:
    """Programs of the launch (x and y tiles, times a split's chunks) over multiprocessors."""
    blocks = dict(config.blocks)
    programs = prod(cdiv(a.numel, blocks.get(a.block, a.numel)) for a in launch.axes if a.name != "r0_")
    return Fraction(programs * chunks, options.gpu.multiprocessors)
