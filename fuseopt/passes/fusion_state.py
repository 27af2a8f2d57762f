"""The working state of the fusion pass: groups of nodes (future kernels) and the DAG between them.

This is the one mutable structure of the planner; it lives only inside one call of the fusion pass.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fuseopt.analysis.deps import Dep, NodeDeps, node_deps
from fuseopt.analysis.metrics import AccessTable, Summary
from fuseopt.ir.expr import Load
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, Node
from fuseopt.passes.reach import Reach
from fuseopt.plan import Decision

if TYPE_CHECKING:
    from fuseopt.passes.legality import Verdict


@dataclass
class Group:
    gid: int
    members: list[str]  # program order
    kind: str  # pointwise | reduction | extern | template
    numel: int
    rnumel: int
    min_order: int
    max_order: int
    reads: dict[Dep, None] = field(default_factory=dict)
    writes: dict[Dep, None] = field(default_factory=dict)
    succ: set[int] = field(default_factory=set)
    pred: set[int] = field(default_factory=set)
    min_name: str = ""  # the smallest member name (kept current by FusionState.fuse)
    member_set: set[str] = field(default_factory=set)  # the members (kept current by fuse)

    def __post_init__(self) -> None:
        if not self.min_name:
            self.min_name = min(self.members)
        self.member_set = set(self.members)

    @property
    def is_reduction(self) -> bool:
        return self.kind == "reduction"

    @property
    def is_library(self) -> bool:
        return self.kind in ("extern", "template")

    def buffer_names(self) -> list[str]:
        return list(dict.fromkeys([d.buffer for d in self.reads] + [d.buffer for d in self.writes]))

    def written_buffers(self) -> set[str]:
        return {d.buffer for d in self.writes}


class Recorder:
    """What a plan decided: its fusions, and the node pairs it refused (their reasons are asked
    again of the final kernels)."""

    def __init__(self, label: Callable[[Group], str]) -> None:
        self.label = label
        self.decisions: list[Decision] = []
        self.rejected: set[tuple[str, str]] = set()

    def reject(self, a: Group, b: Group, v: Verdict) -> None:
        """Record a refusal: the verdict's two nodes where it names them, else the groups' labels."""
        self.rejected.add(v.nodes or (self.label(a), self.label(b)))


class FusionState:
    """Groups, their DAG and reachability in it (`reach.Reach`: a topological order kept across
    fusions, searched within the window between two groups; memory linear in the graph). The
    cycle check looks at the first group's direct successors.
    """

    def __init__(
        self, graph: Graph, deps: dict[str, NodeDeps], order_numbers: dict[str, int], *, by_name: bool = False
    ):
        self.graph = graph
        # by_name: groups are named, ordered and tie-broken by node names (stable scoring), never
        # by their position in the node list (inductor scoring, faithfully, does the latter).
        self.by_name = by_name
        self.overrides: dict[str, ComputeNode] = {}
        self.deps = deps
        self.program_index = {n.name: i for i, n in enumerate(graph.nodes)}
        self.group_of: dict[str, int] = {}
        self.groups: dict[int, Group] = {}
        writer = graph.writer()
        self.writer = writer  # buffer -> the node that writes it
        for i, n in enumerate(graph.nodes):
            d = deps[n.name]
            kind, numel, rnumel = _node_group_shape(n)
            on = order_numbers[n.name]
            self.groups[i] = Group(
                i, [n.name], kind, numel, rnumel, on, on, dict.fromkeys(d.reads), dict.fromkeys(d.writes)
            )
            self.group_of[n.name] = i
        for i, n in enumerate(graph.nodes):
            for b in n.read_buffers():
                w = writer.get(b)
                if w is not None and w != n.name:
                    j = self.group_of[w]
                    self.groups[j].succ.add(i)
                    self.groups[i].pred.add(j)
        # Program order is topological (only the cost of a query depends on it, never its answer).
        self.reach = Reach(self.groups, range(len(graph.nodes)))
        # Versions are unique stamps (never reused), so a verdict cached for one version is valid
        # exactly when the group is in that state again (a rolled-back transformation restores it).
        self._stamps = itertools.count(1)
        self.version: dict[int, int] = dict.fromkeys(self.groups, 0)
        # (gid, gid) -> ((version, version), verdict): the latest verdict of each pair of groups
        self.verdicts: dict[tuple[int, int], tuple[tuple[int, int], Any]] = {}
        # False while the fusion pass searches: a cycle's detail (the kernels on the path) is
        # spelled out only for verdicts that reach the plan or `explain` (found again then)
        self.detailed = True
        self.single_use_cache: dict[tuple[int, int], dict[tuple[str, int], int]] = {}
        self.dep_bytes: dict[Dep, int] = {}  # analysis.deps.dep_bytes of each dependency asked about
        # legality's match_read verdicts by (producer, reader, load, space), nodes by identity
        self.match_memo: dict[tuple[int, int, int, int, int], tuple[Any, Any, Any, Any]] = {}
        self.access = AccessTable(graph)
        self.users = self.access.users
        self.summaries: dict[int, Summary] = {}  # points read and written per buffer, by group
        self.level_ranges: dict[int, tuple[int, int]] = {}  # (least, greatest) depth, by group
        self._loads: dict[str, tuple[Node, tuple[Load, ...]]] = {}
        # install's dependencies of a (frozen) node, by identity (the entry keeps it alive): a
        # proposal tried and rolled back swaps the same node objects in and out again
        self._deps_memo: dict[int, tuple[Node, NodeDeps]] = {id(n): (n, deps[n.name]) for n in graph.nodes}
        # install's stamps: (gid, version before, ids of the nodes) -> (the nodes, the stamp)
        self._install_stamps: dict[tuple[int, int, tuple[int, ...]], tuple[tuple[Node, ...], int]] = {}
        # `content` by group: (version, ids of its nodes, its nodes)
        self._content: dict[int, tuple[int, tuple[int, ...], tuple[Node, ...]]] = {}
        # Legality verdicts that depend only on the two groups' nodes, shared by the plans one
        # fusion pass makes of a graph (`packing.stable_plan`); None: kept by no one
        self.shared_verdicts: dict[tuple[object, ...], tuple[tuple[Node, ...], Any]] | None = None

    # -- queries ---------------------------------------------------------------------------
    def content(self, g: Group) -> tuple[tuple[int, ...], tuple[Node, ...]]:
        """The group's nodes as they are (members in order, loop transformations installed) and
        their identities: another plan's group of the same nodes is the same group to legality."""
        version = self.version[g.gid]
        hit = self._content.get(g.gid)
        if hit is None or hit[0] != version:
            nodes = tuple(self.node(m) for m in g.members)
            hit = self._content[g.gid] = (version, tuple(map(id, nodes)), nodes)
        return hit[1], hit[2]

    def node(self, name: str) -> Node:
        """The node as transformed so far (loop-order rewrites are kept as overrides)."""
        return self.overrides.get(name) or self.graph.node(name)

    def summary(self, g: Group) -> Summary:
        """The group's accesses (`AccessTable.summary`), merged as groups fuse."""
        hit = self.summaries.get(g.gid)
        if hit is None:
            hit = self.summaries[g.gid] = self.access.summary(g.members)
        return hit

    def level_range(self, g: Group, levels: dict[str, int]) -> tuple[int, int]:
        """(least, greatest) dependency depth of the members, merged as groups fuse."""
        hit = self.level_ranges.get(g.gid)
        if hit is None:
            ls = [levels[m] for m in g.members]
            hit = self.level_ranges[g.gid] = (min(ls), max(ls))
        return hit

    def loads(self, name: str) -> tuple[Load, ...]:
        """The loads of a node as transformed so far, in program order of its value."""
        node = self.node(name)
        hit = self._loads.get(name)
        if hit is None or hit[0] is not node:
            hit = self._loads[name] = (node, tuple(node.reads()) if isinstance(node, ComputeNode) else ())
        return hit[1]

    def current_graph(self) -> Graph:
        if not self.overrides:
            return self.graph
        return self.graph.replace(nodes=tuple(self.overrides.get(n.name, n) for n in self.graph.nodes))

    def group(self, node: str) -> Group:
        return self.groups[self.group_of[node]]

    def label(self, g: Group) -> str:
        """The node that names a group: its smallest name (by_name) or its first in program order."""
        return g.min_name if self.by_name else g.members[0]

    def before(self, a: Group, b: Group) -> bool:
        """Does a go first? (a reaches b, or neither reaches the other and a's label sorts first.)"""
        if self.is_ancestor(b, a):
            return False
        if self.is_ancestor(a, b):
            return True
        return self.label(a) < self.label(b) if self.by_name else a.gid < b.gid

    def ordered_groups(self, key: Callable[[Group], Any] | None = None) -> list[Group]:
        """A topological order of the groups; among ready groups, the smallest key first
        (default: program order, or the label when by_name)."""
        if key is None:
            key = (lambda g: self.label(g)) if self.by_name else (lambda g: g.gid)
        indeg = {g: len(grp.pred) for g, grp in self.groups.items()}
        ready = [(key(self.groups[g]), g) for g, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        out: list[Group] = []
        while ready:
            _, g = heapq.heappop(ready)
            out.append(self.groups[g])
            for s_ in self.groups[g].succ:
                indeg[s_] -= 1
                if indeg[s_] == 0:
                    heapq.heappush(ready, (key(self.groups[s_]), s_))
        assert len(out) == len(self.groups), "the group graph has a cycle"
        return out

    def is_ancestor(self, a: Group, b: Group) -> bool:
        """Is there a path a -> ... -> b?"""
        return self.reach.reaches(a.gid, b.gid)

    def _via(self, a: Group, b: Group) -> list[int]:
        """Successors of a, other than b, that reach b (a path a -> other kernel -> b)."""
        if len(a.succ) == 1 and b.gid in a.succ:
            return []
        ancestors = self.reach.ancestors_between(b.gid, a.gid)
        return [s for s in sorted(a.succ) if s != b.gid and s in ancestors]

    def would_create_cycle(self, a: Group, b: Group) -> bool:
        """Would a and b as one kernel close a cycle (a path a -> other kernel -> b, or back)?

        Only when one reaches the other; then every such path leaves the first through one of its
        direct successors, so looking at those successors' reachability is enough.
        """
        if self.is_ancestor(b, a):
            a, b = b, a
        elif not self.is_ancestor(a, b):
            return False
        if b.gid not in a.succ:  # a reaches b, and not directly: through another group
            return True
        return self.reach.reaches_around(a.gid, b.gid)

    def closes_cycle(self, a: Group, b: Group) -> bool:
        """would_create_cycle for a pair where a is known to reach b: a path a -> b that is not
        the direct edge, or leaves a by another successor."""
        return b.gid not in a.succ or self.reach.reaches_around(a.gid, b.gid)

    def path_via(self, a: Group, b: Group) -> list[str]:
        """Kernels on a path between a and b (named by their label, for the reason's detail)."""
        if self.is_ancestor(b, a):
            a, b = b, a
        via = [self.label(self.groups[s]) for s in self._via(a, b)]
        return (sorted(via) if self.by_name else via)[:3]  # by name: not by list position

    # -- the one mutation ------------------------------------------------------------------
    def fuse(self, a: Group, b: Group) -> Group:
        """Merge the later group into the earlier one (which keeps its gid)."""
        if not self.before(a, b):
            a, b = b, a
        assert not self.would_create_cycle(a, b), "fusion would create a cycle"
        self.reach.contract(a.gid, b.gid)

        self.version[a.gid] = next(self._stamps)
        del self.version[b.gid]
        # Members in program order, the smaller side inserted into the larger (a kernel that
        # grows at its end appends), and every record below updated with b's side only.
        for m in b.members:
            self.group_of[m] = a.gid
        big, small = (a.members, b.members) if len(a.members) >= len(b.members) else (b.members, a.members)
        pos = self.program_index.__getitem__
        if pos(small[0]) > pos(big[-1]):
            big.extend(small)
        else:
            for m in small:
                bisect.insort(big, m, key=pos)
        a.members = big
        a.min_name = min(a.min_name, b.min_name)
        # The smaller side merged into the larger (each member moves O(log n) times in all).
        if len(a.member_set) < len(b.member_set):
            a.member_set, b.member_set = b.member_set, a.member_set
        a.member_set |= b.member_set
        la, lb = self.level_ranges.pop(a.gid, None), self.level_ranges.pop(b.gid, None)
        if la is not None and lb is not None:
            self.level_ranges[a.gid] = (min(la[0], lb[0]), max(la[1], lb[1]))
        sa, sb = self.summaries.pop(a.gid, None), self.summaries.pop(b.gid, None)
        if sa is not None and sb is not None:
            if len(sa[0]) + len(sa[1]) < len(sb[0]) + len(sb[1]):
                sa, sb = sb, sa
            for mine, theirs in zip(sa, sb, strict=True):
                for buf, pts in theirs.items():
                    mine[buf] = mine.get(buf, 0) + pts
            self.summaries[a.gid] = sa
        if b.is_reduction and not a.is_reduction:
            a.numel, a.rnumel = b.numel, b.rnumel
        if a.kind != b.kind:
            a.kind = _merged_kind(a.kind, b.kind)
        a.min_order = min(a.min_order, b.min_order)
        a.max_order = max(a.max_order, b.max_order)
        # writes: a's then b's; reads: a's then b's, less what the two now write (in place, in
        # the order a rebuilt {**a.writes, **b.writes} and its reads would have).
        a.writes.update(b.writes)
        for d in b.writes:
            a.reads.pop(d, None)
        for d in b.reads:
            if d not in a.writes:
                a.reads.setdefault(d, None)
        for s_ in b.succ:
            grp = self.groups[s_]
            grp.pred.discard(b.gid)
            if s_ != a.gid:
                grp.pred.add(a.gid)
                a.succ.add(s_)
        for p in b.pred:
            grp = self.groups[p]
            grp.succ.discard(b.gid)
            if p != a.gid:
                grp.succ.add(a.gid)
                a.pred.add(p)
        a.succ.discard(b.gid)
        a.pred.discard(b.gid)
        del self.groups[b.gid]
        return a

    @contextmanager
    def trial(self, nodes: Sequence[ComputeNode]) -> Iterator[None]:
        """`install(nodes)` for the duration of the block, then the group exactly as it was (its
        nodes, dependencies and stamp: verdicts cached for it stay current)."""
        g = self.group(nodes[0].name)
        saved = (self.version[g.gid], g.reads, g.writes)
        before = [(n.name, self.overrides.get(n.name), self.deps[n.name]) for n in nodes]
        self.install(nodes)
        try:
            yield
        finally:
            for name, override, deps in before:
                if override is None:
                    self.overrides.pop(name, None)
                else:
                    self.overrides[name] = override
                self.deps[name] = deps
            self.version[g.gid], g.reads, g.writes = saved

    def install(self, nodes: Sequence[ComputeNode], version: int | None = None) -> None:
        """Swap in loop-transformed versions of nodes (all of one group) and recompute its deps.

        `version` restores a group's earlier stamp when undoing a transformation, so pairs queued
        for the group in that state stay current."""
        g = self.group(nodes[0].name)
        assert all(self.group_of[n.name] == g.gid for n in nodes)
        for node in nodes:
            if node is self.graph.node(node.name):
                self.overrides.pop(node.name, None)
            else:
                self.overrides[node.name] = node
            hit = self._deps_memo.get(id(node))
            if hit is None or hit[0] is not node:
                hit = self._deps_memo[id(node)] = (node, node_deps(node))
            self.deps[node.name] = hit[1]
        if version is None:
            # The same nodes installed on the same state of a group give the same group again: a
            # proposal tried while scoring and installed when taken keeps the stamp (and the
            # verdict cached under it) of its first try.
            key = (g.gid, self.version[g.gid], tuple(id(n) for n in nodes))
            stamp = self._install_stamps.get(key)
            if stamp is None or any(a is not b for a, b in zip(stamp[0], nodes, strict=True)):
                stamp = self._install_stamps[key] = (tuple(nodes), next(self._stamps))
            version = stamp[1]
        self.version[g.gid] = version
        writes = {d: None for m in g.members for d in self.deps[m].writes}
        g.writes = writes
        g.reads = {d: None for m in g.members for d in self.deps[m].reads if d not in writes}


def _merged_kind(a: str, b: str) -> str:
    if "template" in (a, b):
        return "template"
    if "reduction" in (a, b):
        return "reduction"
    return "pointwise"


def _node_group_shape(n: Node) -> tuple[str, int, int]:
    if isinstance(n, LibraryNode):
        return n.kind, 1, 1
    assert isinstance(n, ComputeNode)
    return n.kind, n.numel, n.rnumel
