"""The fusion plan: what `fuseopt optimize` decides and prints (docs/format.md "Plans").

Frozen records; `Plan.to_json()` gives the stable machine form (`fuseopt-plan/1`). Field names
here are part of the public output and must not change without a format bump.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PLAN_FORMAT = "fuseopt-plan/1"


@dataclass(frozen=True)
class Kernel:
    """One generated kernel: graph nodes in program order, and its iteration space."""

    name: str
    nodes: tuple[str, ...]
    kind: str  # pointwise | reduction | extern | template
    loops: tuple[tuple[str, int], ...]
    reduce: tuple[tuple[str, int], ...]
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodes": list(self.nodes),
            "kind": self.kind,
            "loops": [[v, n] for v, n in self.loops],
            "reduce": [[v, n] for v, n in self.reduce],
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class Reorder:
    """A loop transformation applied to one node by the loop-order pass.

    `order` is the permutation of the node's original loops (new position -> old position).
    `kind` is reorder | merge | reindex | invert; `detail` says what changed, for people.
    """

    node: str
    order: tuple[int, ...]
    kind: str = "reorder"
    detail: str = ""
    loops: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": self.node, "order": list(self.order), "kind": self.kind}
        if self.detail:
            out["detail"] = self.detail
        if self.loops:
            out["loops"] = [[v, n] for v, n in self.loops]
        return out


@dataclass(frozen=True)
class Decision:
    """One applied fusion, in the order it was applied."""

    step: int
    pair: tuple[str, str]
    action: str  # fuse
    score: Mapping[str, Any] = field(default_factory=dict)
    round: int = 0
    kind: str = ""  # vertical | horizontal | reduction-inner | reduction-epilogue | template-epilogue

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "pair": list(self.pair),
            "action": self.action,
            "score": dict(self.score),
            "round": self.round,
        }
        if self.kind:
            out["kind"] = self.kind
        return out


@dataclass(frozen=True)
class Rejection:
    """A candidate pair that was not fused, with a reason code (README lists them) and a detail."""

    pair: tuple[str, str]
    reason: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"pair": list(self.pair), "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class Plan:
    graph: str
    graph_sha256: str
    kernels: tuple[Kernel, ...]
    reorders: tuple[Reorder, ...] = ()
    decisions: tuple[Decision, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    metrics: Mapping[str, int] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def kernel_of(self, node: str) -> Kernel:
        for k in self.kernels:
            if node in k.nodes:
                return k
        raise KeyError(node)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "graph": self.graph,
            "graph_sha256": self.graph_sha256,
            "options": dict(self.options),
            "kernels": [k.to_json() for k in self.kernels],
            "reorders": [r.to_json() for r in self.reorders],
            "decisions": [d.to_json() for d in self.decisions],
            "rejected": [r.to_json() for r in self.rejected],
            "metrics": dict(self.metrics),
        }
