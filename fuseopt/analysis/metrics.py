"""Bytes moved, by Inductor's `num_bytes_accessed` definition.

For each kernel, for each buffer it reads from outside or writes for use outside (a graph output or
a buffer another kernel reads): itemsize * min(accesses, buffer numel), where accesses sums the
points of the member nodes that touch the buffer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, Node


class _HasGraphUsers(Protocol):
    graph: Graph
    users: dict[str, list[str]]


def node_points(n: Node, graph: Graph, buffer: str | None = None) -> int:
    if isinstance(n, ComputeNode):
        return n.numel * n.rnumel
    assert isinstance(n, LibraryNode)
    return graph.buffer(buffer).numel if buffer is not None else 0


def kernel_bytes(graph: Graph, users: dict[str, list[str]], members: Sequence[str]) -> int:
    inside = set(members)
    reads: dict[str, int] = {}
    writes: dict[str, int] = {}
    for name in members:
        n = graph.node(name)
        for out in n.outputs:
            if graph.buffer(out).role == "output" or any(u not in inside for u in users.get(out, ())):
                w = n.numel if isinstance(n, ComputeNode) else graph.buffer(out).numel
                writes[out] = writes.get(out, 0) + w
        for b in n.read_buffers():
            reads[b] = reads.get(b, 0) + node_points(n, graph, b)
    written_inside = {o for name in members for o in graph.node(name).outputs}
    total = 0
    for b, acc in writes.items():
        buf = graph.buffer(b)
        total += buf.dtype.itemsize * min(acc, buf.numel)
    for b, acc in reads.items():
        if b in written_inside:
            continue
        buf = graph.buffer(b)
        total += buf.dtype.itemsize * min(acc, buf.numel)
    return total


def group_bytes(state: _HasGraphUsers, members: Iterable[str]) -> int:
    return kernel_bytes(state.graph, state.users, list(members))


def buffer_users(graph: Graph) -> dict[str, list[str]]:
    users: dict[str, list[str]] = {}
    for n in graph.nodes:
        for b in n.read_buffers():
            users.setdefault(b, []).append(n.name)
    return users


def unfused_metrics(graph: Graph) -> tuple[int, int]:
    users = buffer_users(graph)
    return len(graph.nodes), sum(kernel_bytes(graph, users, [n.name]) for n in graph.nodes)
