"""Template finalization between AOT compilation's two scheduler passes (docs/inductor.md, "JIT vs AOT").

Finalizing a template keeps only its best choice (docs/format.md: smallest time_us, ties smallest name);
the node stays a template with that one choice, so fusion legality does not change and any
difference between the passes comes from where the node and its buffer sit, not from what they are.

Modes:
  in-place  Inductor after the fix: position and name are kept.
  append    Inductor before the fix (`finalize_multi_template_buffers` replaced the buffer by the
            chosen kernel's new buffer, appended to `V.graph.buffers`): the buffer moves to the end
            of the buffer list, the node to the latest position program order allows (the end,
            unless a later node reads its output: then just before the first reader), and both get
            a new name, `<old>_final` (numbered on a collision, cut to the 64-character limit),
            standing in for the fresh `bufN`/`opN` Inductor gave them. `Finalized.node_renames`
            and `buffer_renames` map old -> new so that plans of the two passes can be compared.
Templates are finalized in program order, so several appended templates keep their relative order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fuseopt.aot.graphedit import fresh_name, latest_position, loop_var_names, move_node, rename_buffers
from fuseopt.ir.graph import Graph, LibraryNode

FINALIZE_MODES = ("append", "in-place")
FINAL_SUFFIX = "_final"


def _frozen(d: dict[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Finalized:
    """The graph pass 2 sees, and how its names relate to pass 1's."""

    graph: Graph
    mode: str
    templates: tuple[str, ...]  # pass-1 names of the finalized template nodes, in program order
    choices: Mapping[str, str] = field(default_factory=lambda: _frozen({}))  # node -> chosen choice
    node_renames: Mapping[str, str] = field(default_factory=lambda: _frozen({}))  # old -> new
    buffer_renames: Mapping[str, str] = field(default_factory=lambda: _frozen({}))  # old -> new

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "templates": list(self.templates),
            "choices": dict(self.choices),
            "node_renames": dict(self.node_renames),
            "buffer_renames": dict(self.buffer_renames),
        }


def finalize_templates(graph: Graph, mode: str) -> Finalized:
    """Finalize every template node of `graph` (see the module doc for the two modes)."""
    if mode not in FINALIZE_MODES:
        raise ValueError(f"finalize mode must be one of {FINALIZE_MODES}")
    templates = [n for n in graph.nodes if isinstance(n, LibraryNode) and n.kind == "template"]
    choices: dict[str, str] = {}
    nodes = list(graph.nodes)
    for i, n in enumerate(nodes):
        if isinstance(n, LibraryNode) and n.kind == "template":
            best = n.best_choice()
            assert best is not None  # the format requires at least one choice
            choices[n.name] = best[0]
            nodes[i] = dataclasses.replace(n, choices=(best,))
    current = graph.replace(nodes=tuple(nodes))
    if mode == "in-place":
        return Finalized(current, mode, tuple(t.name for t in templates), _frozen(choices))

    node_renames: dict[str, str] = {}
    buffer_renames: dict[str, str] = {}
    taken_buffers = {b.name for b in graph.buffers} | loop_var_names(graph)
    taken_nodes = {n.name for n in graph.nodes}
    for t in templates:
        new_buf = fresh_name(t.output, FINAL_SUFFIX, taken_buffers)
        new_node = fresh_name(t.name, FINAL_SUFFIX, taken_nodes)
        taken_buffers.add(new_buf)
        taken_nodes.add(new_node)
        buffer_renames[t.output] = new_buf
        node_renames[t.name] = new_node
        current = rename_buffers(current, {t.output: new_buf})
        # The replacement buffer is appended to the buffer list ...
        buffers = [b for b in current.buffers if b.name != new_buf]
        buffers.append(current.buffer(new_buf))
        # ... and its operation to the operation list, as far as program order allows.
        index = next(i for i, n in enumerate(current.nodes) if n.name == t.name)
        node = current.nodes[index]
        assert isinstance(node, LibraryNode)
        renamed = list(current.nodes)
        renamed[index] = dataclasses.replace(node, name=new_node)
        moved = move_node(tuple(renamed), index, latest_position(current, index))
        current = current.replace(buffers=tuple(buffers), nodes=moved)
    return Finalized(
        current,
        mode,
        tuple(t.name for t in templates),
        _frozen(choices),
        _frozen(node_renames),
        _frozen(buffer_renames),
    )
