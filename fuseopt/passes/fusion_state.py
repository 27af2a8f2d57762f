"""The working state of the fusion pass: groups of nodes (future kernels) and the DAG between them.

This is the one mutable structure of the planner; it lives only inside one call of the fusion pass.
Groups are kept in a topological order that is repaired after each fusion, which makes the cycle
check local: a fusion of g1 before g2 creates a cycle iff some group strictly between them in that
order is reachable from g1 and reaches g2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fuseopt.analysis.deps import Dep, MemoryDep, NodeDeps, StarDep
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, Node

_HOLE = -1


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
    """Groups, their DAG, and the topological order (positions) of groups."""

    def __init__(self, graph: Graph, deps: dict[str, NodeDeps], order_numbers: dict[str, int]):
        self.graph = graph
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
        # Program order is a topological order of the node DAG.
        self.order: list[int] = list(range(len(graph.nodes)))
        self.pos: dict[int, int] = {g: g for g in self.order}
        self.users: dict[str, list[str]] = {}
        for n in graph.nodes:
            for b in n.read_buffers():
                self.users.setdefault(b, []).append(n.name)

    # -- queries ---------------------------------------------------------------------------
    def node(self, name: str) -> Node:
        """The node as transformed so far (loop-order rewrites are kept as overrides)."""
        return self.overrides.get(name) or self.graph.node(name)

    def current_graph(self) -> Graph:
        if not self.overrides:
            return self.graph
        return self.graph.replace(nodes=tuple(self.overrides.get(n.name, n) for n in self.graph.nodes))

    def group(self, node: str) -> Group:
        return self.groups[self.group_of[node]]

    def ordered_groups(self) -> list[Group]:
        return [self.groups[g] for g in self.order if g != _HOLE]

    def is_ancestor(self, a: Group, b: Group) -> bool:
        """Is there a path a -> ... -> b? (Search bounded by the topological positions.)"""
        if self.pos[a.gid] >= self.pos[b.gid]:
            return False
        limit = self.pos[b.gid]
        stack = [a.gid]
        seen = {a.gid}
        while stack:
            g = stack.pop()
            for s in self.groups[g].succ:
                if s == b.gid:
                    return True
                if s not in seen and self.pos[s] < limit:
                    seen.add(s)
                    stack.append(s)
        return False

    def _reach_between(self, a: Group, b: Group) -> tuple[set[int], bool]:
        """Groups strictly between a and b reachable from a, and whether any of them reaches b."""
        limit = self.pos[b.gid]
        seen: set[int] = set()
        stack = [s for s in a.succ if s != b.gid and self.pos[s] < limit]
        seen.update(stack)
        hits_b = False
        while stack:
            g = stack.pop()
            grp = self.groups[g]
            if b.gid in grp.succ:
                hits_b = True
            for s in grp.succ:
                if s not in seen and s != b.gid and self.pos[s] < limit:
                    seen.add(s)
                    stack.append(s)
        return seen, hits_b

    def would_create_cycle(self, a: Group, b: Group) -> bool:
        if self.pos[a.gid] > self.pos[b.gid]:
            a, b = b, a
        _, cyc = self._reach_between(a, b)
        return cyc

    def path_via(self, a: Group, b: Group) -> list[str]:
        """A node path a -> other -> b that a fusion of a and b would turn into a cycle (for reasons)."""
        if self.pos[a.gid] > self.pos[b.gid]:
            a, b = b, a
        limit = self.pos[b.gid]
        parent: dict[int, int] = {}
        stack = [s for s in sorted(a.succ) if s != b.gid and self.pos[s] < limit]
        for s in stack:
            parent[s] = a.gid
        while stack:
            g = stack.pop(0)
            if b.gid in self.groups[g].succ:
                chain = [g]
                while chain[-1] in parent and parent[chain[-1]] != a.gid:
                    chain.append(parent[chain[-1]])
                return [self.groups[x].members[0] for x in reversed(chain)]
            for s in sorted(self.groups[g].succ):
                if s not in parent and s != b.gid and self.pos[s] < limit:
                    parent[s] = g
                    stack.append(s)
        return []

    # -- the one mutation ------------------------------------------------------------------
    def fuse(self, a: Group, b: Group) -> Group:
        """Merge b into a (a keeps its gid when it comes first) and repair the topological order."""
        if self.pos[a.gid] > self.pos[b.gid]:
            a, b = b, a
        between, cyc = self._reach_between(a, b)
        assert not cyc, "fusion would create a cycle"
        lo, hi = self.pos[a.gid], self.pos[b.gid]
        middle = self.order[lo + 1 : hi]
        before = [g for g in middle if g not in between]
        after = [g for g in middle if g in between]
        # Same length as before (b's old slot becomes a hole), so positions past hi stay valid.
        self.order[lo : hi + 1] = [*before, a.gid, *after, _HOLE]
        for i in range(lo, hi):
            self.pos[self.order[i]] = i
        del self.pos[b.gid]

        members = sorted(a.members + b.members, key=self.program_index.__getitem__)
        a.members = members
        for m in b.members:
            self.group_of[m] = a.gid
        if b.is_reduction and not a.is_reduction:
            a.numel, a.rnumel = b.numel, b.rnumel
        if a.kind != b.kind:
            a.kind = _merged_kind(a.kind, b.kind)
        a.min_order = min(a.min_order, b.min_order)
        a.max_order = max(a.max_order, b.max_order)
        writes = {**a.writes, **b.writes}
        reads = {d: None for d in (*a.reads, *b.reads) if d not in writes}
        a.reads, a.writes = reads, writes
        for s in b.succ:
            grp = self.groups[s]
            grp.pred.discard(b.gid)
            if s != a.gid:
                grp.pred.add(a.gid)
                a.succ.add(s)
        for p in b.pred:
            grp = self.groups[p]
            grp.succ.discard(b.gid)
            if p != a.gid:
                grp.succ.add(a.gid)
                a.pred.add(p)
        a.succ.discard(a.gid)
        a.pred.discard(a.gid)
        a.succ.discard(b.gid)
        a.pred.discard(b.gid)
        del self.groups[b.gid]
        return a

    def install(self, node: ComputeNode, deps: NodeDeps) -> None:
        """Swap in a loop-transformed version of a (still unfused) node, with its new deps."""
        g = self.group(node.name)
        assert g.members == [node.name], "only unfused nodes are transformed during fusion"
        if node is self.graph.node(node.name):
            self.overrides.pop(node.name, None)
        else:
            self.overrides[node.name] = node
        self.deps[node.name] = deps
        g.reads = dict.fromkeys(deps.reads)
        g.writes = dict.fromkeys(deps.writes)


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


def dep_index_text(d: Dep) -> str:
    return d.text() if isinstance(d, MemoryDep | StarDep) else str(d)
