"""The working state of the fusion pass: groups of nodes (future kernels) and the DAG between them.

This is the one mutable structure of the planner; it lives only inside one call of the fusion pass.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuseopt.analysis.deps import Dep, NodeDeps, node_deps
from fuseopt.analysis.metrics import AccessTable
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, Node

_MISSING = object()


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

    def __post_init__(self) -> None:
        if not self.min_name:
            self.min_name = min(self.members)

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


class FusionState:
    """Groups, their DAG and its transitive closure.

    Reachability is kept as Python-int bitsets over node indices: `desc[g]` holds at least one
    node bit of every group reachable from g, `anc[g]` of every group that reaches g (a group is
    known by any of its members, `mask[g]`). A fusion only touches the groups that gain
    reachability they did not have, which for the common vertical fusion of a producer and its
    consumer is none at all; the cycle check looks at the first group's direct successors.
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
        count = len(graph.nodes)
        self.node_group = np.arange(count, dtype=np.int64)  # node index -> gid
        self.mask: dict[int, int] = {i: 1 << i for i in range(count)}  # a group's node bits
        self.desc: dict[int, int] = {}
        self.anc: dict[int, int] = {}
        # Program order is topological: descendants from the back, ancestors from the front.
        for i in range(count - 1, -1, -1):
            m = 0
            for s_ in self.groups[i].succ:
                m |= (1 << s_) | self.desc[s_]
            self.desc[i] = m
        for i in range(count):
            m = 0
            for p in self.groups[i].pred:
                m |= (1 << p) | self.anc[p]
            self.anc[i] = m
        # Versions are unique stamps (never reused), so a verdict cached for one version is valid
        # exactly when the group is in that state again (a rolled-back transformation restores it).
        self._stamps = itertools.count(1)
        self.version: dict[int, int] = dict.fromkeys(self.groups, 0)
        self.verdicts: dict[tuple[int, int, int, int], Any] = {}
        self.single_use_cache: dict[tuple[int, int], dict[tuple[str, int], int]] = {}
        self._memo: dict[tuple[str, int, int], Any] = {}
        self.access = AccessTable(graph)
        self.users = self.access.users

    # -- queries ---------------------------------------------------------------------------
    def node(self, name: str) -> Node:
        """The node as transformed so far (loop-order rewrites are kept as overrides)."""
        return self.overrides.get(name) or self.graph.node(name)

    def memo(self, what: str, g: Group, fn: Callable[[Group], Any]) -> Any:
        """A per-group derived value, recomputed only when the group changes (its version)."""
        key = (what, g.gid, self.version[g.gid])
        hit = self._memo.get(key, _MISSING)
        if hit is _MISSING:
            hit = self._memo[key] = fn(g)
        return hit

    def all_deps(self, g: Group) -> dict[Dep, None]:
        return self.memo("deps", g, lambda grp: {**grp.reads, **grp.writes})  # type: ignore[no-any-return]

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
        return bool(self.desc[a.gid] & self.mask[b.gid])

    def _via(self, a: Group, b: Group) -> list[int]:
        """Successors of a, other than b, that reach b (a path a -> other kernel -> b)."""
        mb = self.mask[b.gid]
        return [s for s in sorted(a.succ) if s != b.gid and (self.mask[s] | self.desc[s]) & mb]

    def would_create_cycle(self, a: Group, b: Group) -> bool:
        """Would a and b as one kernel close a cycle (a path a -> other kernel -> b, or back)?

        Only when one reaches the other; then every such path leaves the first through one of its
        direct successors, so looking at those successors' reachability is enough.
        """
        if self.is_ancestor(b, a):
            a, b = b, a
        elif not self.is_ancestor(a, b):
            return False
        return bool(self._via(a, b))

    def path_via(self, a: Group, b: Group) -> list[str]:
        """Kernels on a path between a and b (named by their label, for the reason's detail)."""
        if self.is_ancestor(b, a):
            a, b = b, a
        return [self.label(self.groups[s]) for s in self._via(a, b)[:3]]

    # -- the one mutation ------------------------------------------------------------------
    def fuse(self, a: Group, b: Group) -> Group:
        """Merge the later group into the earlier one (which keeps its gid)."""
        if not self.before(a, b):
            a, b = b, a
        assert not self.would_create_cycle(a, b), "fusion would create a cycle"
        # Reachability sets hold *some* node bit of every group reached (or reaching): a merged
        # group is known by any of its members' bits, so merging renames nothing. Only genuinely
        # new reachability is added: a group reaching one side now reaches the other side's
        # descendants, and a descendant of one side is now reached by the other side's ancestors.
        mg = self.mask[a.gid] | self.mask[b.gid]
        keep = ~mg
        da, db = self.desc[a.gid] & keep, self.desc[b.gid] & keep
        aa, ab = self.anc[a.gid] & keep, self.anc[b.gid] & keep
        desc, anc = self.desc, self.anc
        if db & ~da:
            for g in self._groups_in(aa & ~ab):
                desc[g] |= db
        if da & ~db:
            for g in self._groups_in(ab & ~aa):
                desc[g] |= da
        if ab & ~aa:
            for g in self._groups_in(da & ~db):
                anc[g] |= ab
        if aa & ~ab:
            for g in self._groups_in(db & ~da):
                anc[g] |= aa
        desc[a.gid], anc[a.gid] = da | db, aa | ab
        self.mask[a.gid] = mg
        del desc[b.gid], anc[b.gid], self.mask[b.gid]

        self.version[a.gid] = next(self._stamps)
        del self.version[b.gid]
        a.members = sorted(a.members + b.members, key=self.program_index.__getitem__)
        a.min_name = min(a.min_name, b.min_name)
        for m in b.members:
            self.group_of[m] = a.gid
        self.node_group[self.node_group == b.gid] = a.gid
        if b.is_reduction and not a.is_reduction:
            a.numel, a.rnumel = b.numel, b.rnumel
        if a.kind != b.kind:
            a.kind = _merged_kind(a.kind, b.kind)
        a.min_order = min(a.min_order, b.min_order)
        a.max_order = max(a.max_order, b.max_order)
        writes = {**a.writes, **b.writes}
        reads = {d: None for d in (*a.reads, *b.reads) if d not in writes}
        a.reads, a.writes = reads, writes
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

    def _groups_in(self, bits: int) -> set[int]:
        """Current gids of the groups with a member among the set bits."""
        if not bits:
            return set()
        raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), dtype=np.uint8)
        idx = np.flatnonzero(np.unpackbits(raw, bitorder="little"))
        # Only ORs are applied to these groups, so their order does not matter.
        return set(self.node_group[idx].tolist())

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
            self.deps[node.name] = node_deps(node)
        self.version[g.gid] = next(self._stamps) if version is None else version
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
