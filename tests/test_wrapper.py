"""The generated `call` wrapper (fuseopt/codegen/wrapper.py): buffer lifetimes.

A materialised intermediate is allocated at the launch that first uses it and deleted after the
launch that last does; `call(..., intermediates=True)` still returns every one. The live buffers
are watched through the module's `_empty` (weak references: a deleted buffer dies at once), and
compared with lifetimes computed here from the plan alone (each buffer's writer and readers by
plan kernel), so the wrapper's own bookkeeping is not the oracle.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings

from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs, run_graph
from fuseopt.ir.graph import Graph
from fuseopt.plan import Plan
from fuseopt.runtime.compare import check_outputs, compare_buffer, value_tolerances
from fuseopt.runtime.module import load_module, run_module
from tests.strategies import doc_graph, graph, graph_docs, unfused_plan

CHAIN = """
format: fuseopt-graph/1
name: chain
buffers:
  x:   {shape: [64], dtype: float32, role: input}
  t0:  {shape: [64], dtype: float32, role: intermediate}
  t1:  {shape: [64], dtype: float32, role: intermediate}
  t2:  {shape: [64], dtype: float32, role: intermediate}
  t3:  {shape: [64], dtype: float32, role: intermediate}
  t4:  {shape: [64], dtype: float32, role: intermediate}
  out: {shape: [64], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 64]], store: "t0[i]", value: "x[i] + 1"}
  - {name: n1, loops: [[i, 64]], store: "t1[i]", value: "t0[i] * 2"}
  - {name: n2, loops: [[i, 64]], store: "t2[i]", value: "t1[i] - x[i]"}
  - {name: n3, loops: [[i, 64]], store: "t3[i]", value: "relu(t2[i])"}
  - {name: n4, loops: [[i, 64]], store: "t4[i]", value: "t3[i] + t0[i]"}
  - {name: n5, loops: [[i, 64]], store: "out[i]", value: "t4[i] * t4[i]"}
"""


def _watched_run(graph: Graph, plan: Plan, *, intermediates: bool) -> tuple[dict[str, Any], list[int]]:
    """The module run with its `_empty` watched: the outputs, and at each allocation the bytes of
    the buffers then alive (the new one included)."""
    module: Any = load_module(emit_module(graph, plan))
    alive: list[weakref.ref[torch.Tensor]] = []
    seen: list[int] = []
    real: Callable[..., torch.Tensor] = module._empty

    def empty(size: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        t = real(size, dtype, device)
        alive.append(weakref.ref(t))
        seen.append(sum(t.nbytes for t in (r() for r in alive) if t is not None))
        return t

    module._empty = empty
    out = run_module(module, make_inputs(graph, seed=0), poison=True, intermediates=intermediates)
    return out, seen


def _peak_by_plan(graph: Graph, plan: Plan) -> int:
    """The most bytes of non-input buffers alive at any plan kernel: outputs from their writer
    on, intermediates from their writer to their last reader."""
    kernel_of = {n: i for i, k in enumerate(plan.kernels) for n in k.nodes}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for node in graph.nodes:
        i = kernel_of[node.name]
        for b in node.outputs:
            first[b] = min(first.get(b, i), i)
            last[b] = max(last.get(b, i), i)
        for b in node.read_buffers():
            last[b] = max(last.get(b, i), i)
    end = len(plan.kernels)
    size = {b.name: b.storage_size * b.dtype.itemsize for b in graph.buffers}
    role = {b.name: b.role for b in graph.buffers}

    def live(i: int) -> int:
        return sum(size[b] for b in first if first[b] <= i <= (end if role[b] == "output" else last[b]))

    return max((live(i) for i in range(end)), default=0)


def test_a_chains_intermediates_are_freed_after_their_last_read() -> None:
    g = graph(CHAIN)
    plan = unfused_plan(g)
    out, seen = _watched_run(g, plan, intermediates=False)
    assert set(out) == {"out"}
    # t0 lives until n4 reads it; otherwise one buffer read and one written: at most 3 of 256 B
    assert max(seen) == 3 * 256, seen
    assert len(seen) == 6  # every materialised buffer allocated once
    expected = run_graph(g, make_inputs(g, seed=0))
    assert all(c.ok for c in check_outputs(g, out, expected))


def test_intermediates_true_returns_every_freed_buffer_as_computed() -> None:
    g = graph(CHAIN)
    out, seen = _watched_run(g, unfused_plan(g), intermediates=True)
    assert set(out) == {"out", "t0", "t1", "t2", "t3", "t4"}
    assert max(seen) == 6 * 256  # kept for the caller, so none is freed
    expected = run_graph(g, make_inputs(g, seed=0))
    for b in g.buffers:
        if b.role != "input":
            rtol, atol = value_tolerances(g, b)
            assert compare_buffer(b, out[b.name], expected[b.name], rtol=rtol, atol=atol) is None, b.name


def _deleted_then_used(src: str) -> tuple[list[str], list[str]]:
    """In `call`'s body, in order: the names deleted, and those used after their deletion."""
    fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "call")
    deleted: list[str] = []
    used_after: list[str] = []
    for stmt in fn.body:
        names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        used_after += sorted(names & set(deleted))
        if isinstance(stmt, ast.Delete):
            deleted += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return deleted, used_after


def test_the_wrapper_deletes_each_intermediate_once_and_never_uses_it_after() -> None:
    deleted, used_after = _deleted_then_used(emit_module(graph(CHAIN), unfused_plan(graph(CHAIN))))
    assert sorted(deleted) == ["t0", "t1", "t2", "t3", "t4"] and used_after == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_docs(max_nodes=5))
def test_random_graphs_hold_no_buffer_past_its_last_use(doc: dict[str, Any]) -> None:
    """Unfused (every buffer materialised): the bytes alive at any allocation never exceed the
    most the plan's lifetimes allow, the outputs match the reference, and `intermediates=True`
    returns every intermediate a kernel reads (one nothing reads is never stored), equal to the
    reference's."""
    g = doc_graph(doc)
    plan = unfused_plan(g)
    assert _deleted_then_used(emit_module(g, plan))[1] == []
    out, seen = _watched_run(g, plan, intermediates=False)
    assert max(seen, default=0) <= _peak_by_plan(g, plan)
    expected = run_graph(g, make_inputs(g, seed=0))
    assert all(c.ok for c in check_outputs(g, out, expected))
    kept, _ = _watched_run(g, plan, intermediates=True)
    read = {b for n in g.nodes for b in n.read_buffers()}
    assert set(kept) == {
        b.name for b in g.buffers if b.role == "output" or b.name in read and b.role != "input"
    }
    for b in g.buffers:
        if b.name in kept:
            rtol, atol = value_tolerances(g, b)
            assert compare_buffer(b, kept[b.name], expected[b.name], rtol=rtol, atol=atol) is None, b.name
