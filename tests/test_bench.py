"""`fuseopt bench`: without a GPU it exits 3; --interpret checks every variant on the CPU."""

from __future__ import annotations

import json
import os

import pytest
import torch
from click.testing import CliRunner

from benchmarks.workloads import SMALL, WORKLOADS
from fuseopt.bench.harness import bench_graph, io_bytes
from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_text
from tests.planning import ROOT

_register()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_bench_without_gpu_exits_3() -> None:
    res = CliRunner().invoke(cli, ["bench", os.path.join(ROOT, "samples", "apbt.yaml")])
    assert res.exit_code == 3
    assert "needs a CUDA GPU" in res.output and "Traceback" not in res.output


def test_bench_interpret_checks_all_variants(tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(str(tmp_path), "bench.json")
    path = os.path.join(ROOT, "samples", "layernorm_t.yaml")
    res = CliRunner().invoke(cli, ["bench", path, "--interpret", "--json", out, "--format", "json"])
    assert res.exit_code == 0, res.output
    with open(out, encoding="utf-8") as f:
        report = json.load(f)
    (r,) = report["results"]
    assert r["ok"] and [v["name"] for v in r["variants"]] == ["fuseopt", "unfused"]
    assert r["kernels"] == {"fuseopt": 1, "unfused": 3}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workloads_match_their_torch_programs(name: str) -> None:
    doc, program = WORKLOADS[name](**SMALL[name])
    graph = load_text(json.dumps(doc), f"{name}.json")
    res = bench_graph(graph, program, interpret=True)
    assert res["ok"], [v["error"] for v in res["variants"]]
    assert {v["name"] for v in res["variants"]} == {"fuseopt", "unfused", "eager"}
    assert io_bytes(graph) > 0


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
