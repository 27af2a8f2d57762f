"""Property tests: random valid graphs (tests/strategies.py) compiled to Triton and run under
TRITON_INTERPRET=1 compute what the interpreter computes, unfused and as the planner fuses them.

A default run tries FUSEOPT_CODEGEN_EXAMPLES (default 40) graphs per test; raise it for a soak.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from tests.strategies import check, doc_graph, graph_docs, unfused_plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

EXAMPLES = int(os.environ.get("FUSEOPT_CODEGEN_EXAMPLES", "40"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(graph_docs())
def test_random_graphs_unfused(doc: dict[str, object]) -> None:
    g = doc_graph(doc)
    check(g, unfused_plan(g))


@SETTINGS
@given(graph_docs())
def test_random_graphs_planner_fused(doc: dict[str, object]) -> None:
    pipeline = pytest.importorskip("fuseopt.passes.pipeline")
    g = doc_graph(doc)
    stage = pipeline.optimize(g)
    check(stage.graph, stage.plan)
