"""Reachability between fusion groups (`passes/reach.py`): answers against a plain search, and the
topological order kept through fusions."""

from __future__ import annotations

import json

import pytest

from fuseopt.io.load import load_text


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
