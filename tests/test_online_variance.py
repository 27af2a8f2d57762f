"""`codegen.online_variance`: `sum((F - m) * (F - m))` with `m = sum(F / n)` of a looped kernel
in the mean's r loop (Welford), checked against the reference interpreter (TRITON_INTERPRET=1) on
random rows, masked blocks, rows with NaN and infinity, a BatchNorm's statistics, and random
graphs; and the kernels it must leave alone."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from fuseopt.codegen import CodegenOptions
from fuseopt.codegen.online_variance import variance_operand
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.interp import make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from tests.strategies import LOOPED as SMALL_LOOPED
from tests.strategies import check, check_on, doc_graph, planned_source, variance_docs
from tests.sweeps import examples

# R0_BLOCK 16 and no split: rows of 37 take a looped kernel, three blocks, the last masked.
LOOPED = CodegenOptions(persistent_rnumel=0, max_r0_block=16, unroll_rnumel=0, split_programs=0)

VAR = """
format: fuseopt-graph/1
name: var_rows
buffers:
  x: {{shape: [{rows}, {cols}], dtype: {dtype}, role: input}}
  m: {{shape: [{rows}], dtype: float32, role: output}}
  v: {{shape: [{rows}], dtype: float32}}
  y: {{shape: [{rows}, {cols}], dtype: float32, role: output}}
nodes:
  - {{name: mean, loops: [[i, {rows}]], reduce: [[r, {cols}]], store: "m[i]", value: "sum({f} / {n})"}}
  - {{name: var, loops: [[i, {rows}]], reduce: [[k, {cols}]], store: "v[i]", value: "sum(({g} - m[i]) * ({g} - m[i]))"}}
  - {{name: o, loops: [[i, {rows}], [j, {cols}]], store: "y[{cols}*i + j]", value: "({h} - m[i]) * rsqrt(v[i] / {n} + 1e-5)"}}
"""


def _graph(
    dtype: str = "float32", rows: int = 6, cols: int = 37, *, g: str | None = None, n: str | None = None
):
    cast = "x[{c}*i + {v}]" if dtype == "float32" else "cast(x[{c}*i + {v}], float32)"
    text = VAR.format(
        rows=rows,
        cols=cols,
        dtype=dtype,
        n=n or f"{float(cols)}",
        f=cast.format(c=cols, v="r"),
        g=g if g is not None else cast.format(c=cols, v="k"),
        h=cast.format(c=cols, v="j"),
    )
    return load_text(text, "var_rows.yaml")


def _source(graph, options: CodegenOptions = LOOPED) -> str:
    return planned_source(graph, options)


_check = check_on


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_online_variance_matches_the_reference(dtype: str) -> None:
    graph = _graph(dtype)
    src = _source(graph)
    assert src.count("for r0_offset in range(") == 2  # mean and variance in one loop, then y
    assert "tl.reduce((_acc" in src and "_welford_combine" in src
    assert "tl.store(m_ptr" in src  # the mean, summed in the same loop
    _check(graph, src, make_inputs(graph, seed=3))


def test_a_mean_divided_after_its_sum_is_the_same_mean() -> None:
    """`sum(F)` then `(F - total[i] / n)`: the mean spelled after its sum (a hand-written layer
    norm) takes the online form as `sum(F / n)` does."""
    text = """
format: fuseopt-graph/1
name: var_after
buffers:
  x: {shape: [6, 37], dtype: float32, role: input}
  t: {shape: [6], dtype: float32, role: output}
  v: {shape: [6], dtype: float32, role: output}
nodes:
  - {name: tot, loops: [[i, 6]], reduce: [[r, 37]], store: "t[i]", value: "sum(x[37*i + r])"}
  - {name: var, loops: [[i, 6]], reduce: [[k, 37]], store: "v[i]", value: "sum((x[37*i + k] - t[i] / 37) * (x[37*i + k] - t[i] / 37))"}
"""
    graph = load_text(text, "var_after.yaml")
    src = _source(graph)
    assert src.count("for r0_offset in range(") == 1 and "_welford_combine" in src
    _check(graph, src, make_inputs(graph, seed=7))
    wrong = load_text(text.replace("t[i] / 37)", "t[i] / 36)"), "var_after.yaml")
    assert "_welford_combine" not in _source(wrong)


def test_rows_far_from_zero_keep_their_precision() -> None:
    """Rows of 1000 + N(0, 1): Welford's sum of squared deviations, not sum(x*x) - n*m*m (which
    cancels to noise in float32); one row with a NaN (NaN), one with an infinity (the mean
    infinite, the variance NaN, as the reference's two passes give). Rows whose spread is 1e-4 of
    their offset or less differ from the reference beyond float32's tolerance whichever way
    they are summed, the two passes too."""
    graph = _graph("float32", rows=4, cols=300)
    src = _source(graph)
    x = 1000.0 + torch.randn(4, 300, generator=torch.Generator().manual_seed(0))
    x[1, 7] = float("nan")
    x[2, 299] = float("inf")  # in the last, masked block
    _check(graph, src, {"x": x.reshape(-1)})


def test_a_sum_over_another_operand_or_another_count_keeps_its_own_loop() -> None:
    """sum((3x - m)^2) over m = mean(2x), and a mean dividing by another count: not online."""
    for graph in (_graph(g="x[37*i + k] * 3"), _graph(n="36.0")):
        src = _source(graph)
        assert src.count("for r0_offset in range(") == 3 and "_welford_combine" not in src
        stage = optimize(graph)
        (launch,) = [
            la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
        ]
        produced = launch.producer()
        assert all(variance_operand(p, produced) is None for p in launch.placements)
        _check(graph, src, make_inputs(graph, seed=2))


def test_a_persistent_row_is_left_alone() -> None:
    graph = _graph("float32")
    src = _source(graph, CodegenOptions())
    assert "for r0_offset" not in src and "_welford_combine" not in src
    _check(graph, src, make_inputs(graph, seed=4))


def test_batchnorm_statistics_in_training_take_one_pass() -> None:
    """A BatchNorm's statistics over (N, H, W) per channel and its normalization, one kernel:
    the variance in the mean's loop, the normalization the second loop."""
    text = """
format: fuseopt-graph/1
name: bn_train
buffers:
  x: {shape: [3, 4, 5, 7], dtype: float32, role: input}
  w: {shape: [4], dtype: float32, role: input}
  m: {shape: [4], dtype: float32, role: output}
  v: {shape: [4], dtype: float32, role: output}
  y: {shape: [3, 4, 5, 7], dtype: float32, role: output}
nodes:
  - {name: mean, loops: [[c, 4]], reduce: [[r0, 3], [r1, 35]], store: "m[c]", value: "sum(x[140*r0 + 35*c + r1] / 105.0)"}
  - {name: var, loops: [[c, 4]], reduce: [[r0, 3], [r1, 35]], store: "v[c]", value: "sum((x[140*r0 + 35*c + r1] - m[c]) * (x[140*r0 + 35*c + r1] - m[c]))"}
  - {name: o, loops: [[n, 3], [c, 4], [s, 35]], store: "y[140*n + 35*c + s]", value: "relu((x[140*n + 35*c + s] - m[c]) * rsqrt(v[c] / 105.0 + 1e-5) * w[c])"}
"""
    graph = load_text(text, "bn_train.yaml")
    src = _source(graph)
    assert src.count("for r0_offset in range(") == 2 and "_welford_combine" in src, src
    _check(graph, src, make_inputs(graph, seed=5))


@settings(max_examples=examples(200, quick=8), deadline=None, suppress_health_check=list(HealthCheck))
@given(variance_docs())
def test_random_variance_graphs_match_the_reference_looped(doc: dict[str, object]) -> None:
    """Random mean / sum((F - mean)^2) pairs (random F, dims, layouts), planned and looped: the
    online form (where it applies) against the reference."""
    graph = doc_graph(doc)
    stage = optimize(graph)
    check(stage.graph, stage.plan, SMALL_LOOPED)
