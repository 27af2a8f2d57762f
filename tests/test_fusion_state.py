"""The fusion pass's state (`passes/fusion_state.py`): trial installs and stamps."""

from __future__ import annotations

from fuseopt.io.load import load_text
from fuseopt.ir.graph import ComputeNode


def test_a_trial_install_leaves_the_group_as_it_was_and_a_retry_keeps_its_stamp() -> None:
    """`FusionState.trial` (a proposal's check) restores the group's nodes, dependencies and stamp;
    installing the same transformed nodes on the same group state again gives the stamp of the
    first try, so the verdict cached then is found when the pair is taken."""
    from fuseopt.analysis.deps import graph_deps
    from fuseopt.passes.fusion_state import FusionState
    from fuseopt.passes.loop_transform import permute

    g = load_text(
        "format: fuseopt-graph/1\nname: t\nbuffers:\n"
        "  a: {shape: [4, 8], dtype: float32, role: input}\n"
        "  b: {shape: [4, 8], dtype: float32, role: output}\n"
        "nodes:\n- {name: n0, loops: [[i, 4], [j, 8]], store: 'b[8*i + j]', value: 'a[8*i + j] * 2'}\n",
        "t.yaml",
    )
    state = FusionState(g, graph_deps(g), {"n0": 0})
    node = g.node("n0")
    assert isinstance(node, ComputeNode)
    group = state.group("n0")
    before = (state.version[group.gid], dict(group.reads), dict(group.writes), dict(state.deps))
    swapped = permute(node, (1, 0))
    with state.trial([swapped]):
        assert state.node("n0") is swapped
        tried = state.version[group.gid]
        assert tried != before[0] and state.deps["n0"] != before[3]["n0"]
    assert state.node("n0") is node
    assert (state.version[group.gid], group.reads, group.writes, state.deps) == before
    state.install([swapped])
    assert state.version[group.gid] == tried
    state.install([node])
    assert state.version[group.gid] not in (before[0], tried)  # a new state of the group
