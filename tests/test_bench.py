"""`fuseopt bench`: without a GPU it exits 3; --interpret checks every variant on the CPU."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fuseopt.bench.harness import bench_graph, io_bytes
from fuseopt.bench.timing import Timing
from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_text
from tests.fixtures.workloads import SMALL, WORKLOADS
from tests.planning import ROOT

_register()

# These run generated kernels on CPU tensors under the Triton interpreter. tests/conftest.py turns
# it on where there is no GPU; on a GPU machine run them alone with TRITON_INTERPRET=1.
interpreter_only = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs TRITON_INTERPRET=1 (set on machines without a GPU)",
)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_bench_without_gpu_exits_3() -> None:
    res = CliRunner().invoke(cli, ["bench", os.path.join(ROOT, "samples", "apbt.yaml")])
    assert res.exit_code == 3
    assert "needs a CUDA GPU" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("limit", [["--max-memory", "4KiB"], ["--max-points", "100"]])
def test_bench_refuses_a_graph_over_its_limits_before_anything_else(limit: list[str], tmp_path: Path) -> None:
    """Over --max-memory or --max-points: exit 2 at the largest buffer or node of that file, before
    the GPU is looked for (so also on a machine without one) and before a report is written; the
    same graph within the limits runs (on the CPU, interpreted)."""
    small = os.path.join(ROOT, "samples", "layernorm_t.yaml")
    out = tmp_path / "bench.json"
    res = CliRunner().invoke(cli, ["bench", small, small, *limit, "--json", str(out)])
    assert res.exit_code == 2, res.output
    assert limit[0] in res.output and "layernorm_t.yaml:" in res.output and "Traceback" not in res.output
    assert not out.exists()
    if os.environ.get("TRITON_INTERPRET") == "1":
        ok = CliRunner().invoke(
            cli, ["bench", small, "--interpret", limit[0], "1GiB" if "memory" in limit[0] else "10000000"]
        )
        assert ok.exit_code == 0, ok.output


@pytest.mark.skipif(
    not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1", reason="needs a CUDA GPU"
)
def test_bench_on_the_gpu_checks_times_and_targets_its_multiprocessors() -> None:
    """On a GPU: every variant checked and timed; the kernels generated for its multiprocessors."""
    from fuseopt.io.load import load_graph
    from fuseopt.targets import detect

    graph = load_graph(os.path.join(ROOT, "samples", "layernorm_t.yaml"))
    res = bench_graph(graph, None, rep=20, warmup=5, with_compile=False, kernels_top=5)
    assert res["ok"], [v["error"] for v in res["variants"]]
    rows = res["slowest_kernels"]["fuseopt"]
    assert [r["estimated_us"] for r in rows] == [res["estimated_us"][r["kernel"]] for r in rows]
    assert res["multiprocessors"] == torch.cuda.get_device_properties(0).multi_processor_count
    assert res["target"] == detect().name  # type: ignore[union-attr]
    by = {v["name"]: v for v in res["variants"]}
    assert by["fuseopt"]["ms"] > 0 and by["fuseopt"]["gbps"] > 0 and res["speedups"]["vs_unfused"] > 0


@interpreter_only
def test_bench_interpret_checks_all_variants(tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(str(tmp_path), "bench.json")
    path = os.path.join(ROOT, "samples", "layernorm_t.yaml")
    res = CliRunner().invoke(cli, ["bench", path, "--interpret", "--json", out, "--format", "json"])
    assert res.exit_code == 0, res.output
    with open(out, encoding="utf-8") as f:
        report = json.load(f)
    (r,) = report["results"]
    assert r["ok"] and [v["name"] for v in r["variants"]] == ["fuseopt", "unfused", "eager"]
    assert r["baseline"] == "rendered"  # no source program: eager runs a torch rendering
    assert r["kernels"] == {"fuseopt": 1, "unfused": 3}
    assert r["multiprocessors"] == 132 and r["target"] == "h200"  # the interpreter: the default target
    # the cost model's estimate of each generated kernel, named as in the module
    (name,) = r["estimated_us"]
    assert name.startswith("triton_per_fused_") and r["estimated_us"][name] > 0


@interpreter_only
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_captured_workloads_check_on_the_cpu(name: str) -> None:
    """tests/fixtures/programs.py: each program captured (small), planned as the hand-written
    workload is, and every variant checked against the reference."""
    from tests.fixtures.programs import PROGRAMS, captured

    assert set(PROGRAMS) == set(WORKLOADS)
    graph, program = captured(name, small=True)
    res = bench_graph(graph, program, interpret=True)
    assert res["ok"], [v["error"] for v in res["variants"]]
    doc, _ = WORKLOADS[name](**SMALL[name])
    hand = bench_graph(load_text(json.dumps(doc), f"{name}.json"), None, interpret=True)
    assert res["kernels"]["fuseopt"] == hand["kernels"]["fuseopt"] == 1
    assert res["plan_bytes"] == hand["plan_bytes"]


@interpreter_only
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workloads_match_their_torch_programs(name: str) -> None:
    doc, program = WORKLOADS[name](**SMALL[name])
    graph = load_text(json.dumps(doc), f"{name}.json")
    res = bench_graph(graph, program, interpret=True)
    assert res["ok"], [v["error"] for v in res["variants"]]
    assert {v["name"] for v in res["variants"]} == {"fuseopt", "unfused", "eager"}
    assert io_bytes(graph) > 0


@interpreter_only
def test_a_wrong_kernel_is_reported_not_timed() -> None:
    doc, program = WORKLOADS["apbt"](**SMALL["apbt"])
    graph = load_text(json.dumps(doc), "apbt.json")

    def wrong(v: object) -> dict[str, torch.Tensor]:
        return {"out": program(v)["out"] + 1}  # type: ignore[arg-type]

    res = bench_graph(graph, wrong, interpret=True)
    eager = next(v for v in res["variants"] if v["name"] == "eager")
    assert (
        not res["ok"]
        and not eager["ok"]
        and eager["ms"] is None
        and "Mismatch" in eager["error"]
        or "out" in eager["error"]
    )


def test_code_generation_that_fails_is_a_failed_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    """fuseopt's module and its launch report are made inside its variant: a generation error is
    that variant's, reported, and the others still run."""
    import fuseopt.report.launches as launches

    def broken(*args: object) -> object:
        raise RuntimeError("no rule for this op")

    monkeypatch.setattr(launches, "module_and_launches", broken)
    doc, program = WORKLOADS["apbt"](**SMALL["apbt"])
    res = bench_graph(load_text(json.dumps(doc), "apbt.json"), program, interpret=True)
    by = {v["name"]: v for v in res["variants"]}
    assert not by["fuseopt"]["ok"] and "no rule for this op" in by["fuseopt"]["error"]
    assert by["unfused"]["ok"] and by["eager"]["ok"] and res["estimated_us"] == {}


class _FakeBench:
    """harness.GpuTimer on the CPU: `run(fn)` gives the GPU time; no host time."""

    def __init__(self, run: Callable[[Callable[[], object]], float]) -> None:
        self.run = run

    def timing(self, fn: Callable[[], object]) -> Timing:
        return Timing(self.run(fn), 0.0)

    def __call__(self, fn: Callable[[], object]) -> float:
        return self.run(fn)


@interpreter_only
def test_timed_runs_do_not_poison_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The correctness check poisons fresh outputs (NaN fill); the timed calls must not, or the
    time would include a full write of every output (a defect the H200 runs once showed)."""
    import fuseopt.bench.harness as harness

    fills: list[int] = []
    real_full = torch.full

    def counting_full(*args: object, **kwargs: object) -> torch.Tensor:
        fills.append(1)
        return real_full(*args, **kwargs)  # type: ignore[arg-type]

    def run(fn: Callable[[], object]) -> float:
        monkeypatch.setattr(torch, "full", counting_full)
        try:
            fn()
        finally:
            monkeypatch.setattr(torch, "full", real_full)
        return 1.0

    def fake_do_bench(warmup: int, rep: int, device: object = None) -> object:
        return _FakeBench(run)

    monkeypatch.setattr(harness, "gpu_timer", fake_do_bench)
    doc, program = WORKLOADS["apbt"](**SMALL["apbt"])
    graph = load_text(json.dumps(doc), "apbt.json")
    res = bench_graph(graph, program, device="cpu", with_compile=False)
    assert res["ok"], [v["error"] for v in res["variants"]]
    timed = [v["name"] for v in res["variants"] if v["ms"] == 1.0]
    assert timed == ["fuseopt", "unfused", "eager"]
    assert fills == [], "a timed call filled an output with poison"


@interpreter_only
def test_run_module_restores_poison() -> None:
    from fuseopt.codegen import emit_module
    from fuseopt.interp import make_inputs
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import load_module, run_module

    doc, _ = WORKLOADS["apbt"](**SMALL["apbt"])
    graph = load_text(json.dumps(doc), "apbt.json")
    st = optimize(graph)
    module = load_module(emit_module(st.graph, st.plan))
    run_module(module, make_inputs(graph, seed=0), poison=True)
    assert module.POISON is False


@pytest.mark.parametrize(
    "sample",
    [
        "apbt.yaml",
        "layernorm_t.yaml",
        pytest.param("three_layouts_mean.yaml", marks=pytest.mark.slow),
        pytest.param("cases/sum_and_t.yaml", marks=pytest.mark.slow),
        "avgpool_cl_small.yaml",
    ],
)
def test_rendered_program_is_the_graph(sample: str) -> None:
    """A graph without a source program is benchmarked against a torch rendering of itself: the
    interpreter's torch ops (eager), and that traced to straight-line aten ops (what
    torch.compile gets). Both compute what the reference computes."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from fuseopt.bench.harness import _check_logical, _check_storages, _views
    from fuseopt.bench.source import rendered_program
    from fuseopt.interp import make_inputs, run_graph
    from fuseopt.io.load import load_graph

    g = load_graph(os.path.join(ROOT, "samples", sample))
    inputs = make_inputs(g, seed=1)
    expected = run_graph(g, {k: v.clone() for k, v in inputs.items()})
    views = _views(g, inputs)
    program = rendered_program(g)
    _check_logical(g, program(views), expected, inputs)
    storages = {b.name: inputs[b.name] for b in g.inputs}
    traced = make_fx(lambda st: program.run(st))(storages)
    assert "index_put" in traced.code
    _check_storages(g, traced(storages), expected, inputs)
    _check_logical(g, program.compiled(views, backend="aot_eager")(views), expected, inputs)


@interpreter_only
@pytest.mark.slow  # a whole bench run under the interpreter; the quick set checks the parts
def test_bench_without_source_uses_the_rendering(tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(str(tmp_path), "bench.json")
    res = CliRunner().invoke(
        cli,
        [
            "bench",
            os.path.join(ROOT, "samples", "apbt.yaml"),
            "--interpret",
            "--json",
            out,
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    with open(out, encoding="utf-8") as f:
        (r,) = json.load(f)["results"]
    assert r["baseline"] == "rendered" and r["ok"]
    assert [v["name"] for v in r["variants"]] == ["fuseopt", "unfused", "eager"]


@interpreter_only
def test_same_size_copy_moves_the_graphs_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each timed variant is also related to a copy of the graph's own byte count (half read,
    half written), timed in the same run."""
    import fuseopt.bench.harness as harness

    copies: list[int] = []
    real_copy = harness.copy_bandwidth_gbps

    def recording_copy(device: torch.device, do_bench: object, nbytes: int = 1 << 30) -> float:
        copies.append(nbytes)
        return real_copy(device, do_bench, nbytes)  # type: ignore[arg-type]

    def fake_do_bench(warmup: int, rep: int, device: object = None) -> object:
        return _FakeBench(lambda fn: (fn(), 2.0)[1])  # every call "takes" 2 ms

    monkeypatch.setattr(harness, "gpu_timer", fake_do_bench)
    monkeypatch.setattr(harness, "copy_bandwidth_gbps", recording_copy)
    doc, program = WORKLOADS["tsum"](**SMALL["tsum"])
    graph = load_text(json.dumps(doc), "tsum.json")
    res = bench_graph(graph, program, device="cpu", with_compile=False, copy_gbps=1.0)
    nbytes = io_bytes(graph)
    assert copies == [nbytes // 2]
    same = res["copy_same_size_gbps"]
    assert same == pytest.approx(2 * (nbytes // 2 // 4 * 4) / 2e-3 / 1e9)
    for v in res["variants"]:
        assert v["gbps"] == pytest.approx(nbytes / 2e-3 / 1e9)
        assert v["pct_copy_same_size"] == pytest.approx(100 * v["gbps"] / same)
        assert v["pct_copy"] == pytest.approx(100 * v["gbps"] / 1.0)


@interpreter_only
@pytest.mark.slow  # a whole bench run under the interpreter; the quick set checks the parts
def test_bench_text_report_per_graph() -> None:
    res = CliRunner().invoke(cli, ["bench", os.path.join(ROOT, "samples", "apbt.yaml"), "--interpret"])
    assert res.exit_code == 0, res.output
    assert "apbt (eager and torch.compile run a torch rendering of the graph)" in res.output
    assert "fuseopt" in res.output and "unfused" in res.output and "Traceback" not in res.output


def test_bench_table_percentages() -> None:
    """Shares of the copy bandwidth: whole percent, one decimal below 10% (a tiny graph's run is
    mostly launch), blank when not timed."""
    from fuseopt.cli.bench_cmd import _pct

    assert [_pct(p) for p in (None, 0.04, 7.25, 80.8, 102.1)] == ["", "0.0%", "7.2%", "81%", "102%"]


# -- a graph file never makes fuseopt import code (issue #21) ---------------------------------------
_TWICE = {
    "format": "fuseopt-graph/1",
    "name": "twice",
    "buffers": {
        "x": {"shape": [4, 8], "dtype": "float32", "role": "input"},
        "out": {"shape": [4, 8], "dtype": "float32", "role": "output"},
    },
    "nodes": [{"name": "n0", "loops": [["i0", 32]], "store": "out[i0]", "value": "2 * x[i0]"}],
}
_PROGRAM = """\
import pathlib

pathlib.Path({marker!r}).write_text("imported")


def twice(x):
    return 2 * x
"""


def _graph_naming_a_program(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(graph, program, marker): the graph's meta.source names the program, which writes the
    marker when it is imported."""
    marker = tmp_path / "IMPORTED"
    program = tmp_path / "prog.py"
    program.write_text(_PROGRAM.format(marker=str(marker)), encoding="utf-8")
    doc = dict(_TWICE, meta={"source": {"file": "prog.py", "function": "twice"}})
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(doc), encoding="utf-8")
    return graph, program, marker


@interpreter_only
def test_bench_never_imports_what_meta_source_names(tmp_path: Path) -> None:
    graph, _, marker = _graph_naming_a_program(tmp_path)
    res = CliRunner().invoke(cli, ["bench", str(graph), "--interpret", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert not marker.exists(), "bench imported the file meta.source names"
    (r,) = json.loads(res.stdout)["results"]
    assert r["ok"] and r["baseline"] == "rendered" and "source" not in r
    assert "meta.source names prog.py:twice; not imported" in res.stderr
    res = CliRunner().invoke(cli, ["bench", str(graph), "--interpret"])
    assert "twice (eager and torch.compile run a torch rendering of the graph)" in res.stdout
    assert not marker.exists()


@interpreter_only
def test_bench_source_option_imports_the_program_and_says_so(tmp_path: Path) -> None:
    graph, program, marker = _graph_naming_a_program(tmp_path)
    target = f"{program}:twice"
    res = CliRunner().invoke(
        cli, ["bench", str(graph), "--interpret", "--source", target, "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    assert marker.exists()
    assert f"importing {program.resolve()}:twice (runs that file's code)" in res.stderr
    (r,) = json.loads(res.stdout)["results"]
    assert r["ok"] and r["baseline"] == "source" and r["source"] == f"{program.resolve()}:twice"
    assert [v["name"] for v in r["variants"]] == ["fuseopt", "unfused", "eager"]


def test_bench_source_is_checked_before_anything_runs(tmp_path: Path) -> None:
    """A bad --source is a usage error (exit 2, no traceback) and imports nothing."""
    graph, program, marker = _graph_naming_a_program(tmp_path)
    cases = [
        ([str(graph), str(graph), "--source", f"{program}:twice"], "give exactly one GRAPH"),
        ([str(graph), "--source", f"{tmp_path / 'missing.py'}:twice"], "no such file"),
        ([str(graph), "--source", str(program)], "expected FILE.py:FUNCTION"),
    ]
    for args, why in cases:
        res = CliRunner().invoke(cli, ["bench", *args, "--interpret"])
        assert res.exit_code == 2 and why in res.output, (args, res.output)
        assert "Traceback" not in res.output and not marker.exists()


CAPTURED_SAMPLES = ("mlp_block", "attention_block", "inception_block", "rmsnorm_rope")


def _bench_captured(name: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    graph = os.path.join(ROOT, "samples", "captured", f"{name}.json")
    target = os.path.join(ROOT, "samples", "captured", f"programs.py:{name}")
    res = CliRunner().invoke(cli, ["bench", graph, "--interpret", "--source", target, "--format", "json"])
    report = json.loads(res.stdout) if res.exit_code in (0, 1) else {}
    return res.exit_code, report, res.output


@interpreter_only
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n == "mlp_block" else pytest.mark.slow) for n in CAPTURED_SAMPLES]
)
def test_bench_source_runs_a_captured_model_on_its_own_weights(name: str) -> None:
    """A captured graph's inputs are the program's argument and its lifted parameters: the program
    is called with its argument only (it used to get every input: `mlp_block() takes 1 positional
    argument but 7 were given`), on its own weights, which fuseopt's module gets too."""
    code, report, output = _bench_captured(name)
    assert code == 0, output
    (r,) = report["results"]
    assert report["format"] == "fuseopt-bench/1"
    assert r["baseline"] == "source" and r["ok"], [v["error"] for v in r["variants"]]
    assert [v["name"] for v in r["variants"]] == ["fuseopt", "unfused", "eager"]
    graph = load_text(Path(ROOT, "samples", "captured", f"{name}.json").read_text(encoding="utf-8"), name)
    inputs = [b.name for b in graph.inputs]
    assert r["weights"] and set(r["weights"]) < set(inputs)  # every input but the argument
    assert len(inputs) - len(r["weights"]) == len(graph.meta["source"]["inputs"])


@interpreter_only
def test_bound_program_gives_every_variant_the_modules_weights() -> None:
    """bind_program: the weight buffers hold the module's parameters (not random values), the
    argument buffer the recorded input; eager's result equals the reference on those inputs,
    and a wrong weight is caught."""
    import importlib.util

    from fuseopt.bench.model import bind_program
    from fuseopt.io.load import load_graph

    spec = importlib.util.spec_from_file_location(
        "_bench_programs", os.path.join(ROOT, "samples", "captured", "programs.py")
    )
    assert spec is not None and spec.loader is not None
    programs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(programs)
    graph = load_graph(os.path.join(ROOT, "samples", "captured", "mlp_block.json"))
    bound = bind_program(graph, programs.mlp_block)
    assert bound.arguments == ("x",)
    storages = bound.input_storages()
    params = dict(programs.MLP.named_parameters())
    for buffer, path in (("mlp_fc1_weight", "fc1.weight"), ("mlp_norm_bias", "norm.bias")):
        assert bound.tensors[buffer] is params[path]
        assert torch.equal(storages[buffer], params[path].detach().reshape(-1))
    res = bench_graph(graph, bound, interpret=True, inputs=storages)
    assert res["ok"], [v["error"] for v in res["variants"]]
    storages["mlp_fc2_bias"] = storages["mlp_fc2_bias"] + 1.0  # not the module's weights any more
    res = bench_graph(graph, bound, interpret=True, inputs=storages)
    eager = next(v for v in res["variants"] if v["name"] == "eager")
    assert not eager["ok"] and "output 0" in eager["error"]


@interpreter_only
def test_bench_source_of_another_program_is_refused() -> None:
    """The graph of one program with --source naming another: a located refusal, exit 2."""
    graph = os.path.join(ROOT, "samples", "captured", "rmsnorm_rope.json")
    target = os.path.join(ROOT, "samples", "captured", "programs.py:mlp_block")
    res = CliRunner().invoke(cli, ["bench", graph, "--interpret", "--source", target])
    assert res.exit_code == 2, res.output
    assert "is not the capture of this program" in res.output and "Traceback" not in res.output


def test_gpu_library_calls_run_without_tf32_and_the_setting_is_restored() -> None:
    """cuDNN's default TF32 convolutions made every variant of a ResNet-50 differ from the reference
    on the H200; bench turns TF32 off for all variants alike, and restores the user's setting."""
    from fuseopt.bench.harness import full_precision_library_calls

    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cudnn.allow_tf32 = True
    try:
        with pytest.raises(RuntimeError), full_precision_library_calls(torch.device("cuda")):
            assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
            raise RuntimeError("a failing variant")
        assert torch.backends.cudnn.allow_tf32  # restored, also after an error
        with full_precision_library_calls(torch.device("cpu")):
            assert torch.backends.cudnn.allow_tf32  # the CPU: nothing to change
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_recorded_module_paths_are_followed_only_through_modules() -> None:
    """meta.capture.call's paths are graph-file text: a path with `__` or one that leaves the
    modules' parameter and buffer dicts binds nothing (bench then captures the program again)."""
    import importlib.util

    from fuseopt.bench.model import bind_recorded

    spec = importlib.util.spec_from_file_location(
        "_bench_programs_paths", os.path.join(ROOT, "samples", "captured", "programs.py")
    )
    assert spec is not None and spec.loader is not None
    programs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(programs)
    text = Path(ROOT, "samples", "captured", "mlp_block.json").read_text(encoding="utf-8")
    x = torch.randn(2, 16, 64)
    good = bind_recorded(load_text(text, "mlp_block.json"), programs.mlp_block, [x])
    assert good is not None and good.tensors["mlp_fc1_weight"] is programs.MLP.fc1.weight
    for path in (
        "MLP.fc1.__dict__",
        "__builtins__.open",
        "MLP.fc1.training",
        "MLP.forward.weight",
        "os.path",
    ):
        doc = json.loads(text)
        doc["meta"]["capture"]["call"]["parameters"]["mlp_fc1_weight"] = path
        graph = load_text(json.dumps(doc), "mlp_block.json")
        assert bind_recorded(graph, programs.mlp_block, [x]) is None, path


@interpreter_only
def test_bench_takes_the_strategy_it_is_given(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--strategy looped_row: layernorm_t's kernel is looped (persistent otherwise), every variant
    still matches the reference, and the report says which strategy was forced."""
    import fuseopt.codegen

    real = fuseopt.codegen.emit_module
    made: list[str] = []

    def emit(*args: object, **kw: object) -> str:
        made.append(real(*args, **kw))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(fuseopt.codegen, "emit_module", emit)
    path = os.path.join(ROOT, "samples", "layernorm_t.yaml")
    for strategy, marker in ((None, "persistent reduction"), ("looped_row", "looped reduction")):
        made.clear()
        out = os.path.join(str(tmp_path), f"{strategy}.json")
        args = ["bench", path, "--interpret", "--json", out] + (["--strategy", strategy] if strategy else [])
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
        with open(out, encoding="utf-8") as f:
            (r,) = json.load(f)["results"]
        assert r["ok"] and r["strategy"] == strategy
        assert f": {marker}," in made[0]  # fuseopt's module, before the unfused plan's


def _add_in_place(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x.add_(y)
    return x * 3


def _sub_in_place(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x.sub_(y)  # the same result as _add_in_place's below, another new value of x
    return (x + 2 * y) * 3


@interpreter_only
def test_bench_checks_the_inputs_a_program_writes_in_place() -> None:
    """A program that writes an input in place (`meta.capture.mutations`): eager's run is checked
    on the input's new value, not only on its results, and the caller's storages stay unwritten."""
    from fuseopt.bench.model import bind_capture
    from fuseopt.capture import capture_program

    x, y = torch.randn(4, 5), torch.randn(4, 5)
    cap = capture_program(_add_in_place, x, y)
    bound = bind_capture(cap.graph, _add_in_place, [x, y], cap)
    assert bound.mutations == ((bound.arguments[0], cap.graph.meta["capture"]["mutations"][0]["buffer"]),)
    storages = bound.input_storages()
    before = {k: v.clone() for k, v in storages.items()}
    res = bench_graph(cap.graph, bound, interpret=True, inputs=storages)
    assert res["ok"], [v["error"] for v in res["variants"]]
    assert all(torch.equal(storages[k], before[k]) for k in storages)
    wrong = bind_capture(cap.graph, _sub_in_place, [x, y], cap)
    res = bench_graph(cap.graph, wrong, interpret=True, inputs=storages)
    eager = next(v for v in res["variants"] if v["name"] == "eager")
    assert not eager["ok"] and "written in place" in eager["error"], eager


def _square_plus(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a * b + a


@interpreter_only
def test_one_tensor_passed_twice_binds_both_arguments_to_its_input() -> None:
    """`f(x, x)`: Dynamo makes the one tensor one graph input; both arguments are bound to it
    (the second was reported as unused), and eager's run on it is checked."""
    from fuseopt.bench.model import bind_capture
    from fuseopt.capture import capture_program

    x = torch.randn(4, 5)
    cap = capture_program(_square_plus, x, x)
    (only,) = cap.graph.inputs
    bound = bind_capture(cap.graph, _square_plus, [x, x], cap)
    assert bound.arguments == (only.name, only.name)
    res = bench_graph(cap.graph, bound, interpret=True, inputs=bound.input_storages())
    assert res["ok"], [v["error"] for v in res["variants"]]


@interpreter_only
def test_bench_starts_each_check_from_the_modules_own_buffers_as_they_were() -> None:
    """BatchNorm in training mode updates its running statistics on every call: each checked run
    starts from the values the reference ran on (an earlier benchmark, or timed runs, have
    written them), and the module's buffers are as they were afterwards."""
    from fuseopt.bench.model import bind_capture
    from fuseopt.capture import capture_program

    bn = torch.nn.BatchNorm2d(3).train()
    x = torch.randn(4, 3, 2, 2)
    cap = capture_program(bn, x)
    bound = bind_capture(cap.graph, bn, [x], cap)
    assert {name for name, _ in bound.mutations} == {"running_mean", "running_var", "num_batches_tracked"}
    storages = bound.input_storages()
    for _ in range(2):  # the second run's eager check failed on the statistics updated twice
        res = bench_graph(cap.graph, bound, interpret=True, inputs=storages)
        assert res["ok"], [v["error"] for v in res["variants"]]
    assert torch.equal(bn.running_mean, torch.zeros(3)) and int(bn.num_batches_tracked) == 0


def test_a_malformed_mutation_record_is_refused_by_entry() -> None:
    from fuseopt.bench.model import recorded_mutations
    from fuseopt.errors import InputError

    doc, _ = WORKLOADS["apbt"](**SMALL["apbt"])
    inputs = [n for n, b in doc["buffers"].items() if b.get("role") == "input"]
    for entry in ({"input": inputs[0], "buffer": "nowhere"}, {"input": inputs[0]}, "x"):
        doc["meta"] = {"capture": {"mutations": [entry]}}
        with pytest.raises(InputError, match=r"mutations\[0\]"):
            recorded_mutations(load_text(json.dumps(doc), "apbt.json"))


def _with_number(x: torch.Tensor, number: torch.Tensor) -> tuple[torch.Tensor, float, int, torch.Tensor]:
    return x.exp(), number.item(), 3, x * 2


@interpreter_only
@pytest.mark.parametrize("value", [7, 2.5])
def test_bench_checks_a_program_that_returns_python_numbers(value: float) -> None:
    """`.item()`'s number is a 0-d graph output (`capture.results`): eager and torch.compile are
    checked on it, not refused for returning fewer tensors than the graph has outputs; a constant
    the program returns itself has no output; a wrong number fails the check."""
    from fuseopt.bench.model import bind_capture
    from fuseopt.capture import capture_program

    x, number = torch.randn(4, 5), torch.tensor(value)
    cap = capture_program(_with_number, x, number)
    bound = bind_capture(cap.graph, _with_number, [x, number], cap)
    res = bench_graph(cap.graph, bound, interpret=True, inputs=bound.input_storages())
    assert res["ok"], [v["error"] for v in res["variants"]]

    def wrong(x: torch.Tensor, number: torch.Tensor) -> tuple[torch.Tensor, float, int, torch.Tensor]:
        return x.exp(), number.item() + 1, 3, x * 2

    bad = bind_capture(cap.graph, wrong, [x, number], cap)
    res = bench_graph(cap.graph, bad, interpret=True, inputs=bad.input_storages())
    eager = next(v for v in res["variants"] if v["name"] == "eager")
    assert not eager["ok"] and "output 1" in eager["error"], eager
