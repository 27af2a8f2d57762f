"""Bytes moved, by Inductor's `num_bytes_accessed` definition.

For each kernel, for each buffer it reads from outside or writes for use outside (a graph output or
a buffer another kernel reads): itemsize * min(accesses, buffer numel), where accesses sums the
points of the member nodes that touch the buffer (a library call: the elements of its views).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass

from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode

Summary = tuple[dict[str, int], dict[str, int]]  # (points read, points written) per buffer


@dataclass(frozen=True)
class NodeAccess:
    """What one node touches: (buffer, points) for its reads and its writes."""

    reads: tuple[tuple[str, int], ...]
    writes: tuple[tuple[str, int], ...]


class AccessTable:
    """Per-node accesses and per-buffer readers of a graph, computed once, for fast kernel_bytes."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes: dict[str, NodeAccess] = {}
        self.users: dict[str, list[str]] = {}
        for n in graph.nodes:
            reads: tuple[tuple[str, int], ...]
            writes: tuple[tuple[str, int], ...]
            if isinstance(n, ComputeNode):
                pts = n.numel * n.rnumel
                reads = tuple((b, pts) for b in n.read_buffers())
                writes = ((n.output, n.numel),)
            else:
                reads = _view_reads(graph, n)
                writes = tuple((o, graph.buffer(o).numel) for o in n.outputs)
            self.nodes[n.name] = NodeAccess(reads, writes)
            for b, _ in reads:
                self.users.setdefault(b, []).append(n.name)
        self.sizes = {b.name: (b.dtype.itemsize, b.numel, b.role == "output") for b in graph.buffers}

    def kernel_bytes(self, members: Sequence[str]) -> int:
        inside = set(members)
        reads: dict[str, int] = {}
        writes: dict[str, int] = {}
        written: set[str] = set()
        for name in members:
            acc = self.nodes[name]
            for b, pts in acc.writes:
                written.add(b)
                if self.sizes[b][2] or any(u not in inside for u in self.users.get(b, ())):
                    writes[b] = writes.get(b, 0) + pts
            for b, pts in acc.reads:
                reads[b] = reads.get(b, 0) + pts
        total = 0
        for b, acc_pts in writes.items():
            item, numel, _ = self.sizes[b]
            total += item * min(acc_pts, numel)
        for b, acc_pts in reads.items():
            if b not in written:
                item, numel, _ = self.sizes[b]
                total += item * min(acc_pts, numel)
        return total

    def saved_bytes(
        self,
        m1: Sequence[str],
        m2: Sequence[str],
        summaries: tuple[Summary, Summary] | None = None,
        sets: tuple[Container[str], Container[str]] | None = None,
    ) -> int:
        """kernel_bytes(m1) + kernel_bytes(m2) - kernel_bytes(m1 + m2), looking only at shared buffers.

        `summaries` are `summary(m1)`, `summary(m2)` and `sets` the members as sets, when the
        caller keeps them (then the cost is that of the smaller summary, not of the members)."""
        a1, a2 = summaries if summaries is not None else (self.summary(m1), self.summary(m2))
        small, big = (a1, a2) if len(a1[0]) + len(a1[1]) <= len(a2[0]) + len(a2[1]) else (a2, a1)
        shared = [b for part in small for b in part if b in big[0] or b in big[1]]
        if not shared:
            return 0
        s1, s2 = sets if sets is not None else (set(m1), set(m2))
        union = _Either(s1, s2)
        saved = 0
        for b in dict.fromkeys(shared):
            saved += self._contrib(b, a1, s1) + self._contrib(b, a2, s2)
            merged = (
                {b: a1[0].get(b, 0) + a2[0].get(b, 0)},
                {b: a1[1].get(b, 0) + a2[1].get(b, 0)} if b in a1[1] or b in a2[1] else {},
            )
            saved -= self._contrib(b, merged, union)
        return saved

    def summary(self, members: Sequence[str]) -> Summary:
        """Points read and written per buffer by a set of nodes."""
        reads: dict[str, int] = {}
        writes: dict[str, int] = {}
        for name in members:
            acc = self.nodes[name]
            for b, pts in acc.reads:
                reads[b] = reads.get(b, 0) + pts
            for b, pts in acc.writes:
                writes[b] = writes.get(b, 0) + pts
        return reads, writes

    def _contrib(self, b: str, summary: Summary, inside: Container[str]) -> int:
        reads, writes = summary
        item, numel, is_output = self.sizes[b]
        if b in writes:
            if is_output or any(u not in inside for u in self.users.get(b, ())):
                return item * min(writes[b], numel)
            return 0
        return item * min(reads.get(b, 0), numel)


def _view_reads(graph: Graph, n: LibraryNode) -> tuple[tuple[str, int], ...]:
    """A library call reads each view's elements (q, k and v of one buffer: a third each); v1
    inputs are whole buffers. Per buffer, in first-use order."""
    out: dict[str, int] = {}
    for v in n.read_views(graph):
        out[v.buffer] = out.get(v.buffer, 0) + min(v.numel, graph.buffer(v.buffer).numel)
    return tuple(out.items())


class _Either:
    """Membership in either of two sets (the union, without building it)."""

    def __init__(self, a: Container[str], b: Container[str]):
        self.a, self.b = a, b

    def __contains__(self, x: object) -> bool:
        return x in self.a or x in self.b


def kernel_bytes(graph: Graph, members: Sequence[str]) -> int:
    return AccessTable(graph).kernel_bytes(members)
