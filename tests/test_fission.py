"""`codegen.fission`: a looped reduction's r loops as launches of their own (a BatchNorm's mean,
variance and normalized output over few channels), each checked against the interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.codegen.fission import loops_apart
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from fuseopt.report.launches import launches_json
from tests.strategies import check, doc_graph, graph, graph_docs, softmax_docs, variance_docs
from tests.sweeps import examples

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

# Every reduction looped with R0_BLOCK 2 and split wherever it can be, its loops apart wherever
# it has several: tiny graphs take every path of fission.
FISSION = CodegenOptions(
    persistent_rnumel=0,
    max_r0_block=2,
    unroll_rnumel=0,
    split_programs=1 << 20,
    split_min_r_blocks=1,
    fission=True,
)


def _batchnorm(n: int, c: int, hw: int, dtype: str = "float32", channels_last: bool = False) -> Graph:
    """BatchNorm in training over x[n, c, hw]: the channels' means, the running mean updated
    (an epilogue of the first loop, an output), the variances and their reciprocal square roots
    (an epilogue of the second), and the normalized x; channels-last stores x as [n, hw, c]."""
    x = f"x[{hw * c}*n + h*{c} + c]" if channels_last else f"x[{c * hw}*n + {hw}*c + h]"
    y = f"y[{c * hw}*n + {hw}*c + h]"
    f = f"cast({x}, float32)"
    total = float(n * hw)
    return graph(
        f"""
format: fuseopt-graph/1
name: bn_train
buffers:
  x: {{shape: [{n}, {c}, {hw}], dtype: {dtype}, role: input}}
  rm: {{shape: [{c}], dtype: float32, role: input}}
  mean: {{shape: [{c}], dtype: float32, role: intermediate}}
  rm_out: {{shape: [{c}], dtype: float32, role: output}}
  var: {{shape: [{c}], dtype: float32, role: intermediate}}
  rstd: {{shape: [{c}], dtype: float32, role: intermediate}}
  y: {{shape: [{n}, {c}, {hw}], dtype: {dtype}, role: output}}
nodes:
  - {{name: m, loops: [[c, {c}]], reduce: [[n, {n}], [h, {hw}]], store: "mean[c]", value: "sum({f} / {total})"}}
  - {{name: u, loops: [[c, {c}]], store: "rm_out[c]", value: "0.9 * rm[c] + 0.1 * mean[c]"}}
  - {{name: v, loops: [[c, {c}]], reduce: [[n, {n}], [h, {hw}]], store: "var[c]",
      value: "sum(({f} - mean[c]) * ({f} - mean[c]))"}}
  - {{name: s, loops: [[c, {c}]], store: "rstd[c]", value: "rsqrt(var[c] / {total} + 1e-5)"}}
  - {{name: o, loops: [[n, {n}], [c, {c}], [h, {hw}]], store: "{y}",
      value: "cast(({f} - mean[c]) * rstd[c], {dtype})"}}
"""
    )


def _launch(g: Graph) -> tuple[Graph, ComputeLaunch]:
    stage = optimize(g)
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    return stage.graph, launch


def test_loops_apart_of_a_batchnorm() -> None:
    """Three loops: the mean, the variance (its `x - mean` recomputed), the normalized output
    over every point; each stores what it computes that is kept or read later."""
    _, launch = _launch(_batchnorm(4, 3, 10))
    parts = loops_apart(launch)
    assert parts is not None
    assert [p.kind for p in parts] == ["reduction", "reduction", "pointwise"]
    assert [[q.node.name for q in p.placements] for p in parts] == [["m", "u"], ["v", "s"], ["o"]]
    assert [p.stores for p in parts] == [("mean", "rm_out"), ("rstd",), ("y",)]
    assert parts[2].axes[0].numel == 4 * 3 * 10
    assert launch.stores == ("rm_out", "y")  # the means and rstd are the launch's own: stored apart


def test_recomputed_values_are_stored_once() -> None:
    """A pointwise value of the second loop that the third reads again is computed in both, and
    stored by its own loop's launch only."""
    g = graph(
        """
format: fuseopt-graph/1
name: centred
buffers:
  x: {shape: [3, 8], dtype: float32, role: input}
  mean: {shape: [3], dtype: float32, role: intermediate}
  d: {shape: [3, 8], dtype: float32, role: output}
  ss: {shape: [3], dtype: float32, role: output}
  y: {shape: [3, 8], dtype: float32, role: output}
nodes:
  - {name: m, loops: [[i, 3]], reduce: [[j, 8]], store: "mean[i]", value: "sum(x[8*i + j] / 8.0)"}
  - {name: c, loops: [[i, 3], [j, 8]], store: "d[8*i + j]", value: "x[8*i + j] - mean[i]"}
  - {name: s, loops: [[i, 3]], reduce: [[j, 8]], store: "ss[i]", value: "sum(d[8*i + j] * d[8*i + j])"}
  - {name: o, loops: [[i, 3], [j, 8]], store: "y[8*i + j]", value: "d[8*i + j] * rsqrt(ss[i] + 1.0)"}
"""
    )
    stage_graph, launch = _launch(g)
    parts = loops_apart(launch)
    assert parts is not None
    members = [[q.node.name for q in p.placements] for p in parts]
    assert members == [["m"], ["c", "s"], ["c", "o"]]
    assert [p.stores for p in parts] == [("mean",), ("d", "ss"), ("y",)]
    src = check(stage_graph, optimize(g).plan, FISSION)
    assert "r loops apart" in src


@pytest.mark.parametrize(
    ("shape", "dtype", "channels_last"),
    [
        ((2, 3, 8), "float32", False),  # rows of 16: split in chunks
        ((3, 5, 7), "float32", False),  # rows of 21: looped apart
        ((2, 3, 8), "float16", False),
        ((2, 5, 4), "bfloat16", True),
        ((3, 2, 5), "float32", True),
    ],
)
def test_batchnorm_apart_matches(shape: tuple[int, int, int], dtype: str, channels_last: bool) -> None:
    g = _batchnorm(*shape, dtype, channels_last)
    stage = optimize(g)
    src = check(stage.graph, stage.plan, FISSION)
    assert src.count("\ndef triton_") >= 3 and "r loops apart" in src
    assert emit_module(stage.graph, stage.plan, options=FISSION) == src  # deterministic


def test_cost_model_takes_loops_apart_for_few_rows() -> None:
    """16 channels of 8 x 224 x 224: 16 programs fused, far fewer than the GPU's multiprocessors;
    each loop apart splits (more programs, one more read of x), estimated over 2x faster
    (`fission_min_gain_pct`). 64 channels of 32 x 56 x 56 estimate less (1.3x: fused), and
    4096 rows of 4096 fill the GPU fused."""
    few = _launch(_batchnorm(8, 16, 50176))
    stage = optimize(_batchnorm(8, 16, 50176))
    src = emit_module(stage.graph, stage.plan)
    assert "r loops apart" in src and "its r loops apart (fission): estimated" in src
    doc = launches_json(stage.graph, stage.plan, CodegenOptions())
    (row,) = [r for r in doc["launches"] if r["kind"] == "reduction"]
    assert row["fission"] is not None and 2 * row["fission"]["apart_us"] <= row["fission"]["fused_us"]
    assert [k["part"] for k in row["kernels"]] == ["partial", "finish", "partial", "finish", None]
    schema = json.loads((Path(__file__).parent.parent / "schemas" / "launches.schema.json").read_text())
    Draft202012Validator(schema).validate(doc)
    assert loops_apart(few[1]) is not None
    off = emit_module(stage.graph, stage.plan, options=CodegenOptions(fission=False))
    assert "r loops apart" not in off and off.count("\ndef triton_") == 1
    many = optimize(_batchnorm(1, 4096, 4096))
    assert "r loops apart" not in emit_module(many.graph, many.plan)
    some = optimize(_batchnorm(32, 64, 3136))
    assert "r loops apart" not in emit_module(some.graph, some.plan)
    assert "r loops apart" in emit_module(some.graph, some.plan, options=CodegenOptions(fission=True))


def test_forced_strategy_keeps_the_launch_whole() -> None:
    """`--strategy` names one kernel shape for the launch: its loops stay together."""
    stage = optimize(_batchnorm(8, 16, 50176))
    src = emit_module(stage.graph, stage.plan, options=CodegenOptions(strategy="looped_row"))
    assert "r loops apart" not in src


def test_one_loop_has_nothing_to_take_apart() -> None:
    _, launch = _launch(_batchnorm(4, 3, 10))
    g = graph(
        """
format: fuseopt-graph/1
name: rowsum
buffers:
  x: {shape: [3, 8], dtype: float32, role: input}
  s: {shape: [3], dtype: float32, role: output}
nodes:
  - {name: r, loops: [[i, 3]], reduce: [[j, 8]], store: "s[i]", value: "sum(x[8*i + j])"}
"""
    )
    _, single = _launch(g)
    assert loops_apart(single) is None
    assert loops_apart(launch) is not None


_SETTINGS = settings(
    max_examples=examples(30, quick=6),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_SETTINGS
@given(st.one_of(variance_docs(), softmax_docs(), graph_docs()))
def test_random_graphs_apart(doc: dict[str, object]) -> None:
    """Random graphs (a mean and a variance, a max and its softmax sum, any graph) planned, their
    looped reductions' loops apart wherever they have several: the interpreter's results."""
    g = doc_graph(doc)
    stage = optimize(g)
    if "r loops apart" in emit_module(stage.graph, stage.plan, options=FISSION):
        check(stage.graph, stage.plan, FISSION)


def test_optimize_and_bench_take_the_fission_they_are_given(tmp_path: Path) -> None:
    """`fuseopt optimize --fission auto|on|off`: the cost model's loops apart (two splits and a
    pointwise launch), the same forced, one fused kernel; `bench_graph` records its choice."""
    from click.testing import CliRunner

    from fuseopt.bench.harness import bench_graph
    from fuseopt.cli.main import cli
    from fuseopt.ir.serialize import dump_json

    path = tmp_path / "bn.json"
    path.write_text(dump_json(_batchnorm(8, 16, 50176)), encoding="utf-8")
    kernels = {}
    for mode in ("auto", "on", "off"):
        out = tmp_path / mode
        res = CliRunner().invoke(cli, ["optimize", str(path), "-o", str(out), "--fission", mode])
        assert res.exit_code == 0, res.output
        kernels[mode] = (out / "kernels.py").read_text(encoding="utf-8").count("\ndef triton_")
    assert kernels == {"auto": 5, "on": 5, "off": 1}
    res = CliRunner().invoke(cli, ["optimize", str(path), "--fission", "sometimes"])
    assert res.exit_code == 2 and "sometimes" in res.output
    small = bench_graph(_batchnorm(2, 3, 8), interpret=True, with_compile=False, fission=False)
    assert small["ok"] and small["fission"] is False
