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


def test_a_forced_strategy_is_taken_before_a_window() -> None:
    """avgpool_cl (a 3x3 window over a channels-last image) takes a register window; with
    `strategy="unrolled"` the unrolled tile, which applies; with a strategy that does not apply
    (a split of a 9-point reduction), the window again."""
    from fuseopt.codegen.strategies import RegisterWindow, Unrolled
    from tests.strategy_graphs import launches

    graph, launch = launches("avgpool_cl_full")[0]
    assert isinstance(choose(graph, launch, CodegenOptions())[0].strategy, RegisterWindow)
    assert isinstance(choose(graph, launch, CodegenOptions(strategy="unrolled"))[0].strategy, Unrolled)
    assert isinstance(choose(graph, launch, CodegenOptions(strategy="split"))[0].strategy, RegisterWindow)


def test_a_window_can_be_forced_by_name() -> None:
    """avgpool_cl: "sliding_window" walks rows (the register window otherwise), "register_window"
    takes cells; a launch no window applies to keeps the cost model's choice."""
    from fuseopt.codegen.strategies import RegisterWindow, SlidingWindow
    from tests.strategy_graphs import launches

    graph, launch = launches("avgpool_cl_full")[0]
    tiling, _ = choose(graph, launch, CodegenOptions(strategy="sliding_window"))
    assert isinstance(tiling.strategy, SlidingWindow)  # its rows' partial sums carried
    assert isinstance(
        choose(graph, launch, CodegenOptions(strategy="register_window"))[0].strategy, RegisterWindow
    )
    graph, launch = launches("row_sum_odd")[0]
    default = choose(graph, launch, CodegenOptions())[0]
    for name in ("sliding_window", "register_window"):
        forced = choose(graph, launch, CodegenOptions(strategy=name))[0]
        assert (forced.strategy, forced.config) == (default.strategy, default.config)


def test_the_first_autotune_candidate_is_the_fixed_launch() -> None:
    """Under --autotune, each kernel's first candidate is the launch chosen without it (or, for a
    cluster launch, its single-program fallback is among them): what the autotuned module's
    `_prune` runs under the interpreter, and what tuning starts from."""
    import glob

    from fuseopt.codegen.options import STRATEGY_NAMES

    seen = 0
    for path in sorted(glob.glob(os.path.join(KERNELS, "*.json"))):
        stage = planned(path)
        for launch in build_schedule(stage.graph, stage.plan).launches:
            if not (isinstance(launch, ComputeLaunch) and launch.stores):
                continue
            for name in (None, *STRATEGY_NAMES):
                fixed = choose(stage.graph, launch, CodegenOptions(strategy=name))[0]
                auto = choose(stage.graph, launch, CodegenOptions(autotune=True, strategy=name))[0]
                assert (type(auto.strategy), auto.launch) == (type(fixed.strategy), fixed.launch), path
                if auto.autotune:
                    seen += 1
                    assert auto.autotune[0] == fixed.config, (path, name)
                    assert fixed.fallback is None or fixed.fallback in auto.autotune
    assert seen > 50
