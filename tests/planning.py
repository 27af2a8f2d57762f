"""Shared helpers for planner tests: load samples, plan, check the invariants and the values."""

from __future__ import annotations

import glob
import os

import torch

from fuseopt.interp import make_inputs, run_graph
from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import Stage, optimize
from fuseopt.passes.verify import verify

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The full-size avg_pool2d takes seconds in the interpreter; its small form covers the same plan.
HEAVY = {"avgpool_cl"}


def sample_paths(include_heavy: bool = True) -> list[str]:
    paths = sorted(glob.glob(os.path.join(ROOT, "samples", "*.yaml"))) + sorted(
        glob.glob(os.path.join(ROOT, "samples", "cases", "*.yaml"))
    )
    return [p for p in paths if include_heavy or sample_name(p) not in HEAVY]


def sample_name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def plan(graph: Graph, **opts: object) -> Stage:
    stage = optimize(graph, Options(**opts), verify_each=True)  # type: ignore[arg-type]
    verify(stage.graph, stage.plan)
    return stage


def assert_same_values(original: Graph, transformed: Graph, seed: int = 0) -> None:
    """The transformed graph computes the original's outputs (the interpreter is the oracle)."""
    inputs = make_inputs(original, seed=seed)
    want = run_graph(original, inputs)
    got = run_graph(transformed, inputs)
    for buf in original.outputs:
        torch.testing.assert_close(got[buf.name], want[buf.name], msg=lambda m, b=buf.name: f"{b}: {m}")


def load(path: str) -> Graph:
    return load_graph(path)
