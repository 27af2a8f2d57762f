"""The fusion plan: what `fuseopt optimize` decides and prints (docs/format.md "Plans").

Frozen records; `Plan.to_json()` gives the stable machine form (`fuseopt-plan/2`). Field names
here are part of the public output and must not change without a format bump.

`Plan.rejected` holds every candidate node pair the planner refused that ended in two kernels (one
entry per pair, with the reason those final kernels give, as `fuseopt explain` has it), which on a
large graph is thousands of mostly alike entries. The JSON and the text report show them grouped (`kernel_rejections`): one entry per pair of final kernels, with a representative
node pair and the count of each reason, and `rejected_summary` counts them per reason with a few
examples. `fuseopt explain A B` recomputes the reason for any pair, so nothing is lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PLAN_FORMAT = "fuseopt-plan/2"
# Examples of each reason in `rejected_summary` (the first pairs of kernels in name order).
SUMMARY_EXAMPLES = 3


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
class KernelRejection:
    """Every refused node pair between two final kernels, as one entry.

    `pair`, `reason` and `detail` are a representative: the reason refused most often between the
    two kernels (ties: the code's name), and the first node pair (in name order) refused for it.
    `reasons` counts every reason; `pairs` is the number of node pairs.
    """

    kernels: tuple[str, str]
    pair: tuple[str, str]
    reason: str
    detail: str
    pairs: int
    reasons: tuple[tuple[str, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "kernels": list(self.kernels),
            "pair": list(self.pair),
            "reason": self.reason,
            "detail": self.detail,
            "pairs": self.pairs,
            "reasons": dict(self.reasons),
        }


def _by_count(counter: Counter[str]) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))


def kernel_rejections(
    kernels: Sequence[Kernel], rejected: Sequence[Rejection]
) -> tuple[KernelRejection, ...]:
    """`rejected` grouped by the pair of final kernels its nodes are in (kernel order), in the
    order of those kernel pairs; pairs inside one kernel, or naming an unknown node, are left out.
    Depends only on the sets, not on the order of `rejected`."""
    index = {m: i for i, k in enumerate(kernels) for m in k.nodes}
    groups: dict[tuple[int, int], list[Rejection]] = {}
    for r in rejected:
        ia, ib = index.get(r.pair[0]), index.get(r.pair[1])
        if ia is None or ib is None or ia == ib:
            continue
        groups.setdefault((min(ia, ib), max(ia, ib)), []).append(r)
    out = []
    for (ia, ib), rs in sorted(groups.items()):
        counts = Counter(r.reason for r in rs)
        reasons = _by_count(counts)
        top = reasons[0][0]
        first = min((r for r in rs if r.reason == top), key=lambda r: (r.pair, r.detail))
        names = (kernels[ia].name, kernels[ib].name)
        out.append(KernelRejection(names, first.pair, top, first.detail, len(rs), tuple(reasons)))
    return tuple(out)


def rejected_summary(kernels: Sequence[Kernel], rejected: Sequence[Rejection]) -> dict[str, dict[str, Any]]:
    """Per reason (most refused first): the node pairs refused for it, the pairs of kernels with
    it among their reasons, and its first SUMMARY_EXAMPLES node pairs (in kernel-pair, then name
    order) with their kernels and detail. Pairs inside one kernel are left out, as above."""
    index = {m: i for i, k in enumerate(kernels) for m in k.nodes}
    keyed = []
    for r in rejected:
        ia, ib = index.get(r.pair[0]), index.get(r.pair[1])
        if ia is not None and ib is not None and ia != ib:
            keyed.append(((min(ia, ib), max(ia, ib)), r))
    keyed.sort(key=lambda kr: (kr[0], kr[1].pair, kr[1].reason, kr[1].detail))
    out: dict[str, dict[str, Any]] = {}
    for reason, n in _by_count(Counter(r.reason for _, r in keyed)):
        mine = [(k, r) for k, r in keyed if r.reason == reason]
        examples = [
            {
                "kernels": [kernels[k[0]].name, kernels[k[1]].name],
                "pair": list(r.pair),
                "detail": r.detail,
            }
            for k, r in mine[:SUMMARY_EXAMPLES]
        ]
        out[reason] = {"pairs": n, "kernel_pairs": len({k for k, _ in mine}), "examples": examples}
    return out


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

    def kernel_rejections(self) -> tuple[KernelRejection, ...]:
        return kernel_rejections(self.kernels, self.rejected)

    def to_json(self) -> dict[str, Any]:
        grouped = self.kernel_rejections()
        return {
            "format": PLAN_FORMAT,
            "graph": self.graph,
            "graph_sha256": self.graph_sha256,
            "options": dict(self.options),
            "kernels": [k.to_json() for k in self.kernels],
            "reorders": [r.to_json() for r in self.reorders],
            "decisions": [d.to_json() for d in self.decisions],
            "rejected": [g.to_json() for g in grouped],
            "rejected_summary": rejected_summary(self.kernels, self.rejected),
            "metrics": dict(self.metrics),
        }
