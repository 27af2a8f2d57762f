"""Small, validity-preserving graph rewrites shared by finalize, determinism and reduce.

Every function returns a new frozen `Graph`; none mutates its input. Renaming a buffer rewrites
every load and store of it; the caller keeps names valid (see `fresh_name`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from fuseopt.ir.expr import KEYWORDS, Expr, Load, transform
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, Node

MAX_NAME = 64


def fresh_name(base: str, suffix: str, taken: Iterable[str]) -> str:
    """`base + suffix`, shortened to the 64-character name limit and numbered on a collision."""
    used = set(taken)
    n = 1
    while True:
        tail = suffix if n == 1 else f"{suffix}{n}"
        name = base[: MAX_NAME - len(tail)] + tail
        if name not in used and name not in KEYWORDS:
            return name
        n += 1


def loop_var_names(graph: Graph) -> set[str]:
    return {lv.name for n in graph.nodes if isinstance(n, ComputeNode) for lv in (*n.loops, *n.reduce)}


def _rename_loads(e: Expr, mapping: Mapping[str, str]) -> Expr:
    def fn(n: Expr) -> Expr | None:
        if isinstance(n, Load) and n.buffer in mapping:
            return dataclasses.replace(n, buffer=mapping[n.buffer])
        return None

    return transform(e, fn)


def rename_node_buffers(node: Node, mapping: Mapping[str, str]) -> Node:
    """The node with every buffer named in `mapping` renamed (reads and writes)."""
    if not mapping:
        return node
    if isinstance(node, LibraryNode):
        return node.renamed(mapping)
    store = _rename_loads(node.store, mapping)
    assert isinstance(store, Load)
    return dataclasses.replace(node, store=store, value=_rename_loads(node.value, mapping))


def rename_buffers(graph: Graph, mapping: Mapping[str, str]) -> Graph:
    """Rename buffers (keeping their positions) and every access to them."""
    buffers = tuple(dataclasses.replace(b, name=mapping.get(b.name, b.name)) for b in graph.buffers)
    nodes = tuple(rename_node_buffers(n, mapping) for n in graph.nodes)
    return graph.replace(buffers=buffers, nodes=nodes)


def latest_position(graph: Graph, index: int) -> int:
    """The last position node `index` can move to while every reader still comes after its writer."""
    outs = set(graph.nodes[index].outputs)
    for j in range(index + 1, len(graph.nodes)):
        if outs.intersection(graph.nodes[j].read_buffers()):
            return j - 1
    return len(graph.nodes) - 1


def move_node(nodes: tuple[Node, ...], index: int, to: int) -> tuple[Node, ...]:
    rest = list(nodes[:index] + nodes[index + 1 :])
    rest.insert(to, nodes[index])
    return tuple(rest)


def keep_nodes(graph: Graph, keep: Iterable[str]) -> Graph:
    """The subgraph of the kept nodes, still a valid graph file.

    Buffers a kept node reads but no kept node writes become inputs; buffers nobody touches any
    more are dropped; an intermediate that lost all its readers becomes an output (it fed something
    that was removed), and if no output is left, every buffer no kept node reads becomes one.
    """
    kept = set(keep)
    nodes = tuple(n for n in graph.nodes if n.name in kept)
    written = {o for n in nodes for o in n.outputs}
    read = {b for n in nodes for b in n.read_buffers()}
    read_before = {b for n in graph.nodes for b in n.read_buffers()}
    buffers = []
    for b in graph.buffers:
        if b.name not in written and b.name not in read:
            continue
        role = b.role
        if b.name not in written:
            role = "input"
        elif role == "intermediate" and b.name in read_before and b.name not in read:
            role = "output"
        buffers.append(dataclasses.replace(b, role=role) if role != b.role else b)
    if nodes and not any(b.role == "output" for b in buffers):
        buffers = [
            dataclasses.replace(b, role="output") if b.name in written and b.name not in read else b
            for b in buffers
        ]
    return graph.replace(buffers=tuple(buffers), nodes=nodes)
