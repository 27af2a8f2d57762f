"""The plan contract of `fuseopt.codegen.schedule`: a kernel may list its nodes in any topological
order (stable plans list them by dependency depth and name, not by program order), and the code it
generates computes the same values."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.codegen import CodegenError, emit_module
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan
from tests.strategies import check, doc_graph, graph_docs, plan_of
from tests.sweeps import examples

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes


def _shuffled(plan: Plan, graph, rnd: st.DataObject) -> Plan:  # type: ignore[no-untyped-def]
    """Each kernel's members in a random topological order of the dependencies inside the kernel."""
    writer = graph.writer()
    kernels = []
    for k in plan.kernels:
        members = set(k.nodes)
        deps = {
            n: {writer[b] for b in graph.node(n).read_buffers() if writer.get(b) in members} - {n}
            for n in k.nodes
        }
        done: list[str] = []
        while len(done) < len(k.nodes):
            ready = sorted(n for n in k.nodes if n not in done and deps[n] <= set(done))
            done.append(rnd.draw(st.sampled_from(ready)))
        kernels.append(dataclasses.replace(k, nodes=tuple(done)))
    return dataclasses.replace(plan, kernels=tuple(kernels))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_docs(), st.data())
def test_any_topological_member_order_generates_the_same_values(doc: dict, data: st.DataObject) -> None:
    stage = optimize(doc_graph(doc))
    check(stage.graph, _shuffled(stage.plan, stage.graph, data))


def test_a_member_listed_before_its_producer_is_refused() -> None:
    from tests.strategies import graph
    from tests.test_codegen import SOFTMAX

    g = graph(SOFTMAX)
    with pytest.raises(CodegenError, match="lists 'n1', which reads .*, before 'n0', which writes it"):
        emit_module(g, plan_of(g, [["n1", "n0", "n2", "n3", "n4"]]))


TEMPLATE_WITH_A_SIBLING = """
format: fuseopt-graph/1
name: template_sibling
buffers:
  a: {shape: [4, 4], dtype: float32, role: input}
  b: {shape: [4, 4], dtype: float32, role: input}
  c: {shape: [4, 4], dtype: float32, role: input}
  t: {shape: [4, 4], dtype: float32}
  o1: {shape: [4, 4], dtype: float32, role: output}
  o2: {shape: [4, 4], dtype: float32, role: output}
nodes:
  - {name: mm0, kind: template, op: mm, inputs: [a, b], output: t,
     choices: [{name: triton_mm_0, time_us: 1.0}], epilogue_fusion: true}
  - {name: a_sibling, loops: [[i0, 4], [i1, 4]], store: "o2[4*i0 + i1]", value: "c[4*i0 + i1] * 2"}
  - {name: b_epilogue, loops: [[i0, 4], [i1, 4]], store: "o1[4*i0 + i1]", value: "t[4*i0 + i1] + c[4*i0 + i1]"}
"""


def test_a_template_kernel_runs_its_library_node_first_wherever_the_plan_lists_it() -> None:
    """Stable plans list a kernel's members by depth and name: a template's epilogue member may come
    first in the list (the random differential test found one); the call still runs first."""
    from tests.strategies import graph

    g = graph(TEMPLATE_WITH_A_SIBLING)
    for order in (["mm0", "a_sibling", "b_epilogue"], ["a_sibling", "mm0", "b_epilogue"]):
        check(g, plan_of(g, [order]))
    st = optimize(g)
    check(st.graph, st.plan)
