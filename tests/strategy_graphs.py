"""The strategies `codegen.choice.choose` picks for the compute launches of a golden kernel graph
(tests/golden/kernels/<name>.json, planned as `fuseopt optimize` plans it), for the
tests/test_strategy_*.py files."""

from __future__ import annotations

import os

from fuseopt.codegen.choice import choose
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import Strategy
from fuseopt.codegen.tiling import Tiling
from fuseopt.ir.graph import Graph
from fuseopt.plan import Plan
from tests.update_golden import KERNELS, planned


def tilings(name: str, options: CodegenOptions | None = None) -> list[Tiling]:
    """The chosen tiling of every compute launch that stores something, in launch order."""
    stage = planned(os.path.join(KERNELS, f"{name}.json"))
    return tilings_of(stage.graph, stage.plan, options)


def tilings_of(graph: Graph, plan: Plan, options: CodegenOptions | None = None) -> list[Tiling]:
    """`tilings` of a graph and plan at hand."""
    opts = options or CodegenOptions()
    schedule = build_schedule(graph, plan)
    return [
        choose(graph, launch, opts)[0]
        for launch in schedule.launches
        if isinstance(launch, ComputeLaunch) and launch.stores
    ]


def strategies(name: str, options: CodegenOptions | None = None) -> list[type[Strategy]]:
    return [type(t.strategy) for t in tilings(name, options)]


def launches(name: str) -> list[tuple[Graph, ComputeLaunch]]:
    """(graph, launch) of every compute launch that stores something, for `applies` tests."""
    stage = planned(os.path.join(KERNELS, f"{name}.json"))
    schedule = build_schedule(stage.graph, stage.plan)
    return [(stage.graph, la) for la in schedule.launches if isinstance(la, ComputeLaunch) and la.stores]
