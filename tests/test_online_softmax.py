"""`codegen.online_softmax`: `sum(exp(F - max(F)))` of a looped kernel in the max's r loop, checked
against the reference interpreter (TRITON_INTERPRET=1) on random rows and rows with -inf, +inf
and NaN, in three float dtypes; and the kernels it must leave alone."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from fuseopt.codegen import CodegenOptions
from fuseopt.codegen.online_softmax import online_operand
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.interp import make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from tests.strategies import LOOPED as SMALL_LOOPED
from tests.strategies import check, check_on, doc_graph, planned_source, softmax_docs
from tests.sweeps import examples

# R0_BLOCK 16 and no split: rows of 37 take a looped kernel, three blocks, the last masked.
LOOPED = CodegenOptions(persistent_rnumel=0, max_r0_block=16, unroll_rnumel=0, split_programs=0)

SOFTMAX = """
format: fuseopt-graph/1
name: softmax_rows
buffers:
  x: {{shape: [{rows}, {cols}], dtype: {dtype}, role: input}}
  m: {{shape: [{rows}], dtype: float32, role: {m_role}}}
  s: {{shape: [{rows}], dtype: float32}}
  y: {{shape: [{rows}, {cols}], dtype: float32, role: output}}
nodes:
  - {{name: mx, loops: [[i, {rows}]], reduce: [[r, {cols}]], store: "m[i]", value: "max({f})"}}
  - {{name: se, loops: [[i, {rows}]], reduce: [[k, {cols}]], store: "s[i]", value: "sum(exp({g} - m[i]))"}}
  - {{name: o, loops: [[i, {rows}], [j, {cols}]], store: "y[{cols}*i + j]", value: "{h} - m[i] - log(s[i])"}}
"""


def _graph(
    dtype: str = "float32", rows: int = 6, cols: int = 37, *, g: str | None = None, m_role: str = "output"
):
    f = f"x[{cols}*i + r] * 2"
    text = SOFTMAX.format(
        rows=rows,
        cols=cols,
        dtype=dtype,
        m_role=m_role,
        f=f,
        g=g if g is not None else f"x[{cols}*i + k] * 2",
        h=f"x[{cols}*i + j] * 2",
    )
    return load_text(text, "softmax_rows.yaml")


def _source(graph, options: CodegenOptions = LOOPED) -> str:
    return planned_source(graph, options)


_check = check_on


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_online_softmax_matches_the_reference(dtype: str) -> None:
    graph = _graph(dtype)
    src = _source(graph)
    assert src.count("for r0_offset in range(") == 2  # max and sum in one loop, then the output
    assert "tl.exp(_acc" in src  # the rescaled sum
    _check(graph, src, make_inputs(graph, seed=3))


def test_online_softmax_keeps_the_edges() -> None:
    """Rows with -inf (a lane that sees only -inf adds nothing), one +inf (NaN, as the
    reference's exp(inf - inf)), one NaN (NaN), all -inf (NaN) and one finite value among -inf."""
    graph = _graph("float32")
    src = _source(graph)
    x = torch.randn(6, 37)
    x[0, :20] = float("-inf")
    x[1, 5] = float("inf")
    x[2, 30] = float("nan")
    x[3, :] = float("-inf")
    x[4, :] = float("-inf")
    x[4, 36] = 1.5  # in the last, masked block
    x[5, 17:] = float("-inf")
    _check(graph, src, {"x": x.reshape(-1)})


def test_the_max_is_still_stored() -> None:
    """The max's own output comes from the sum's running maximum."""
    graph = _graph("float32", m_role="output")
    src = _source(graph)
    assert "tl.store(m_ptr" in src
    _check(graph, src, make_inputs(graph, seed=1))


def test_a_sum_over_another_operand_keeps_its_own_loop() -> None:
    """sum(exp(3x - max(2x))): not the max's operand, so not online."""
    graph = _graph("float32", g="x[37*i + k] * 3")
    src = _source(graph)
    assert src.count("for r0_offset in range(") == 3
    stage = optimize(graph)
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    produced = launch.producer()
    assert all(online_operand(p, produced) is None for p in launch.placements)
    _check(graph, src, make_inputs(graph, seed=2))


def test_a_persistent_row_is_left_alone() -> None:
    graph = _graph("float32")
    src = _source(graph, CodegenOptions())
    assert "for r0_offset" not in src and "_maximum(_acc" not in src
    _check(graph, src, make_inputs(graph, seed=4))


def test_two_sums_over_one_max_store_it_once() -> None:
    """sum(exp(F - m)) twice (two outputs): each online, the max given by the first only."""
    text = """
format: fuseopt-graph/1
name: two_sums
buffers:
  x: {shape: [5, 37], dtype: float32, role: input}
  m: {shape: [5], dtype: float32, role: output}
  s: {shape: [5], dtype: float32, role: output}
  t: {shape: [5], dtype: float32, role: output}
nodes:
  - {name: mx, loops: [[i, 5]], reduce: [[r, 37]], store: "m[i]", value: "max(x[37*i + r])"}
  - {name: s1, loops: [[i, 5]], reduce: [[r, 37]], store: "s[i]", value: "sum(exp(x[37*i + r] - m[i]))"}
  - {name: s2, loops: [[i, 5]], reduce: [[k, 37]], store: "t[i]", value: "sum(exp(x[37*i + k] - m[i]))"}
"""
    graph = load_text(text, "two_sums.yaml")
    src = _source(graph)
    assert src.count("for r0_offset in range(") == 1 and src.count("tl.store(m_ptr") == 1
    _check(graph, src, make_inputs(graph, seed=5))


FUSED = """
format: fuseopt-graph/1
name: softmax_bias
buffers:
  x: {shape: [7, 45], dtype: bfloat16, role: input}
  b: {shape: [45], dtype: bfloat16, role: input}
  z: {shape: [7, 45], dtype: float32}
  m: {shape: [7], dtype: float32}
  s: {shape: [7], dtype: float32}
  y: {shape: [7, 45], dtype: float32, role: output}
nodes:
  - {name: zb, loops: [[i, 7], [j, 45]], store: "z[45*i + j]", value: "cast(x[45*i + j], float32) + cast(b[j], float32)"}
  - {name: mx, loops: [[i, 7]], reduce: [[r, 45]], store: "m[i]", value: "max(z[45*i + r])"}
  - {name: se, loops: [[i, 7]], reduce: [[r, 45]], store: "s[i]", value: "sum(exp(z[45*i + r] - m[i]))"}
  - {name: o, loops: [[i, 7], [j, 45]], store: "y[45*i + j]", value: "exp(z[45*i + j] - m[i]) / s[i]"}
"""


@pytest.mark.parametrize("xblock, r0_block", [(1, 8), (4, 16), (8, 4)])
def test_online_softmax_over_a_fused_value_with_masked_rows(xblock: int, r0_block: int) -> None:
    """F is a pointwise node fused into the loop (bf16 input plus a bias); 7 rows in tiles of
    4 or 8 leave masked rows, 45 points in blocks of 4 to 16 a masked last block."""
    graph = load_text(FUSED, "softmax_bias.yaml")
    options = CodegenOptions(
        persistent_rnumel=0, max_xblock=xblock, max_r0_block=r0_block, unroll_rnumel=0, split_programs=0
    )
    src = _source(graph, options)
    assert src.count("for r0_offset in range(") == 2, src
    _check(graph, src, make_inputs(graph, seed=6))


@settings(max_examples=examples(200, quick=8), deadline=None, suppress_health_check=list(HealthCheck))
@given(softmax_docs())
def test_random_softmax_graphs_match_the_reference_looped(doc: dict[str, object]) -> None:
    """Random max / sum(exp(F - max)) pairs (random F, dims, dtypes, layouts), planned and looped:
    the online form (where it applies) against the reference."""
    graph = doc_graph(doc)
    stage = optimize(graph)
    check(stage.graph, stage.plan, SMALL_LOOPED)


def test_a_loop_invariant_operand_is_not_hoisted_out_of_the_loop() -> None:
    """max(0.5) and sum(exp(0.5 - m)) over 4 points (found by hypothesis): the running maximum
    is loop-carried, so what reads it stays in the r loop (the sum is 4, not 2)."""
    text = """
format: fuseopt-graph/1
name: softmax_const
buffers:
  in0: {shape: [1, 1, 4], dtype: float32, role: input}
  m: {shape: [], dtype: float32, role: output}
  s: {shape: [], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [], reduce: [[r0, 1], [r1, 1], [r2, 4]], store: "m[0]", value: "max(0.5)"}
  - {name: n1, loops: [], reduce: [[r0, 1], [r1, 1], [r2, 4]], store: "s[0]", value: "sum(exp(0.5 - m[0]))"}
"""
    graph = load_text(text, "softmax_const.yaml")
    options = CodegenOptions(persistent_rnumel=0, max_r0_block=2, unroll_rnumel=0, split_programs=0)
    src = _source(graph, options)
    loop = src.split("for r0_offset in range(", 1)[1].split("\n    tl.store", 1)[0]
    assert "_maximum(_acc" in loop and "tl.exp(" in loop
    _check(graph, src, make_inputs(graph, seed=0))
