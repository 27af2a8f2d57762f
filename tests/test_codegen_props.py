"""Property tests: random valid graphs (tests/strategies.py) compiled to Triton and run under
TRITON_INTERPRET=1 compute what the interpreter computes, unfused and as the planner fuses them.

A sweep run (tests/sweeps.py) tries FUSEOPT_CODEGEN_EXAMPLES (default 100) graphs per test, 200 in
all; the quick run a fifth of them. The nightly soak raises it:
`FUSEOPT_SWEEP=1 FUSEOPT_CODEGEN_EXAMPLES=3000 python -m pytest tests/test_codegen_props.py`.
A failing graph, once hypothesis has shrunk it, is left in tests/regressions/<test>-failure.json:
commit it (renamed) with the fix, and `test_regressions` replays it on every run from then on.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings

from fuseopt.io.load import load_graph
from fuseopt.passes.pipeline import optimize
from tests.strategies import (
    check,
    check_autotuned,
    check_forced,
    check_online,
    check_split,
    check_window,
    doc_graph,
    graph_docs,
    unfused_plan,
)
from tests.sweeps import examples

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

EXAMPLES = int(os.environ.get("FUSEOPT_CODEGEN_EXAMPLES", "100"))
SETTINGS = settings(
    max_examples=examples(EXAMPLES, quick=8),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
REGRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions")


def _keep_on_failure(test: str, doc: dict[str, object], fn: Callable[[], None]) -> None:
    """Run fn; on failure write the graph to tests/regressions/<test>-failure.json. Hypothesis
    replays the shrunk example last, so the file ends up holding the minimal failing graph."""
    try:
        fn()
    except Exception:
        os.makedirs(REGRESSIONS, exist_ok=True)
        with open(os.path.join(REGRESSIONS, f"{test}-failure.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
        raise


@SETTINGS
@given(graph_docs())
def test_random_graphs_unfused(doc: dict[str, object]) -> None:
    g = doc_graph(doc)

    def run() -> None:
        check(g, unfused_plan(g))

    _keep_on_failure("unfused", doc, run)


@SETTINGS
@given(graph_docs())
def test_random_graphs_planner_fused(doc: dict[str, object]) -> None:
    g = doc_graph(doc)

    def run() -> None:
        stage = optimize(g)
        check(stage.graph, stage.plan)
        check_split(stage.graph, stage.plan)
        check_window(stage.graph, stage.plan)
        check_online(stage.graph, stage.plan)
        check_forced(stage.graph, stage.plan)
        check_autotuned(stage.graph, stage.plan)

    _keep_on_failure("planner-fused", doc, run)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(REGRESSIONS, "*.json"))), ids=os.path.basename)
def test_regressions(path: str) -> None:
    """Graphs that once failed: unfused and planner-fused code must match the interpreter."""
    g = load_graph(path)
    check(g, unfused_plan(g))
    stage = optimize(g)
    check(stage.graph, stage.plan)
    check_split(stage.graph, stage.plan)
