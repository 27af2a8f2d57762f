"""Locating plan-level findings in the graph file: a node name -> its JSON pointer -> line:column.

Validation diagnostics carry their own line:column; a finding about a plan (a divergent decision,
a kernel that split) points at the `name` of the node it is about (`/nodes/3/name`), found with
`fuseopt.io.locate` in the file's text. Anything that cannot be located points at 1:1.
"""

from __future__ import annotations

from fuseopt.ci.model import Finding
from fuseopt.io.load import is_yaml_text
from fuseopt.io.locate import Positions
from fuseopt.ir.graph import Graph


class Locator:
    """Positions in one graph file (`text` as read; `graph` as loaded from it, nodes in file order)."""

    def __init__(self, file: str, text: str | None, graph: Graph | None = None):
        self.file = file
        self.text = text
        self._yaml = text is not None and is_yaml_text(text, file)
        # One parse of the text for all lookups (one each made finding N nodes quadratic).
        self._positions = Positions(text, self._yaml) if text is not None else None
        self._nodes = {n.name: i for i, n in enumerate(graph.nodes)} if graph is not None else {}
        self._cache: dict[str, tuple[int, int]] = {}

    def at(self, pointer: str) -> tuple[int, int]:
        """1-based (line, column) of the value at `pointer` (its nearest present ancestor), or 1:1."""
        if self._positions is None:
            return 1, 1
        if pointer not in self._cache:
            pos = self._positions.at(pointer)
            self._cache[pointer] = pos if pos is not None else (1, 1)
        return self._cache[pointer]

    def node_pointer(self, name: str | None) -> str:
        if name is None or name not in self._nodes:
            return ""
        return f"/nodes/{self._nodes[name]}/name"

    def finding(
        self,
        rule: str,
        level: str,
        message: str,
        *,
        node: str | None = None,
        pointer: str = "",
        detail: str = "",
    ) -> Finding:
        """A finding in this file at `pointer`, or at node `node`'s name, or at the top."""
        ptr = pointer or self.node_pointer(node)
        line, col = self.at(ptr) if ptr else (1, 1)
        return Finding(rule, level, message, self.file, ptr, line, col, detail)
