"""Generated modules (and launches.json) are byte-identical for the same graph and plan: twice in
one process, across interpreter processes with different PYTHONHASHSEED values (set iteration
never reaches the output), and for any order of the graph's lists."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import pytest

from fuseopt.cli.console import dump_json
from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.io.load import load_graph, load_text
from fuseopt.ir.graph import Graph
from fuseopt.ir.serialize import graph_to_dict
from fuseopt.passes.pipeline import optimize
from fuseopt.report.launches import launches_json
from tests.strategies import unfused_plan
from tests.sweeps import FULL
from tests.test_codegen_samples import NAMES, PATHS, name_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Emits every sample (unfused, autotuned, planner-fused) and prints one digest of all of it.
_SCRIPT = "import sys; from tests.test_codegen_determinism import digest; print(digest(sys.argv[1:]))"


def digest(paths: list[str]) -> str:
    h = hashlib.sha256()
    for path in paths:
        g = load_graph(path)
        h.update(emit_module(g, unfused_plan(g)).encode())
        h.update(emit_module(g, unfused_plan(g), autotune=True).encode())
        st = optimize(g)
        h.update(emit_module(st.graph, st.plan).encode())
        h.update(dump_json(launches_json(st.graph, st.plan, CodegenOptions())).encode())
    return h.hexdigest()


@pytest.mark.parametrize("name", NAMES)
def test_same_text_twice(name: str) -> None:
    g = load_graph(next(p for p in PATHS if name_of(p) == name))
    plan = unfused_plan(g)
    assert emit_module(g, plan) == emit_module(g, plan)
    assert emit_module(g, plan, autotune=True) == emit_module(g, plan, autotune=True)


def test_same_text_across_hash_seeds() -> None:
    digests = set()
    paths = PATHS if FULL else PATHS[::3]  # every third sample in the quick run
    for seed in ("0", "1", "2") if FULL else ("1",):  # and this process's own (random) seed below
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT, *paths],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(out.stdout.strip())
    digests.add(digest(paths))  # this process, under pytest's own (random) hash seed
    assert len(digests) == 1, digests


def _permuted(g: Graph, rnd: random.Random) -> Graph:
    """The same graph with its buffers shuffled and its nodes in another valid (topological) order."""
    doc = graph_to_dict(g)
    items = list(doc["buffers"].items())
    rnd.shuffle(items)
    writer = g.writer()
    deps = {n.name: {writer[b] for b in n.read_buffers() if b in writer} - {n.name} for n in g.nodes}
    by_name = {n["name"]: n for n in doc["nodes"]}
    order: list[str] = []
    while len(order) < len(by_name):
        ready = sorted(n for n in by_name if n not in order and deps[n] <= set(order))
        order.append(rnd.choice(ready))
    return load_text(
        json.dumps({**doc, "buffers": dict(items), "nodes": [by_name[n] for n in order]}), "p.json"
    )


@pytest.mark.parametrize("name", NAMES)
def test_same_text_for_any_order_of_buffers_and_nodes(name: str) -> None:
    """Stable mode: the plan and the generated module do not depend on the order of the lists."""
    g = load_graph(next(p for p in PATHS if name_of(p) == name))
    st = optimize(g)
    want = emit_module(st.graph, st.plan)
    launches = launches_json(st.graph, st.plan, CodegenOptions())
    rnd = random.Random(name)
    for _ in range(3):
        other = optimize(_permuted(g, rnd))
        assert emit_module(other.graph, other.plan) == want
        assert launches_json(other.graph, other.plan, CodegenOptions()) == launches
        assert launches_json(other.graph, other.plan, CodegenOptions()) == launches


CAPTURED = sorted(
    os.path.join(ROOT, "samples", "captured", f)
    for f in os.listdir(os.path.join(ROOT, "samples", "captured"))
    if f.endswith(".json")
)


@pytest.mark.parametrize("path", CAPTURED, ids=os.path.basename)
def test_captured_graphs_plan_and_emit_the_same_in_any_order(path: str) -> None:
    """Captured programs (library calls, views, Inductor's metadata): the plan, but for the hash of
    the input's bytes, and the module do not depend on the order of the lists."""
    g = load_graph(path)
    st = optimize(g)
    want, plan = emit_module(st.graph, st.plan), st.plan.to_json()
    launches = launches_json(st.graph, st.plan, CodegenOptions())
    plan.pop("graph_sha256")
    rnd = random.Random(path)
    for _ in range(2):
        other = optimize(_permuted(g, rnd))
        got = other.plan.to_json()
        got.pop("graph_sha256")  # the hash of the input's bytes, which an order changes
        assert got == plan
        assert emit_module(other.graph, other.plan) == want
        assert launches_json(other.graph, other.plan, CodegenOptions()) == launches
