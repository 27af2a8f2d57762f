"""A pointwise 1D tile: XBLOCK consecutive points of the flat index a program (the fallback of
every pointwise launch)."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.launch_configs import configs_1d
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class Tile1D:
    """XBLOCK points of the flat index a program."""


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[Tile1D] | None:
    if launch.kind != "pointwise":
        return None
    return Planned(launch, Tile1D(), *configs_1d(launch, options))
