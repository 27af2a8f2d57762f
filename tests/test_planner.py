"""The fusion planner: legality with reasons, scoring modes, metrics, explain, verify."""

from __future__ import annotations

import json
import re

import pytest

from fuseopt.analysis.metrics import AccessTable
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.explain import explain
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.passes.verify import check
from fuseopt.plan import Kernel, Plan
from tests.planning import ROOT, load, plan


def graph(nodes: str, buffers: str) -> Graph:
    """A graph from YAML snippets; buffer lines that no node mentions are dropped."""
    used = [line for line in buffers.splitlines() if re.search(rf"\b{line.split(':')[0].strip()}\[", nodes)]
    text = "format: fuseopt-graph/1\nname: t\nbuffers:\n" + "\n".join(used) + f"\nnodes:\n{nodes}\n"
    return load_text(text, "t.yaml")


def test_apbt_matches_format_example() -> None:
    """docs/format.md's example: one kernel of 25165824 bytes; unfused 3 kernels, 58720256 bytes."""
    st = plan(load(f"{ROOT}/samples/apbt.yaml"))
    m = st.plan.metrics
    assert (m["kernels"], m["bytes"], m["unfused_kernels"], m["unfused_bytes"]) == (1, 25165824, 3, 58720256)
    off = plan(load(f"{ROOT}/samples/apbt.yaml"), loop_order=False).plan
    assert off.metrics["kernels"] == 2
    rej = {tuple(r.pair): r for r in off.rejected}
    assert rej[("n1", "n2")].reason == "index_mismatch"
    # The detail shows both indices.
    assert "buf1[c0] over [2097152]" in rej[("n1", "n2")].detail
    assert "buf1[c0 + 1024*c1] over [1024, 2048]" in rej[("n1", "n2")].detail


BUFS = """  x: {shape: [8, 16], dtype: float32, role: input}
  y: {shape: [8, 16], dtype: float32, role: input}
  a: {shape: [8, 16], dtype: float32}
  b: {shape: [8, 16], dtype: float32}
  r: {shape: [8], dtype: float32}
  s: {shape: [16], dtype: float32, role: output}
  o: {shape: [8, 16], dtype: float32, role: output}
  o2: {shape: [8, 16], dtype: float32, role: output}"""


def test_vertical_horizontal_and_reduction_epilogue() -> None:
    g = graph(
        """  - {name: p, loops: [[i, 8], [j, 16]], store: 'a[16*i + j]', value: 'x[16*i + j] * 2'}
  - {name: red, loops: [[i, 8]], reduce: [[k, 16]], store: 'r[i]', value: 'sum(a[16*i + k])'}
  - {name: epi, loops: [[i, 8], [j, 16]], store: 'o[16*i + j]', value: 'a[16*i + j] - r[i]'}
  - {name: sib, loops: [[i, 8], [j, 16]], store: 'o2[16*i + j]', value: 'tanh(x[16*i + j])'}
  - {name: col, loops: [[j, 16]], reduce: [[i, 8]], store: 's[j]', value: 'sum(x[16*i + j])'}""",
        BUFS.replace("  b: {shape: [8, 16], dtype: float32}\n", ""),
    )
    st = plan(g)
    k = st.plan.kernel_of("p")
    # p runs inside the reduction loop, epi after it (a second loop), sib shares x horizontally.
    assert set(k.nodes) >= {"p", "red", "epi", "sib"}
    kinds = {d.pair: d.kind for d in st.plan.decisions}
    assert "reduction-inner" in kinds.values()
    assert st.plan.kernel_of("col").name != k.name
    reasons = {r.reason for r in st.plan.rejected if "col" in r.pair}
    assert reasons and reasons <= {"no_shared_data", "size_mismatch", "reduction_mismatch", "index_mismatch"}


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


def test_extern_never_fuses_and_template_epilogue() -> None:
    st = plan(load(f"{ROOT}/samples/extern_mm.yaml"))
    ext = [r for r in st.plan.rejected if r.reason == "extern"]
    assert ext, "the extern mm and its epilogue must be a rejected pair with reason extern"
    g = load(f"{ROOT}/samples/jit_aot.yaml")
    st = plan(g)
    tmpl = [k for k in st.plan.kernels if k.kind == "template"]
    assert len(tmpl) == 1 and tmpl[0].nodes == ("buf3",)


def test_inductor_score_terms_and_proximity() -> None:
    st = plan(load(f"{ROOT}/samples/jit_aot.yaml"), scoring="inductor", max_fusion_size=2)
    first = st.plan.decisions[0]
    assert list(first.score) == ["template", "node_type", "memory", "buffer_overlap", "proximity"]
    # Three pointwise readers of x with equal memory scores: proximity decides (buf0, buf2 at -2).
    assert first.pair == ("buf0", "buf2") and first.score["proximity"] == -2


def test_same_input_gives_byte_identical_json() -> None:
    g = load(f"{ROOT}/samples/three_layouts_mean.yaml")
    a = json.dumps(optimize(g).plan.to_json())
    b = json.dumps(optimize(load(f"{ROOT}/samples/three_layouts_mean.yaml")).plan.to_json())
    assert a == b


def test_verify_catches_broken_plans() -> None:
    g = load(f"{ROOT}/samples/apbt.yaml")
    st = optimize(g, Options(loop_order=False))
    good = st.plan
    assert check(st.graph, good) == []
    # n1 and n2 index buf1 differently: putting them in one kernel must be caught.
    bad_kernels = (Kernel("k0", ("n0", "n1", "n2"), "pointwise", (), (), 0),)
    problems = check(st.graph, Plan(good.graph, good.graph_sha256, bad_kernels))
    assert any("buf1" in p for p in problems)
    # A node missing, and a node in two kernels.
    assert any(
        "no kernel" in p
        for p in check(st.graph, Plan("g", "", (Kernel("k0", ("n0",), "pointwise", (), (), 0),)))
    )
    dup = (
        Kernel("k0", ("n0", "n1"), "pointwise", (), (), 0),
        Kernel("k1", ("n1", "n2"), "pointwise", (), (), 0),
    )
    assert any("two" in p or "kernels k0 and k1" in p for p in check(st.graph, Plan("g", "", dup)))
    # Consumers before producers: the kernel graph is not in a valid order.
    rev = (
        Kernel("k0", ("n2",), "pointwise", (), (), 0),
        Kernel("k1", ("n0",), "pointwise", (), (), 0),
        Kernel("k2", ("n1",), "pointwise", (), (), 0),
    )
    assert any("cycle" in p for p in check(st.graph, Plan("g", "", rev)))


@pytest.mark.parametrize("seed", range(5))
def test_saved_bytes_equals_kernel_bytes_difference(seed: int) -> None:
    import random

    from tests.fixtures.graphgen import make_graph

    g = load_text(json.dumps(make_graph(120, seed=seed, rows=4, cols=8)), "g.json")
    table = AccessTable(g)
    names = [n.name for n in g.nodes]
    rng = random.Random(seed)
    for _ in range(300):
        a = rng.sample(names, rng.randint(1, 6))
        b = [x for x in rng.sample(names, rng.randint(1, 6)) if x not in a]
        if b:
            assert table.saved_bytes(a, b) == table.kernel_bytes(a) + table.kernel_bytes(
                b
            ) - table.kernel_bytes(a + b)


@pytest.mark.parametrize("bitsets", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_reachability_matches_a_search_of_the_group_graph(
    seed: int, bitsets: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FusionState's reachability (node bitsets and searches, or searches alone) and cycle check
    agree with a plain search after every fusion of a random sequence (fusions that would close a
    cycle are refused, as the planner does)."""
    import random

    from fuseopt.analysis.deps import graph_deps
    from fuseopt.passes import reach as reach_module
    from fuseopt.passes.fusion_state import FusionState

    if not bitsets:
        monkeypatch.setattr(reach_module, "MAX_BITSET_NODES", 0)
    from tests.fixtures.graphgen import make_graph

    g = load_text(json.dumps(make_graph(120, seed=seed, rows=4, cols=8)), "g.json")
    state = FusionState(g, graph_deps(g), {n.name: i for i, n in enumerate(g.nodes)})
    assert bool(state.reach.below) == bitsets

    def reach(gid: int) -> set[int]:
        seen: set[int] = set()
        stack = list(state.groups[gid].succ)
        while stack:
            x = stack.pop()
            if x not in seen:
                seen.add(x)
                stack.extend(state.groups[x].succ)
        return seen

    rng = random.Random(seed)
    for _ in range(100):
        a, b = rng.sample(sorted(state.groups), 2)
        ga, gb = state.groups[a], state.groups[b]
        ra, rb = reach(a), reach(b)
        assert state.is_ancestor(ga, gb) == (b in ra)
        assert state.is_ancestor(gb, ga) == (a in rb)
        others = [c for c in state.groups if c not in (a, b)]
        cycle = any((c in ra and b in reach(c)) or (c in rb and a in reach(c)) for c in others)
        assert state.would_create_cycle(ga, gb) == cycle
        if not cycle:
            state.fuse(ga, gb)


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


@pytest.mark.parametrize("seed", range(6))
def test_reach_keeps_a_topological_order_through_fusions(seed: int) -> None:
    """After every fusion the kept order is topological for the group graph, and reachability
    (a search inside the window between two groups) agrees with a plain search."""
    import random

    from fuseopt.analysis.deps import graph_deps
    from fuseopt.passes.fusion_state import FusionState
    from tests.fixtures.graphgen import make_graph

    g = load_text(json.dumps(make_graph(150, seed=seed, rows=4, cols=8)), "g.json")
    state = FusionState(g, graph_deps(g), {n.name: i for i, n in enumerate(g.nodes)})
    rng = random.Random(seed)
    for _ in range(120):
        pos = state.reach.pos
        assert set(pos) == set(state.groups)
        for gid, grp in state.groups.items():
            assert all(pos[gid] < pos[s] for s in grp.succ)
        a, b = rng.sample(sorted(state.groups), 2)
        ga, gb = state.groups[a], state.groups[b]
        if not state.would_create_cycle(ga, gb):
            state.fuse(ga, gb)


def _chain(n: int) -> Graph:
    nodes = "\n".join(
        f"  - {{name: n{k}, loops: [[i, 4]], store: 't{k}[i]', value: '{f't{k - 1}' if k else 'x'}[i] + 1'}}"
        for k in range(n)
    )
    bufs = "\n".join(
        f"  t{k}: {{shape: [4], dtype: float32{', role: output' if k == n - 1 else ''}}}" for k in range(n)
    )
    return load_text(
        f"format: fuseopt-graph/1\nname: chain\nbuffers:\n  x: {{shape: [4], dtype: float32, role: input}}\n{bufs}\n"
        f"nodes:\n{nodes}\n",
        "chain.yaml",
    )


def _fan(n: int) -> Graph:
    nodes = "\n".join(
        f"  - {{name: n{k}, loops: [[i, 4]], store: 'o{k}[i]', value: 'x[i] * {k + 1}'}}" for k in range(n)
    )
    bufs = "\n".join(f"  o{k}: {{shape: [4], dtype: float32, role: output}}" for k in range(n))
    return load_text(
        f"format: fuseopt-graph/1\nname: fan\nbuffers:\n  x: {{shape: [4], dtype: float32, role: input}}\n{bufs}\n"
        f"nodes:\n{nodes}\n",
        "fan.yaml",
    )


@pytest.mark.slow  # graphs of growing size, each planned
@pytest.mark.parametrize("scoring", ["stable", "inductor"])
def test_planning_work_is_linear_in_chains_and_fans(scoring: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: legality checks stay within (pair window) per node and phase, and the
    reachability searches visit a bounded number of groups per fusion, for a long chain and for
    many users of one buffer (where every pair shares data and every group fuses)."""
    from fuseopt.passes import fusion, fusion_stable, reach

    checks = visits = 0
    check_fusion, search = fusion_stable.check_fusion, reach.Reach._search

    def counted_check(*args: object) -> object:
        nonlocal checks
        checks += 1
        return check_fusion(*args)  # type: ignore[arg-type]

    def counted_search(self: reach.Reach, *args: object, **kw: object) -> set[int]:
        nonlocal visits
        out = search(self, *args, **kw)  # type: ignore[arg-type]
        visits += 1 + len(out)
        return out

    monkeypatch.setattr(fusion_stable, "check_fusion", counted_check)
    monkeypatch.setattr(fusion, "check_fusion", counted_check)
    monkeypatch.setattr(reach.Reach, "_search", counted_search)
    window = 8
    for g, n in ((_chain(1500), 1500), (_fan(600), 600)):
        checks = visits = 0
        stage = optimize(g, Options(scoring=scoring, pair_window=window))
        assert len(stage.plan.kernels) <= n // 32
        assert checks <= 8 * window * n, checks
        assert visits <= 16 * n, visits


@pytest.mark.parametrize(
    "read",
    [
        "t[16*(c % 6) + 96*(c // 6)]",  # the mixed-radix identity
        "t[16*(c // 1) + 5*(c % 1)]",  # floordiv and mod by 1
        "t[16*((c % 12) % 6) + 96*((c // 3) // 2)]",  # nested // and %
    ],
)
def test_equal_functions_plan_verify_and_generate_alike(read: str) -> None:
    """A read spelled another way is the same element: the planner fuses it, the verifier
    accepts the kernel (it said 'exit 1' for these) and the generated code matches."""
    from tests.strategies import check as run_check
    from tests.strategies import plan_of

    g = load_text(
        f"""
format: fuseopt-graph/1
name: spelled
buffers:
  x: {{shape: [96], dtype: float32, role: input}}
  t: {{shape: [96], stride: [16], dtype: float32}}
  y: {{shape: [96], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[c, 96]], store: 't[16*c]', value: 'x[c] * 2'}}
  - {{name: n1, loops: [[c, 96]], store: 'y[c]', value: '{read} + 1'}}
""",
        "spelled.yaml",
    )
    for opts in ({}, {"loop_order": False}, {"scoring": "inductor"}):
        stage = plan(g, **opts)
        assert [k.nodes for k in stage.plan.kernels] == [("n0", "n1")]
    fused = plan_of(g, [["n0", "n1"]])
    assert check(g, fused) == []
    run_check(g, fused)


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
