"""`codegen.loop_phases`: which r loop each node of a looped reduction runs in, from the IR (the
emitter prints these loops; the cost model counts what each reads)."""

from __future__ import annotations

import pytest

from fuseopt.analysis.access_match import FusedReadMismatch
from fuseopt.codegen.loop_phases import online_sums, phases
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize

LAYERNORM = """
format: fuseopt-graph/1
name: layernorm
buffers:
  x: {shape: [8, 64], dtype: float32, role: input}
  mean: {shape: [8], dtype: float32}
  var: {shape: [8], dtype: float32}
  inv: {shape: [8], dtype: float32}
  out: {shape: [8, 64], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 8]], reduce: [[r, 64]], store: "mean[i]", value: "sum(x[64*i + r] / 64)"}
  - {name: n1, loops: [[i, 8]], reduce: [[r, 64]], store: "var[i]", value: "sum((x[64*i + r] - mean[i]) * (x[64*i + r] - mean[i]))"}
  - {name: n2, loops: [[i, 8]], store: "inv[i]", value: "rsqrt(var[i] / 64 + 1e-5)"}
  - {name: n3, loops: [[i, 8], [j, 64]], store: "out[64*i + j]", value: "(x[64*i + j] - mean[i]) * inv[i]"}
"""

SOFTMAX = """
format: fuseopt-graph/1
name: softmax
buffers:
  x: {shape: [8, 64], dtype: float32, role: input}
  m: {shape: [8], dtype: float32}
  s: {shape: [8], dtype: float32}
  out: {shape: [8, 64], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 8]], reduce: [[r, 64]], store: "m[i]", value: "max(x[64*i + r])"}
  - {name: n1, loops: [[i, 8]], reduce: [[r, 64]], store: "s[i]", value: "sum(exp(x[64*i + r] - m[i]))"}
  - {name: n2, loops: [[i, 8], [j, 64]], store: "out[64*i + j]", value: "exp(x[64*i + j] - m[i]) / s[i]"}
"""


def _launch(text: str) -> ComputeLaunch:
    stage = optimize(load_text(text, "g.yaml"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    return launch


def test_a_value_that_needs_a_finished_reduction_opens_the_next_loop() -> None:
    """The mean's loop, the variance's (it reads the mean), then the output's (it reads the
    inverse, an epilogue after the variance's loop)."""
    launch = _launch(LAYERNORM)
    phase, post = phases(launch, {})
    assert phase == {"n0": 0, "n1": 1, "n3": 2}
    assert post == {"n2": 1}


def test_an_online_variance_runs_in_its_mean_s_loop() -> None:
    """The variance of the layer norm above sums in the mean's loop (`online_variance`); the
    inverse after that loop, the output in the next."""
    launch = _launch(LAYERNORM)
    online = online_sums(launch)
    assert list(online) == ["n1"] and online["n1"][1] == "n0"
    phase, post = phases(launch, online)
    assert phase == {"n0": 0, "n1": 0, "n3": 1} and post == {"n2": 0}


def test_an_online_sum_runs_in_its_maximum_s_loop() -> None:
    launch = _launch(SOFTMAX)
    online = online_sums(launch)
    assert list(online) == ["n1"] and online["n1"][1] == "n0"
    assert phases(launch, online)[0] == {"n0": 0, "n1": 0, "n2": 1}
    assert phases(launch, {})[0] == {"n0": 0, "n1": 1, "n2": 2}  # without it: a loop more


def test_an_epilogue_that_reads_a_loop_value_is_a_planner_bug() -> None:
    launch = _launch(LAYERNORM)
    bad = [p for p in launch.placements if p.node.name != "n2"]
    n3 = next(p for p in bad if p.node.name == "n3")
    broken = ComputeLaunch(
        launch.plan_kernel,
        launch.kind,
        tuple(type(p)(p.node, "epilogue", p.segments) if p is n3 else p for p in bad)
        + tuple(type(p)(p.node, "inner", p.segments) for p in launch.placements if p.node.name == "n2"),
        launch.axes,
        launch.stores,
    )
    with pytest.raises(FusedReadMismatch, match="a value of the reduction loop"):
        phases(broken, {})
