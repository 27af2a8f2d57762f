"""Fusion legality (`passes/legality.py`): each rule's reason and detail, the search's terse verdicts
against the full ones, template epilogues."""

from __future__ import annotations

import json

import pytest

from fuseopt.io.load import load_text
from fuseopt.passes.explain import explain
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.passes.verify import check
from tests.planning import BUFS, graph, plan


def test_reduction_mismatch_reason() -> None:
    g = graph(
        """  - {name: r1, loops: [[i, 8]], reduce: [[k, 16]], store: 'r[i]', value: 'sum(x[16*i + k])'}
  - {name: r2, loops: [[j, 16]], reduce: [[i, 8]], store: 's[j]', value: 'max(x[16*i + j])'}""",
        BUFS.replace("  r: {shape: [8], dtype: float32}", "  r: {shape: [8], dtype: float32, role: output}"),
    )
    st = plan(g)
    assert st.plan.metrics["kernels"] == 2  # x.sum(1) and x.max(0) stay separate (issue: don't over-fuse)
    (rej,) = [r for r in st.plan.rejected if set(r.pair) == {"r1", "r2"}]
    assert rej.reason == "reduction_mismatch"
    assert "(8, 16)" in rej.detail and "(16, 8)" in rej.detail


def test_too_large_and_explain_suggests_size() -> None:
    chain = "\n".join(
        f"  - {{name: n{i}, loops: [[i, 8], [j, 16]], store: 'b{i}[16*i + j]', value: '{'x' if i == 0 else f'b{i - 1}'}[16*i + j] + 1'}}"
        for i in range(4)
    )
    bufs = "  x: {shape: [8, 16], dtype: float32, role: input}\n" + "\n".join(
        f"  b{i}: {{shape: [8, 16], dtype: float32{', role: output' if i == 3 else ''}}}" for i in range(4)
    )
    g = graph(chain, bufs)
    st = optimize(g, Options(max_fusion_size=2))
    assert st.plan.metrics["kernels"] == 2
    assert all(len(k.nodes) <= 2 for k in st.plan.kernels)
    a, b = st.plan.kernels[0].nodes[-1], st.plan.kernels[1].nodes[0]
    ex = explain(st, a, b, Options(max_fusion_size=2))
    assert not ex.fused and ex.reason == "too_large"
    assert "--max-fusion-size to at least 4" in ex.suggestion
    assert optimize(g).plan.metrics["kernels"] == 1


@pytest.mark.parametrize(("rows", "fused"), [(32, True), (64, False)])
def test_peak_memory_counts_elements_as_inductor_does(rows: int, fused: bool) -> None:
    """Two kernels each reading a single-use library output of one size (Phi's rotary embedding of
    q and of k) share 8 floats, 32 bytes. Inductor refuses the fusion when the shared outputs'
    storage, in elements, exceeds 32 x the bytes saved: 1024 elements fuse, 2048 do not."""
    n = rows * 32
    text = f"""format: fuseopt-graph/1
name: t
buffers:
  a: {{shape: [{rows}, 32], dtype: float32, role: input}}
  w: {{shape: [32, 32], dtype: float32, role: input}}
  v: {{shape: [32, 32], dtype: float32, role: input}}
  s: {{shape: [8], dtype: float32, role: input}}
  q: {{shape: [{rows}, 32], dtype: float32}}
  k: {{shape: [{rows}, 32], dtype: float32}}
  oq: {{shape: [{n}], dtype: float32, role: output}}
  ok: {{shape: [{n}], dtype: float32, role: output}}
nodes:
  - {{name: mq, kind: extern, op: mm, inputs: [a, w], output: q}}
  - {{name: mk, kind: extern, op: mm, inputs: [a, v], output: k}}
  - {{name: rq, loops: [[i, {n // 8}], [j, 8]], store: 'oq[8*i + j]', value: 'q[8*i + j] * s[j]'}}
  - {{name: rk, loops: [[i, {n // 8}], [j, 8]], store: 'ok[8*i + j]', value: 'k[8*i + j] + s[j]'}}
"""
    st = optimize(load_text(text, "t.yaml"))
    assert any({"rq", "rk"} <= set(k.nodes) for k in st.plan.kernels) == fused
    if not fused:
        ex = explain(st, "rq", "rk", Options())
        assert ex.reason == "peak_memory"
        assert f"{n} elements vs 32 x 32 bytes saved" in ex.detail


def test_cycle_is_refused_with_the_path() -> None:
    # na -> nm -> nc and na -> nc; nm (column sums) fuses with neither, so na + nc would be a cycle.
    g = graph(
        """  - {name: na, loops: [[i, 8], [j, 16]], store: 'a[16*i + j]', value: 'x[16*i + j] * 2'}
  - {name: nm, loops: [[j, 16]], reduce: [[i, 8]], store: 's[j]', value: 'sum(a[16*i + j])'}
  - {name: nc, loops: [[i, 8], [j, 16]], store: 'o[16*i + j]', value: 'a[16*i + j] + s[j]'}""",
        BUFS.replace(
            "  s: {shape: [16], dtype: float32, role: output}", "  s: {shape: [16], dtype: float32}"
        ),
    )
    st = plan(g, loop_order=False)
    assert st.plan.metrics["kernels"] == 3
    ex = explain(st, "na", "nc", Options(loop_order=False))
    assert not ex.fused and ex.reason == "would_create_cycle"
    assert "nm" in ex.detail
    assert explain(st, "na", "nm", Options(loop_order=False)).reason == "index_mismatch"


@pytest.mark.parametrize("seed", range(6))
def test_search_verdicts_accept_exactly_what_full_verdicts_accept(seed: int) -> None:
    """While the planner searches (`state.detailed` False) a pair that closes a cycle is refused
    before the costly rules; that verdict must accept exactly the pairs the full rules accept and
    refuse as `too_large` exactly the pairs they refuse so (the cap's replanning hangs on it),
    checked on every pair of a random sequence of fusions with a small cap."""
    import random

    from fuseopt.analysis.deps import graph_deps
    from fuseopt.passes.fusion_state import FusionState
    from fuseopt.passes.legality import check_fusion
    from tests.fixtures.graphgen import FAMILIES

    g = load_text(json.dumps(FAMILIES[("graphgen", "mixed")[seed % 2]](90, seed)), "g.json")
    opts = Options(max_fusion_size=6)
    search = FusionState(g, graph_deps(g), {n.name: i for i, n in enumerate(g.nodes)}, by_name=True)
    search.detailed = False
    rng = random.Random(seed)
    for _ in range(60):
        gids = sorted(search.groups)
        pairs = [(a, b) for i, a in enumerate(gids) for b in gids[i + 1 :]]
        ok = []
        for a, b in rng.sample(pairs, min(len(pairs), 150)):
            ga, gb = search.groups[a], search.groups[b]
            fast = check_fusion(search, ga, gb, opts)
            search.detailed, search.verdicts = True, {}
            full = check_fusion(search, ga, gb, opts)
            search.detailed = False
            assert fast.ok == full.ok, (fast, full)
            assert (fast.reason == "too_large") == (full.reason == "too_large"), (fast, full)
            if fast.ok:
                ok.append((ga, gb))
        if not ok:
            break
        ga, gb = rng.choice(ok)
        search.fuse(ga, gb)
    assert len(search.groups) < len(g.nodes)


TEMPLATE_EPILOGUE = """
format: fuseopt-graph/1
name: template_epilogue
buffers:
  a:   {{shape: [4, 2], dtype: float32, role: input}}
  w:   {{shape: [2, 4], dtype: float32, role: input}}
  ids: {{shape: [4], dtype: int32, role: input}}
  c:   {{shape: [4, 4], dtype: float32}}
  b:   {{shape: [4, 4], dtype: float32}}
  out: {{shape: [{out_shape}], dtype: float32, role: output}}
nodes:
  - {{name: mm0, kind: template, op: mm, inputs: [a, w], output: c,
     choices: [{{name: c0, time_us: 1.0}}], epilogue_fusion: true}}
  - {{name: p, loops: [[i0, 4], [i1, 4]], store: 'b[4*i0 + i1]', value: 'c[4*i0 + i1] * 2'}}
  - {{name: q, loops: {q_loops}, store: 'out[{q_store}]', value: '{q_value}'}}
"""


@pytest.mark.parametrize(
    ("q_value", "q_loops", "q_store", "out_shape", "reason"),
    [
        # q reads p's output through an indirect index: not the element p writes at that point
        ("c[4*i0 + i1] + b[4*ids[i0] + i1]", "[[i0, 4], [i1, 4]]", "4*i0 + i1", "4, 4", "index_mismatch"),
        # q reads p's output transposed
        ("c[4*i0 + i1] + b[4*i1 + i0]", "[[i0, 4], [i1, 4]]", "4*i0 + i1", "4, 4", "index_mismatch"),
        # q runs over half the template's output: not an epilogue of it
        ("c[4*i0 + i1] * 3", "[[i0, 2], [i1, 4]]", "4*i0 + i1", "2, 4", "size_mismatch"),
    ],
)
def test_template_epilogues_check_their_fused_reads_and_numel(
    q_value: str, q_loops: str, q_store: str, out_shape: str, reason: str
) -> None:
    """A template group's epilogue members are fused like any pointwise nodes: a read of what an
    earlier epilogue member writes must be that element, and every member runs over the template's
    output (the planner once skipped both checks for templates, and codegen then refused its plan)."""
    from tests.strategies import check as run_check

    g = load_text(
        TEMPLATE_EPILOGUE.format(q_value=q_value, q_loops=q_loops, q_store=q_store, out_shape=out_shape),
        "t.yaml",
    )
    for opts in ({}, {"loop_order": False}, {"scoring": "inductor"}):
        stage = plan(g, **opts)
        kernels = [k.nodes for k in stage.plan.kernels]
        assert ("mm0", "p") in kernels and ("q",) in kernels, kernels
        assert any(set(r.pair) <= {"mm0", "p", "q"} and r.reason == reason for r in stage.plan.rejected)
        assert check(g, stage.plan) == []
        run_check(g, stage.plan)
