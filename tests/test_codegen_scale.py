"""Fused producers are computed once per kernel: generated code grows linearly with the nodes.

Chains and DAGs where each node reads the two or three before it: re-expanding a producer's value
at every fused read made code generation exponential (24 nodes took 50 s, 64 never finished).
The bound asserted is on statements (lines of the kernels), never on wall-clock time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fuseopt.codegen import emit_module
from fuseopt.codegen.kernel import KernelEmitter
from fuseopt.io.load import load_text
from fuseopt.ir.expr import Expr, walk
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.passes.verify import verify
from tests.planning import plan
from tests.strategies import SPLIT, check


def dag(n: int, fan: int, *, size: int = 8, masked: bool = False, reduce: int = 0) -> Graph:
    """n nodes, each reading the `fan` before it (masked: the one before under a mask); with `reduce`, the nodes run over rows of `reduce` points inside a row sum, and a chain of
    epilogues after it reads the sum and each other."""
    rows = reduce or 1
    cols = size
    buffers: dict[str, Any] = {"x": {"shape": [rows, cols], "dtype": "float32", "role": "input"}}
    at = f"{cols}*i + j" if reduce else "j"  # (without a reduction there are no rows)
    nodes: list[dict[str, Any]] = []
    for k in range(n):
        srcs = [f"t{k - j}" if k - j >= 0 else "x" for j in range(1, fan + 1)]
        terms = [f"{s}[{at}]" for s in srcs]
        if masked and k:
            terms[0] = f"masked(j >= {k % 3}, {srcs[0]}[{at}], 0.0)"
        buffers[f"t{k}"] = {"shape": [rows, cols], "dtype": "float32"}
        nodes.append(
            {
                "name": f"n{k}",
                "loops": [["i", rows], ["j", cols]] if reduce else [["j", cols]],
                "store": f"t{k}[{at}]",
                "value": f"0.5 * ({' + '.join(terms)})" if k % 3 else f"tanh({' - '.join(terms)})",
            }
        )
    last = f"t{n - 1}"
    buffers[last]["role"] = "output"
    if reduce:
        buffers["s"] = {"shape": [rows], "dtype": "float32"}
        nodes.append(
            {
                "name": "r",
                "loops": [["i", rows]],
                "reduce": [["j", cols]],
                "store": "s[i]",
                "value": f"sum({last}[{cols}*i + j])",
            }
        )
        prev = "s"
        for k in range(n):
            buffers[f"e{k}"] = {"shape": [rows], "dtype": "float32"}
            nodes.append(
                {
                    "name": f"m{k}",
                    "loops": [["i", rows]],
                    "store": f"e{k}[i]",
                    "value": f"{prev}[i] * 0.5 + s[i]",
                }
            )
            prev = f"e{k}"
        buffers[prev]["role"] = "output"
    doc = {"format": "fuseopt-graph/1", "name": "dag", "buffers": buffers, "nodes": nodes}
    return load_text(json.dumps(doc), "dag.json")


def _kernel_lines(src: str) -> int:
    """Lines of the kernels (the statements they are made of; the helpers they call are a
    fixed cost, not counted)."""
    count, inside = 0, False
    for line in src.splitlines():
        if line.startswith("def "):
            inside = line.startswith("def triton_")
        elif inside and line and not line.startswith((" ", ")")):
            inside = False
        count += inside
    return count


@pytest.mark.parametrize("fan", [2, 3])
@pytest.mark.parametrize("n", [24, 28, 64])
def test_one_kernel_of_a_dag_is_linear_and_matches(n: int, fan: int) -> None:
    g = dag(n, fan)
    stage = plan(g, max_fusion_size=n)
    assert len(stage.plan.kernels) == 1
    src = check(stage.graph, stage.plan)
    assert _kernel_lines(src) <= 4 * n + 40


@pytest.mark.parametrize("shape", [{}, {"masked": True}, {"reduce": 3}])
def test_each_value_is_emitted_once_per_place(shape: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The emitter's work, counted: a few visits of each expression node, not
    one per path through the DAG (which fails here at once instead of running for hours)."""
    g = dag(64, 3, **shape)
    stage = optimize(g, Options(max_fusion_size=200))
    assert len(stage.plan.kernels) == 1
    size = sum(len(list(walk(n.value))) for n in stage.graph.nodes)
    calls = 0
    value = KernelEmitter.value

    def counted(self: KernelEmitter, e: Expr, ctx: Any, conds: Any) -> Any:
        nonlocal calls
        calls += 1
        assert calls <= 4 * size, "the emitter re-expands fused producers"
        return value(self, e, ctx, conds)

    monkeypatch.setattr(KernelEmitter, "value", counted)
    emit_module(stage.graph, stage.plan)


@pytest.mark.parametrize("n", [24, pytest.param(64, marks=pytest.mark.slow)])
def test_masked_reads_and_reduction_loops_stay_linear(n: int) -> None:
    """Producers read under a mask, and inside a looped (split) reduction with epilogues that
    read its result: each value is computed once per place (loop, masked context) it is used."""
    g = dag(n, 2, masked=True)
    stage = plan(g, max_fusion_size=n)
    src = check(stage.graph, stage.plan)
    assert len(stage.plan.kernels) == 1 and _kernel_lines(src) <= 6 * n + 40
    g = dag(n, 2, reduce=3)
    stage = plan(g, max_fusion_size=2 * n + 1)
    assert [k.kind for k in stage.plan.kernels] == ["reduction"]
    src = check(stage.graph, stage.plan)
    assert _kernel_lines(src) <= 8 * n + 60
    split = check(stage.graph, stage.plan, SPLIT)  # a looped reduction split in two kernels
    assert "rsplit" in split and _kernel_lines(split) <= 12 * n + 80


@pytest.mark.slow  # a 2,000-node graph; the 24-node sizes above run in the quick set
def test_two_thousand_nodes_plan_and_generate_in_linear_size() -> None:
    g = dag(2000, 3)
    stage = optimize(g)  # kernels of at most 64 nodes
    verify(stage.graph, stage.plan)
    src = emit_module(stage.graph, stage.plan)
    assert len(stage.plan.kernels) <= 2000 // 32
    assert _kernel_lines(src) <= 4 * 2000 + 40 * len(stage.plan.kernels)


@pytest.mark.slow
def test_one_kernel_of_two_thousand_nodes() -> None:
    """Code generation of one kernel of 2000 fused nodes (past the planner's max_fusion_size
    limit, so the plan is built by hand: code generation takes any valid plan)."""
    from tests.strategies import plan_of

    g = dag(2000, 3)
    fused = plan_of(g, [[n.name for n in g.nodes]])
    verify(g, fused)
    src = emit_module(g, fused)
    assert _kernel_lines(src) <= 4 * 2000 + 40
