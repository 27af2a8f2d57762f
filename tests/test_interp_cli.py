"""`fuseopt run`: summaries in text and JSON, --save only after a successful run, backend table."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result

from fuseopt.cli.main import _register, cli
from fuseopt.cli.run_cmd import BACKENDS
from fuseopt.codegen import emit_module
from fuseopt.errors import InputError
from fuseopt.interp import Limits, check_limits, logical_outputs, make_inputs, run_graph
from fuseopt.interp.limits import buffer_bytes
from fuseopt.io.load import load_graph, load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import run_module

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SMALL = SAMPLES / "avgpool_cl_small.yaml"
MULTI = SAMPLES / "jit_aot.yaml"

BAD_INDIRECT = """\
format: fuseopt-graph/1
name: bad
buffers:
  x:   {shape: [4], dtype: float32, role: input}
  out: {shape: [4], dtype: float32, role: output}
nodes:
  - name: shifted
    loops: [[i0, 4]]
    store: out[i0]
    value: masked(i0 % 2 == 1, x[i0 + 1], 0.0) + x[i0]
"""


def _invoke(*args: str) -> Result:
    _register()
    return CliRunner().invoke(cli, ["run", *args])


def test_text_summary() -> None:
    res = _invoke(str(SMALL))
    assert res.exit_code == 0, res.output
    assert "avgpool_cl_small" in res.output and "2x8x5x5" in res.output and "bfloat16" in res.output
    assert "sha256" in res.output and "out" in res.output


def test_json_summary_is_deterministic_and_matches_the_interpreter() -> None:
    res = _invoke(str(MULTI), "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["format"] == "fuseopt-run/2" and doc["backend"] == "reference" and doc["seed"] == 0
    assert [o["name"] for o in doc["outputs"]] == ["buf0", "buf1", "buf2", "buf3", "buf4"]
    g = load_graph(MULTI)
    outs = logical_outputs(g, run_graph(g, seed=0))
    for o in doc["outputs"]:
        t = outs[o["name"]]
        assert o["shape"] == list(t.shape) and o["dtype"] == str(t.dtype).removeprefix("torch.")
        if t.dtype.is_floating_point:
            assert o["min"] == pytest.approx(float(t.min())) and o["max"] == pytest.approx(float(t.max()))
            assert o["mean"] == pytest.approx(float(t.double().mean()))
    assert _invoke(str(MULTI), "--format", "json").output == res.output
    other = json.loads(_invoke(str(MULTI), "--format", "json", "--seed", "1").output)
    assert other["outputs"][0]["sha256"] != doc["outputs"][0]["sha256"]


def test_save_writes_each_output(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "out"
    res = _invoke(str(MULTI), "--save", str(target), "--seed", "2")
    assert res.exit_code == 0, res.output
    g = load_graph(MULTI)
    outs = logical_outputs(g, run_graph(g, seed=2))
    assert sorted(p.name for p in target.iterdir()) == sorted(f"{n}.npy" for n in outs)
    for name, t in outs.items():
        assert np.array_equal(np.load(target / f"{name}.npy"), t.numpy())


def test_save_bfloat16_as_float32(tmp_path: Path) -> None:
    res = _invoke(str(SMALL), "--save", str(tmp_path))
    assert res.exit_code == 0, res.output
    g = load_graph(SMALL)
    want = logical_outputs(g, run_graph(g))["out"]
    arr = np.load(tmp_path / "out.npy")
    assert arr.dtype == np.float32 and arr.shape == tuple(want.shape)
    assert torch.equal(torch.from_numpy(arr), want.float())


def test_no_files_when_the_run_fails(tmp_path: Path) -> None:
    graph = tmp_path / "bad.yaml"
    graph.write_text(BAD_INDIRECT)
    target = tmp_path / "saved"
    res = _invoke(str(graph), "--save", str(target))
    assert res.exit_code == 2
    assert "shifted" in res.stderr and "bad.yaml:10:12" in res.stderr and "Traceback" not in res.stderr
    assert not target.exists()


def test_no_files_when_the_graph_is_invalid(tmp_path: Path) -> None:
    graph = tmp_path / "invalid.yaml"
    graph.write_text(BAD_INDIRECT.replace("x[i0 + 1]", "y[i0]"))
    target = tmp_path / "saved"
    res = _invoke(str(graph), "--save", str(target), "--format", "json")
    assert res.exit_code == 2 and "unknown buffer 'y'" in res.stderr
    assert not target.exists()


def test_backends_are_a_table() -> None:
    assert "reference" in BACKENDS
    res = _invoke(str(SMALL), "--backend", "reference", "--format", "json")
    assert res.exit_code == 0 and json.loads(res.output)["backend"] == "reference"
    assert _invoke(str(SMALL), "--backend", "no-such-backend").exit_code == 2


# -- execution limits: refused before anything is allocated ----------------------------------------
def _graph(buffers: str, nodes: str) -> str:
    return f"format: fuseopt-graph/1\nname: big\nbuffers:\n{buffers}nodes:\n{nodes}"


HUGE_OFFSET = _graph(
    "  x:   {shape: [8], dtype: DT, role: input, offset: 1099511627776}\n"
    "  out: {shape: [8], dtype: DT, role: output}\n",
    "  - {name: n0, loops: [[i0, 8]], store: 'out[i0]', value: 'x[i0 + 1099511627776]'}\n",
)
LONG_REDUCTION = _graph(
    "  x:   {shape: [1], dtype: DT, role: input}\n  out: {shape: [1], dtype: DT, role: output}\n",
    "  - {name: n0, loops: [[i0, 1]], reduce: [[r0, 2147483647]], store: 'out[i0]', value: 'sum(x[0])'}\n",
)
BIG_POINTWISE = _graph(  # 2**36 elements: a dense output too big, and too many points
    "  x:   {shape: [1], dtype: DT, role: input}\n"
    "  out: {shape: [65536, 1048576], dtype: DT, role: output}\n",
    "  - {name: n0, loops: [[i0, 65536], [i1, 1048576]], store: 'out[1048576*i0 + i1]', value: 'x[0]'}\n",
)
BROADCAST_MM = _graph(  # inputs of one element each, read as [2**17, 2**17] matrices
    "  a:   {shape: [131072, 131072], stride: [0, 0], dtype: DT, role: input}\n"
    "  c:   {shape: [131072, 131072], dtype: DT, role: output}\n",
    "  - {name: mm, kind: extern, op: mm, inputs: [a, a], output: c}\n",
)


@pytest.fixture
def no_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused run must not allocate a storage first: every allocator the interpreter uses fails."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("allocated before checking the limits")

    for name in ("zeros", "empty", "randn", "randint", "full"):
        monkeypatch.setattr(torch, name, refuse)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int8", "bool"])
@pytest.mark.parametrize(
    ("text", "pointer", "at", "message"),
    [
        (HUGE_OFFSET, "/buffers/x", (4, 8), "needs {tib} TiB for its buffers, inputs included"),
        (LONG_REDUCTION, "/nodes/0", (7, 5), "visits 2147483647 loop points"),
        (BIG_POINTWISE, "/buffers/out", (5, 8), "the limit is 4.0 GiB (--max-memory)"),
        (BROADCAST_MM, "/buffers/c", (5, 8), "The largest, 'c', needs"),
    ],
    ids=["offset", "reduction", "pointwise", "broadcast-mm"],
)
def test_run_refuses_what_it_cannot_afford(
    tmp_path: Path,
    no_allocation: None,
    dtype: str,
    text: str,
    pointer: str,
    at: tuple[int, int],
    message: str,
) -> None:
    if dtype in ("int8", "bool") and "sum(" in text:
        text = text.replace("sum(x[0])", "sum(x[0] > 0)").replace(
            "out: {shape: [1], dtype: DT", "out: {shape: [1], dtype: int64"
        )
    if dtype in ("int8", "bool") and "kind: extern" in text:
        pytest.skip("library calls take floating dtypes")
    graph = tmp_path / "big.yaml"
    graph.write_text(text.replace("DT", dtype))
    assert _validate_ok(graph)  # validation allows big sizes: only execution is capped
    res = _invoke(str(graph), "--format", "json")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output + res.stderr and res.stdout == ""
    itemsize = {"float32": 4, "bfloat16": 2, "float64": 8, "int8": 1, "bool": 1}[dtype]
    want = message.format(tib=f"{(2**40 + 8 + 8 + 8) * itemsize / 2**40:.1f}")
    line = next(ln for ln in res.stderr.splitlines() if f": {pointer}: " in ln)
    assert line.startswith(f"error: {graph}:{at[0]}:{at[1]}: {pointer}: running graph 'big'"), line
    assert want in res.stderr, res.stderr


def _validate_ok(graph: Path) -> bool:
    return CliRunner().invoke(cli, ["validate", str(graph)]).exit_code == 0


def test_the_limits_are_options() -> None:
    g = load_graph(MULTI)
    memory = sum(buffer_bytes(g).values())
    for args, code in (
        ((), 0),
        (("--max-memory", str(memory)), 0),
        (("--max-memory", str(memory - 1)), 2),
        (("--max-memory", "1KiB"), 2),
        (("--max-points", "1000"), 2),
        (("--max-memory", "16GiB", "--max-points", str(2**40)), 0),
        (("--max-memory", "lots"), 2),  # a usage error
        (("--max-points", "0"), 2),
    ):
        res = _invoke(str(MULTI), *args)
        assert res.exit_code == code, (args, res.output)
        assert "Traceback" not in res.output


def test_a_raised_limit_lets_a_large_run_go(tmp_path: Path) -> None:
    """24 MiB of buffers: refused under a 16 MiB limit, run under the default."""
    graph = tmp_path / "g.yaml"
    graph.write_text(
        _graph(
            "  x:   {shape: [2097152], dtype: float32, role: input}\n"
            "  out: {shape: [2097152], dtype: float32, role: output}\n",
            "  - {name: n0, loops: [[i0, 2097152]], store: 'out[i0]', value: '2 * x[i0]'}\n",
        )
    )
    assert _invoke(str(graph), "--max-memory", "16MiB").exit_code == 2
    assert _invoke(str(graph), "--max-memory", "24MiB").exit_code == 0


def test_every_runner_applies_the_limits(no_allocation: None) -> None:
    """The interpreter, the random inputs and fuseopt's runs of generated code: one check."""
    g = load_text(LONG_REDUCTION.replace("DT", "float32"), "big.yaml")
    tight = Limits(max_memory=2**30, max_points=100)
    for call in (
        lambda: make_inputs(g),
        lambda: run_graph(g),
        lambda: run_graph(g, {}, limits=tight),
        lambda: run_module("raise SystemExit('imported')\n", {}, graph=g),
    ):
        with pytest.raises(InputError) as info:
            call()
        (d,) = info.value.diagnostics
        assert d.code == "limit" and d.pointer == "/nodes/0" and "--max-points" in d.message
    check_limits(g, Limits(max_points=2**31))  # within a raised limit


def test_planning_does_not_allocate_per_element() -> None:
    """A 2**40-element graph validates and plans in moments; only running it is refused."""
    n = 2**20
    text = _graph(
        f"  x:   {{shape: [{n}, {n}], dtype: float32, role: input}}\n"
        f"  y:   {{shape: [{n}, {n}], stride: [1, {n}], dtype: float32, role: input}}\n"
        f"  b0:  {{shape: [{n}, {n}], dtype: float32}}\n"
        f"  out: {{shape: [{n}], dtype: float32, role: output}}\n",
        f"  - {{name: n0, loops: [[i0, {n}], [i1, {n}]], store: 'b0[{n}*i0 + i1]', value: 'x[{n}*i0 + i1] * y[i0 + {n}*i1]'}}\n"
        f"  - {{name: n1, loops: [[i0, {n}]], reduce: [[r0, {n}]], store: 'out[i0]', value: 'sum(b0[{n}*i0 + r0])'}}\n",
    )
    t0 = time.perf_counter()
    g = load_text(text, "big.yaml")
    stage = optimize(g)
    emit_module(stage.graph, stage.plan)
    assert len(stage.plan.kernels) == 1 and time.perf_counter() - t0 < 20
    with pytest.raises(InputError, match="needs 12.0 TiB"):
        check_limits(g)


def test_a_load_outside_its_buffer_where_its_mask_holds_is_an_input_error_before_generated_code_runs(
    tmp_path: Path,
) -> None:
    """Validation leaves a masked load whose bound is loose to run time. `run --backend triton`
    runs the reference first, so such a graph is a located input error (exit 2), never generated
    code reading outside the buffer (the interpreter's process crashed with a segfault)."""
    import os
    import subprocess
    import sys

    path = tmp_path / "oob.yaml"
    path.write_text(
        "format: fuseopt-graph/1\nname: oob\nbuffers:\n"
        "  x: {shape: [8], dtype: float32, role: input}\n"
        "  out: {shape: [8], dtype: float32, role: output}\n"
        "nodes:\n"
        "  - {name: n0, loops: [[i0, 8]], store: 'out[i0]', "
        "value: 'masked(i0 < 4, x[i0 + 4294967296 * (i0 // 2)], 0.0)'}\n",
        encoding="utf-8",
    )
    _register()
    assert CliRunner().invoke(cli, ["validate", str(path)]).exit_code == 0  # checked at run time
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "fuseopt", "run", str(path), "--backend", "triton"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "oob.yaml:" in res.stderr and "outside its storage" in res.stderr
    assert "Traceback" not in res.stderr
