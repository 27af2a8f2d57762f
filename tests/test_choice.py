"""`codegen.choice`: every shape a launch could take (`candidates`, what benchmarks/strategies.py
times) generates a module that computes what the reference interpreter computes, and the chosen
shape is one of them."""

from __future__ import annotations

import os

import pytest

from fuseopt.codegen.choice import candidates, choose
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.wrapper import build_module
from fuseopt.runtime import compare_with_reference
from tests.update_golden import KERNELS, planned

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes


@pytest.mark.parametrize(
    "name",
    [
        "row_sum_odd",
        pytest.param("apbt_small", marks=pytest.mark.slow),
        "avgpool_cl_small",
        pytest.param("softmax_bias_t_small", marks=pytest.mark.slow),
    ],
)
def test_every_candidate_matches_the_reference(name: str) -> None:
    stage = planned(os.path.join(KERNELS, f"{name}.json"))
    options = CodegenOptions()
    schedule = build_schedule(stage.graph, stage.plan)
    for index, launch in enumerate(schedule.launches):
        if not (isinstance(launch, ComputeLaunch) and launch.stores):
            continue
        found = candidates(stage.graph, launch, options)
        shapes = {(type(t.strategy).__name__, t.config) for t, _ in found}
        assert len(shapes) == len(found) > 1  # each once
        chosen, _ = choose(stage.graph, launch, options)
        assert (type(chosen.strategy).__name__, chosen.config) in shapes
        for tiling, carry in found:
            source = build_module(stage.graph, stage.plan, options, forced={index: (tiling, carry)})
            compare_with_reference(stage.graph, stage.plan, source=source)
