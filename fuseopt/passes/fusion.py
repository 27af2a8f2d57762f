"""The fusion pass: greedy rounds over scored candidate pairs, as Inductor's `fuse_nodes` does.

Contract: given a validated graph and Options, returns the groups (kernels) in a topological order,
every applied decision with its score, and a reason for every candidate pair left unfused. It never
mutates the graph; loop transformations proposed by `reorder` (the loop-order pass, tried only in
the last round, as Inductor's LOAF) come back as a new graph.

Rounds: up to `max_rounds` rounds until nothing changes, then one round in which loop reordering
is allowed. Each round: candidates are pairs of groups that use a common buffer (each paired with
the next `pair_window` users of it); pairs that pass `check_fusion` are sorted by score and
applied greedily, re-checking legality against the groups as they are by then.

Candidate order is where the two scorings differ: `inductor` walks groups in node-list order (so
list order reaches decisions, faithfully); `stable` walks them by (dependency depth, name).

Stable scoring at the size cap: `packing.stable_plan` (the natural plan, the packed plan, nodes
stranded by the cap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from fuseopt.analysis.deps import NodeDeps, graph_deps
from fuseopt.ir.graph import Graph
from fuseopt.passes.final_verdict import final_reason
from fuseopt.passes.fusion_state import FusionState, Group, Recorder
from fuseopt.passes.legality import REORDER_REASONS, Verdict, check_fusion
from fuseopt.passes.loop_order import Proposal
from fuseopt.passes.options import Options
from fuseopt.passes.packing import Planned, stable_plan
from fuseopt.passes.scoring import Score, inductor_score, inductor_sort, stable_score, stable_sort
from fuseopt.plan import Decision, Rejection, Reorder


class ReorderHook(Protocol):
    """The loop-order pass as seen by fusion: propose a transformation for a failing pair (the
    stable scoring installs it only when it takes the pair), or try one and keep it installed
    (the inductor scoring's rounds); then roll back what led to no fusion."""

    def propose(
        self, state: FusionState, g1: Group, g2: Group, opts: Options
    ) -> tuple[Verdict, Proposal] | None: ...

    def try_pair(
        self, state: FusionState, g1: Group, g2: Group, opts: Options
    ) -> tuple[Verdict, list[Reorder]] | None: ...

    def finish(self, state: FusionState, reorders: list[Reorder]) -> list[Reorder]: ...


@dataclass(frozen=True)
class FusionResult:
    graph: Graph
    groups: tuple[tuple[str, ...], ...]
    decisions: tuple[Decision, ...]
    rejected: tuple[Rejection, ...]
    reorders: tuple[Reorder, ...]
    # The final working state, for `explain` (asks the legality check about the final kernels).
    state: FusionState = field(compare=False, repr=False)


def inductor_node_order(graph: Graph) -> list[str]:
    """Inductor's node list: nodes in the order of their output buffers, then topologically fixed.

    Moving a buffer in the list (the AOT pass's template finalization) moves its node here.
    """
    buf_pos = {b.name: i for i, b in enumerate(graph.buffers)}
    prog = {n.name: i for i, n in enumerate(graph.nodes)}
    by_buffer = sorted(graph.nodes, key=lambda n: (min(buf_pos[o] for o in n.outputs), prog[n.name]))
    writer = graph.writer()
    done: set[str] = set()
    out: list[str] = []

    def visit(name: str) -> None:
        stack = [(name, False)]
        while stack:
            cur, expanded = stack.pop()
            if cur in done:
                continue
            if expanded:
                done.add(cur)
                out.append(cur)
                continue
            stack.append((cur, True))
            preds = [writer[b] for b in graph.node(cur).read_buffers() if b in writer]
            for p in reversed(preds):
                if p not in done:
                    stack.append((p, False))

    for n in by_buffer:
        visit(n.name)
    return out


def dag_levels(graph: Graph) -> dict[str, int]:
    """Longest-path depth of each node from the graph inputs (structural, order-free)."""
    writer = graph.writer()
    level: dict[str, int] = {}
    for n in graph.nodes:  # program order is topological
        preds = [level[writer[b]] for b in n.read_buffers() if b in writer]
        level[n.name] = 1 + max(preds, default=-1)
    return level


def fuse(
    graph: Graph,
    opts: Options,
    reorder: ReorderHook | None = None,
    *,
    meanwhile: Callable[[FusionResult], None] | None = None,
) -> FusionResult:
    """Plan fusion.

    `meanwhile`: the caller's work on the result of the plan this process expects to keep,
    while a forked child makes the other (`packing.stable_plan`: the packed line's result, kept
    unless the child's natural plan costs less); called at most once, and only when a child
    plans. When that plan is kept, the object returned is the one `meanwhile` was given."""
    deps: dict[str, NodeDeps] = graph_deps(graph)  # the state's copy changes as loops transform
    if opts.scoring == "inductor":
        numbers = {name: i for i, name in enumerate(inductor_node_order(graph))}
    else:
        numbers = {n.name: i for i, n in enumerate(graph.nodes)}
    state = FusionState(graph, dict(deps), numbers, by_name=opts.scoring == "stable")
    state.detailed = False
    levels = dag_levels(graph)
    rec = Recorder(state.label)
    reorders: list[Reorder] = []

    hook = reorder if opts.loop_order else None
    if opts.scoring == "stable":
        finished: list[tuple[Planned, FusionResult]] = []

        def on_line(line: Planned) -> None:
            finished.append((line, _result(graph, line, hook, opts, levels)))
            assert meanwhile is not None
            meanwhile(finished[0][1])

        planned = stable_plan(
            graph, deps, opts, levels, numbers, hook, (state, rec, reorders), on_line if meanwhile else None
        )
        if finished and finished[0][0] is planned:
            return finished[0][1]
        return _result(graph, planned, hook, opts, levels)
    rounds = 0
    for rnd in range(opts.max_rounds):
        rounds = rnd + 1
        before = len(state.groups)
        _round(state, opts, levels, rec, rnd, None, reorders)
        if len(state.groups) == before or len(state.groups) == 1:
            break
    if hook is not None and len(state.groups) > 1:
        _round(state, opts, levels, rec, rounds, hook, reorders)
    return _result(graph, (state, rec, reorders), hook, opts, levels)


def _result(
    graph: Graph, planned: Planned, hook: ReorderHook | None, opts: Options, levels: dict[str, int]
) -> FusionResult:
    """A search's plan as the pass's result: transformations that led to no fusion rolled back,
    kernels in order, refusals asked again of the final kernels. (The state is done with then.)"""
    state, rec, reorders = planned
    current = graph
    if hook is not None:
        reorders = hook.finish(state, reorders)
        current = state.current_graph()

    # The final kernels are asked again, in full detail (verdicts cached during the search have
    # terse cycle details, and _stranded asked under another size cap).
    state.verdicts.clear()
    state.detailed = True
    _extern_rejections(state, rec)
    if opts.scoring == "stable":  # members in (depth, name) order: topological, and order-free
        groups = tuple(tuple(sorted(g.members, key=lambda m: (levels[m], m))) for g in state.ordered_groups())
    else:
        groups = tuple(tuple(g.members) for g in state.ordered_groups())
    rejected = _final_rejections(state, rec, opts)
    return FusionResult(current, groups, tuple(rec.decisions), rejected, tuple(reorders), state)


def _extern_rejections(state: FusionState, rec: Recorder) -> None:
    """Extern nodes are never candidates (Inductor's unfusable_node); name them next to each
    producer and consumer anyway, so that every unfused neighbour has a reason."""
    writer = state.graph.writer()
    for n in state.graph.nodes:
        for b in n.read_buffers():
            w = writer.get(b)
            if w is None:
                continue
            if "extern" in (state.node(w).kind, n.kind):
                ext = w if state.node(w).kind == "extern" else n.name
                v = Verdict.no(
                    "extern", f"{ext} is an extern library call; extern nodes never fuse", nodes=(w, n.name)
                )
                rec.reject(state.group(w), state.group(n.name), v)


def _final_rejections(state: FusionState, rec: Recorder, opts: Options) -> tuple[Rejection, ...]:
    """Every node pair the search refused that ended in two kernels, with the reason the final
    kernels give (`final_reason`, as `fuseopt explain` does), not the verdict the search met last:
    that one saw intermediate groups and loop transformations, and so the order of the search.
    One legality check per pair of final kernels, so the cost is linear in the recorded pairs."""
    by_kernels: dict[tuple[int, int], tuple[str, str]] = {}
    out = []
    for pair in sorted(rec.rejected):
        ga, gb = state.group(pair[0]), state.group(pair[1])
        if ga.gid == gb.gid:
            continue
        key = (min(ga.gid, gb.gid), max(ga.gid, gb.gid))
        if key not in by_kernels:
            by_kernels[key] = final_reason(state, ga, gb, opts)
        out.append(Rejection(pair, *by_kernels[key]))
    return tuple(out)


def _candidate_lists(state: FusionState, opts: Options, levels: dict[str, int]) -> list[list[Group]]:
    """Per buffer, the groups that use it, in the walk order of the scoring mode."""
    if opts.scoring == "inductor":
        groups = _inductor_walk(state)
    else:
        groups = sorted(
            state.groups.values(), key=lambda g: (min(levels[m] for m in g.members), g.members[0])
        )
    by_buffer: dict[str, list[Group]] = {}
    for g in groups:
        if g.kind == "extern":
            continue  # Inductor's unfusable_node: never a candidate
        for b in g.buffer_names():
            by_buffer.setdefault(b, []).append(g)
    if opts.scoring != "inductor":
        return [by_buffer[b] for b in sorted(by_buffer)]
    return list(by_buffer.values())


def _inductor_walk(state: FusionState) -> list[Group]:
    """Inductor sorts fused nodes by min_order, then topologically."""
    by_min = sorted(state.groups.values(), key=lambda g: g.min_order)
    done: set[int] = set()
    out: list[Group] = []
    for g in by_min:
        stack: list[tuple[int, bool]] = [(g.gid, False)]
        while stack:
            cur, expanded = stack.pop()
            if cur in done:
                continue
            if expanded:
                done.add(cur)
                out.append(state.groups[cur])
                continue
            stack.append((cur, True))
            for p in sorted(state.groups[cur].pred, key=lambda x: state.groups[x].min_order, reverse=True):
                if p not in done:
                    stack.append((p, False))
    return out


def _round(
    state: FusionState,
    opts: Options,
    levels: dict[str, int],
    rec: Recorder,
    rnd: int,
    reorder: ReorderHook | None,
    reorders: list[Reorder],
) -> None:
    seen: set[tuple[int, int]] = set()
    scored: list[tuple[Score, tuple[str, str]]] = []
    for users in _candidate_lists(state, opts, levels):
        for i, g1 in enumerate(users):
            for g2 in users[i + 1 : i + 1 + opts.pair_window]:
                key = (g1.gid, g2.gid)
                if key in seen:
                    continue
                seen.add(key)
                v = check_fusion(state, g1, g2, opts)
                if not v.ok and reorder is not None and v.reason in REORDER_REASONS:
                    tried = reorder.try_pair(state, g1, g2, opts)
                    if tried is not None:
                        v, applied = tried
                        reorders.extend(applied)
                if not v.ok:
                    rec.reject(g1, g2, v)
                    continue
                scored.append((_score(state, g1, g2, v, opts, levels), (g1.members[0], g2.members[0])))
    ordered = inductor_sort(scored) if opts.scoring == "inductor" else stable_sort(scored)
    for score, (a, b) in ordered:
        ga, gb = state.group(a), state.group(b)
        if ga.gid == gb.gid:
            continue
        v = check_fusion(state, ga, gb, opts)
        if not v.ok:
            rec.reject(ga, gb, v)
            continue
        pair = (ga.members[0], gb.members[0]) if state.before(ga, gb) else (gb.members[0], ga.members[0])
        state.fuse(ga, gb)
        rec.decisions.append(Decision(len(rec.decisions), pair, "fuse", score.to_json(), rnd, v.kind))


def _score(
    state: FusionState, g1: Group, g2: Group, v: Verdict, opts: Options, levels: dict[str, int]
) -> Score:
    if not state.before(g1, g2):
        g1, g2 = g2, g1
    if opts.scoring == "inductor":
        return inductor_score(state, g1, g2, v.memory)
    return stable_score(state, g1, g2, v.memory, levels)
