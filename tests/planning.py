"""Shared helpers for planner tests: load samples, plan, check the invariants and the values."""

from __future__ import annotations

import glob
import os
import re

import torch

from fuseopt.interp import make_inputs, run_graph
from fuseopt.io.load import load_graph, load_text
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


def graph(nodes: str, buffers: str) -> Graph:
    """A graph from YAML snippets; buffer lines that no node mentions are dropped."""
    used = [line for line in buffers.splitlines() if re.search(rf"\b{line.split(':')[0].strip()}\[", nodes)]
    text = "format: fuseopt-graph/1\nname: t\nbuffers:\n" + "\n".join(used) + f"\nnodes:\n{nodes}\n"
    return load_text(text, "t.yaml")


BUFS = """  x: {shape: [8, 16], dtype: float32, role: input}
  y: {shape: [8, 16], dtype: float32, role: input}
  a: {shape: [8, 16], dtype: float32}
  b: {shape: [8, 16], dtype: float32}
  r: {shape: [8], dtype: float32}
  s: {shape: [16], dtype: float32, role: output}
  o: {shape: [8, 16], dtype: float32, role: output}
  o2: {shape: [8, 16], dtype: float32, role: output}"""
