"""`fuseopt run`: summaries in text and JSON, --save only after a successful run, backend table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result

from fuseopt.cli.main import _register, cli
from fuseopt.cli.run_cmd import BACKENDS
from fuseopt.interp import logical_outputs, run_graph
from fuseopt.io.load import load_graph

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
    assert doc["format"] == "fuseopt-run/1" and doc["backend"] == "reference" and doc["seed"] == 0
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
