"""Stable scoring at the size cap: the natural plan, the packed plan, and nodes stranded by the cap.

When a group of nodes linked by shared buffers (`components`) exceeds --max-fusion-size and the
natural plan (scored fusion from single nodes) misses `fewest_kernels` (every extern alone, every
linked group in full kernels: no plan has fewer), the graph is planned again with chains packed
(`fill_seeds`: each node seeded into its latest producer's kernel in topological order, so a
kernel fills to the cap and the next node starts the next one), then with nodes stranded beside a
full kernel seeded into it (`stranded`, up to MAX_REPLANS times). The plan kept has the fewest
kernels, then the fewest bytes (`plan_cost`; the natural plan on ties).

The natural plan and the packed line (the packed plan and its replans) do not depend on each
other. With `Options.jobs` > 1 on a graph of PARALLEL_MIN_NODES nodes or more, the natural plan
runs in a forked child (`speculate.Forked`) while this process makes the packed line; the child
sends the natural plan's cost, and the plan itself only when it is the one kept (then replayed
here: its kernels fused again, its loop transformations installed). The decisions are the ones
the single-process order makes, so the plan is the same with any `jobs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from fuseopt.analysis.deps import NodeDeps
from fuseopt.ir.graph import ComputeNode, Graph, Node
from fuseopt.passes import speculate
from fuseopt.passes.fusion_stable import stable_fuse
from fuseopt.passes.fusion_state import FusionState, Recorder
from fuseopt.passes.legality import REORDER_REASONS, Verdict, check_fusion
from fuseopt.passes.options import MAX_FUSION_SIZE_LIMIT, Options
from fuseopt.plan import Decision, Reorder

if TYPE_CHECKING:
    from fuseopt.passes.fusion import ReorderHook

MAX_REPLANS = 3
# Smallest graph whose natural plan is made in a child process: from 500 nodes the fork saves
# 15-20% of planning (0.30 -> 0.25 s), below it a few ms (benchmarks/results/planner-2026-12-04.json)
PARALLEL_MIN_NODES = 500

Planned = tuple[FusionState, Recorder, list[Reorder]]
Seeds = tuple[tuple[str, str], ...]
# A plan as sent by the child: kernels (members in program order), loop-transformed nodes,
# decisions, refused node pairs, reorders
_Record = tuple[
    tuple[tuple[str, ...], ...],
    dict[str, ComputeNode],
    list[Decision],
    list[tuple[str, str]],
    list[Reorder],
]


def components(graph: Graph) -> list[int]:
    """The sizes of the groups of non-extern nodes linked by buffers they share (a kernel never
    spans two: every fusion is of two groups that share a buffer), largest first."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    first_user: dict[str, str] = {}
    names = [n.name for n in graph.nodes if n.kind != "extern"]
    for n in graph.nodes:
        if n.kind == "extern":
            continue
        for b in (*n.read_buffers(), *n.outputs):
            other = first_user.setdefault(b, n.name)
            parent[find(n.name)] = find(other)
    sizes: dict[str, int] = {}
    for name in names:
        root = find(name)
        sizes[root] = sizes.get(root, 0) + 1
    return sorted(sizes.values(), reverse=True)


def fewest_kernels(graph: Graph, opts: Options, sizes: list[int] | None = None) -> int:
    """A lower bound on the kernels of any plan: every extern node alone, and each group of nodes
    linked by shared buffers (`components`) in kernels of at most --max-fusion-size nodes. A
    plan that meets it cannot be beaten by replanning."""
    externs = sum(1 for n in graph.nodes if n.kind == "extern")
    sizes = components(graph) if sizes is None else sizes
    return externs + sum(-(-size // opts.max_fusion_size) for size in sizes)


def plan_cost(planned: Planned) -> tuple[int, int]:
    """What the planner minimises: kernels, then bytes moved (loop transformations keep each
    node's accesses, so the unfused graph's access table prices any plan of it)."""
    state = planned[0]
    return len(state.groups), sum(state.access.kernel_bytes(g.members) for g in state.groups.values())


def stable_plan(
    graph: Graph,
    deps: dict[str, NodeDeps],
    opts: Options,
    levels: dict[str, int],
    numbers: dict[str, int],
    hook: ReorderHook | None,
    fresh: Planned,
    meanwhile: Callable[[Planned], None] | None = None,
) -> Planned:
    """The natural plan (planned into `fresh`), unless the size cap can bind (a group of linked
    nodes exceeds it) and the natural plan misses `fewest_kernels`: then also the packed plan,
    and the better of the two (`plan_cost`; the natural one on ties), with nodes it stranded next
    to a full kernel seeded into it (`stranded`, up to MAX_REPLANS times) while that makes the
    plan better. `meanwhile` gets the packed line (the packed plan as replanned) in this process
    while a forked child is still making the natural plan: the caller's work on the plan kept
    unless the natural one costs less, done while this process would wait. It is not called
    without a child, nor once the child has answered (the choice is known then)."""

    # The plans made here share the verdicts that depend only on a pair's nodes: a replan meets
    # most pairs of the plan before it again (the natural plan made in a child shares nothing).
    shared: dict[tuple[object, ...], tuple[tuple[Node, ...], Verdict]] = {}

    def plan(seeds: Seeds, into: Planned | None = None) -> Planned:
        if into is None:
            again = FusionState(graph, dict(deps), numbers, by_name=True)
            again.detailed = False
            again.shared_verdicts = shared
            into = (again, Recorder(again.label), [])
        st, rec, reorders = into
        stable_fuse(st, opts, levels, rec.reject, rec.decisions, hook, reorders, seeds)
        return into

    def replan(best: Planned, base: Seeds) -> Planned:
        """`best` with the nodes it stranded seeded first, while that makes the plan better."""
        seeds: set[tuple[str, str]] = set()
        for _ in range(MAX_REPLANS):
            if len(best[0].groups) <= fewest:
                break  # no plan has fewer kernels
            found = set(stranded(best[0], opts, hook)) - seeds
            if not found:
                break
            seeds |= found
            again = plan((*tuple(sorted(seeds)), *base))
            if plan_cost(again) >= plan_cost(best):
                break
            best = again
        return best

    sizes = components(graph)
    if not sizes or sizes[0] <= opts.max_fusion_size:
        return plan((), fresh)  # the cap cannot refuse a pair
    fewest = fewest_kernels(graph, opts, sizes)
    child = None
    if opts.jobs > 1 and len(graph.nodes) >= PARALLEL_MIN_NODES:
        child = speculate.Forked.start(lambda: _natural_line(plan((), fresh)))
    fresh[0].shared_verdicts = shared  # here, the natural plan is made (or replayed) beside the others
    fill = fill_seeds(graph, levels)
    if child is None:
        natural = plan((), fresh)
        if len(natural[0].groups) <= fewest:
            return natural
        packed = plan(fill)
        if plan_cost(packed) < plan_cost(natural):
            return replan(packed, fill)
        return replan(natural, ())
    try:
        # The packed line here while the child makes the natural plan: the packed plan and its
        # replans, kept where the packed plan costs less than the natural one (as above).
        packed = plan(fill)
        packed_cost = plan_cost(packed)
        line = replan(packed, fill)
        if meanwhile is not None and not child.ready():
            meanwhile(line)  # the caller's work on the likely plan, while the child plans
        natural_cost = child.summary()
        if natural_cost is not None and natural_cost[0] > fewest and packed_cost < natural_cost:
            return line
        record = child.result()
    finally:
        child.close()
    # The natural plan is kept (or the child failed: made here then)
    natural = _replay(record, fresh) if record is not None else plan((), fresh)
    if len(natural[0].groups) <= fewest:
        return natural
    if packed_cost < plan_cost(natural):
        return line
    return replan(natural, ())


def _natural_line(natural: Planned) -> tuple[tuple[int, int], Callable[[], _Record]]:
    """In the child: the natural plan's cost, and the function that packs the plan to send."""
    state, rec, reorders = natural

    def record() -> _Record:
        kernels = tuple(tuple(g.members) for g in state.groups.values())
        return kernels, dict(state.overrides), rec.decisions, sorted(rec.rejected), reorders

    return plan_cost(natural), record


def _replay(record: _Record, into: Planned) -> Planned:
    """The child's plan made again in `into` (a fresh state): its loop-transformed nodes installed,
    each kernel's members fused in program order (topological: a kernel is convex, so no partial
    kernel closes a cycle), its decisions, refusals and reorders recorded."""
    kernels, overrides, decisions, rejected, reorders = record
    state, rec, into_reorders = into
    for name in sorted(overrides):
        state.install((overrides[name],))
    for members in kernels:
        g = state.group(members[0])
        for m in members[1:]:
            g = state.fuse(g, state.group(m))
    rec.decisions.extend(decisions)
    rec.rejected.update(rejected)
    into_reorders.extend(reorders)
    return into


def fill_seeds(graph: Graph, levels: dict[str, int]) -> Seeds:
    """Cap-aware packing of chains: in topological (depth, name) order, each compute node paired
    with its latest producer (greatest depth, then name). Fused in that order as far as legality
    allows, a chain fills a kernel up to the cap and the node that finds it full starts the next."""
    writer = graph.writer()
    out: list[tuple[str, str]] = []
    for n in sorted(graph.nodes, key=lambda n: (levels[n.name], n.name)):
        if n.kind == "extern":
            continue
        producers = {w for b in n.read_buffers() if (w := writer.get(b)) is not None and w != n.name}
        producers = {p for p in producers if graph.node(p).kind != "extern"}
        if producers:
            out.append((max(producers, key=lambda p: (levels[p], p)), n.name))
    return tuple(out)


def stranded(state: FusionState, opts: Options, hook: ReorderHook | None) -> list[tuple[str, str]]:
    """Single-node kernels that a neighbouring kernel would take but for --max-fusion-size: each as
    (the neighbour's member it shares a buffer with, the node), by names."""
    roomy = dataclasses.replace(opts, max_fusion_size=MAX_FUSION_SIZE_LIMIT)
    # Asked without the search's cached verdicts: those were reached under the cap (a pair
    # refused as too_large stays cached so), and the question here is every rule but the cap.
    searched, state.verdicts = state.verdicts, {}
    try:
        return _stranded(state, opts, roomy, hook)
    finally:
        state.verdicts = searched


def _stranded(
    state: FusionState, opts: Options, roomy: Options, hook: ReorderHook | None
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for g in sorted(state.groups.values(), key=lambda g: g.min_name):
        if len(g.members) != 1 or g.is_library:
            continue
        name = g.members[0]
        node = state.node(name)
        producers = sorted({w for b in node.read_buffers() if (w := state.writer.get(b)) is not None})
        readers = sorted({r for b in node.outputs for r in state.users.get(b, ())} - {name})
        for partner in (*producers, *readers):
            other = state.group(partner)
            if other.gid == g.gid or len(other.members) + 1 <= opts.max_fusion_size or other.is_library:
                continue
            v = check_fusion(state, g, other, roomy)
            if not v.ok and hook is not None and v.reason in REORDER_REASONS:
                found = hook.propose(state, g, other, roomy)
                v = found[0] if found is not None else v
            if v.ok:
                out.append((partner, name))
                break
    return out
