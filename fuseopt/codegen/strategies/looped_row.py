"""A looped reduction: XBLOCK rows a program, r walked R0_BLOCK points at a time (the fallback
of every reduction)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from fuseopt.codegen.launch_configs import configs_reduction
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned
from fuseopt.codegen.strategies.waves import waves
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class LoopedRow:
    """XBLOCK rows a program, an r loop of R0_BLOCK points."""


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[LoopedRow] | None:
    if launch.kind == "pointwise":
        return None
    return Planned(launch, LoopedRow(), *configs_reduction(launch, options, persistent=False, outer=False))


def cost(planned: Planned[LoopedRow], options: CodegenOptions) -> Fraction:
    """Waves of programs over the multiprocessors."""
    return waves(planned.launch, planned.config, options)
