"""Issue #25's suite (tests/fixtures/suite.py, benchmarks/suite.py): the CPU paths."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from benchmarks.suite import FORMAT, report, run_suite
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from tests.fixtures.programs import captured_fn
from tests.fixtures.suite import HELDOUT, SUITE, captured, workload

# A reduction, a pooling in channels-last bf16, an odd-shaped fp16 norm, a zoo piece with a mask,
# and a held-out row minimum (--only takes HELDOUT names too).
REPRESENTATIVE = ["sum_f32", "avg_s2_cl_bf16", "ln_f16_odd", "zoo_attn", "amin_5000_f16"]


def test_suite_has_the_issues_breadth() -> None:
    assert len(SUITE) >= 22
    assert sum(name.startswith("zoo_") for name in SUITE) >= 5
    for work in SUITE.values():
        assert set(work.full) == set(work.small)


@pytest.mark.slow  # every suite workload through every variant under the interpreter
@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs TRITON_INTERPRET=1")
def test_small_suite_checks_every_variant_in_process() -> None:
    """benchmarks/suite.py --small on five workloads: captured, every variant checked (no timing)."""
    seen: list[str] = []
    results = run_suite(
        REPRESENTATIVE, small=True, interpret=True, on_result=lambda r: seen.append(r["workload"])
    )
    assert seen == REPRESENTATIVE
    for res in results:
        assert res["ok"], res["summary"]["errors"]
        assert [v["name"] for v in res["variants"]] == ["fuseopt", "unfused", "eager"]
        assert res["summary"]["fuseopt_ms"] is None and res["summary"]["kernels"]["fuseopt"] >= 1
        assert res["sizes"] == dict(workload(res["workload"]).small)
    doc = report(results, device="cpu-interpret", copy_gbps=None, read_gbps=None, versions={})
    assert doc["format"] == FORMAT and doc["ok"] == doc["workloads"] == len(REPRESENTATIVE)
    assert doc["geomean_vs_torch_compile"] is None and doc["below_1x_torch_compile"] == []
    assert [row["workload"] for row in doc["table"]] == REPRESENTATIVE


@pytest.mark.parametrize("name", sorted(SUITE))
def test_every_workload_captures_and_plans(name: str) -> None:
    graph, _ = captured(name, small=True)
    stage = optimize(graph, Options())
    assert graph.name == name and 1 <= len(stage.plan.kernels) <= len(graph.nodes)


@pytest.mark.parametrize("name", sorted(HELDOUT))
def test_every_held_out_workload_matches_the_reference(name: str) -> None:
    """The workloads rules are checked on besides the suite: captured small, planned, and the
    generated module run under the interpreter against the reference."""
    from fuseopt.codegen.options import CodegenOptions
    from tests.strategies import check

    assert name not in SUITE
    graph, _ = captured(name, small=True)
    stage = optimize(graph, Options())
    check(stage.graph, stage.plan, CodegenOptions())


def _second_first(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return b * 3 + a  # Dynamo's graph inputs follow first use: b, then a


def _var_then_mean(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.var_mean(x, dim=1)  # results in return order, the graph's outputs in buffer order


@pytest.mark.parametrize(
    "fn, args",
    [
        (_second_first, (torch.arange(12.0).view(3, 4), torch.ones(3, 4))),
        (_var_then_mean, (torch.arange(30.0).view(3, 10),)),
    ],
)
def test_captured_program_binds_by_argument_and_return_order(fn: Any, args: tuple[torch.Tensor, ...]) -> None:
    """The eager and torch.compile baselines call the program with its own arguments and read its
    results in return order, whatever order the graph lists its inputs and outputs in."""
    graph, program = captured_fn(fn, args)
    order = [b.name for b in graph.inputs], [b.name for b in graph.outputs]
    assert order[0] != graph.meta["capture"]["call"]["args"] or order[1] != [
        o["buffer"] for o in graph.meta["capture"]["outputs"]
    ]  # the case the binding is for: the graph's order is not the program's
    names = graph.meta["capture"]["call"]["args"]
    views = {b.name: args[names.index(b.name)] for b in graph.inputs}
    got = program(views)
    want = fn(*args)
    for g, w in zip(got, (want,) if isinstance(want, torch.Tensor) else want, strict=True):
        torch.testing.assert_close(g, w)
