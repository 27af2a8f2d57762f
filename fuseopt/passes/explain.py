"""Why are two nodes (not) in one kernel? The legality check asked about the final kernels.

`explain(stage, a, b, opts)` returns an `Explanation`: whether they share a kernel (and the
decisions that put them there), or the first failing condition with its concrete values and, where
one exists, a change that would make them fuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuseopt.errors import Diagnostic, InputError
from fuseopt.passes.final_verdict import final_reason
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import Stage
from fuseopt.plan import Decision


@dataclass(frozen=True)
class Explanation:
    a: str
    b: str
    fused: bool
    kernel_a: str
    kernel_b: str
    reason: str = ""
    detail: str = ""
    suggestion: str = ""
    decisions: tuple[Decision, ...] = ()
    reorders: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "pair": [self.a, self.b],
            "fused": self.fused,
            "kernels": [self.kernel_a, self.kernel_b],
            "reason": self.reason,
            "detail": self.detail,
            "suggestion": self.suggestion,
            "decisions": [d.to_json() for d in self.decisions],
            "reorders": list(self.reorders),
        }


def _suggest(reason: str, detail: str, opts: Options, size: int) -> str:
    table = {
        "index_mismatch": (
            "run with the loop-order pass (drop --no-loop-order), or store the buffer in the order "
            "its reader indexes it"
            if not opts.loop_order
            else "store the buffer in the order its reader indexes it (same strides on both sides)"
        ),
        "too_large": f"raise --max-fusion-size to at least {size}",
        "extern": "extern calls never fuse; a template fuses a pointwise epilogue when it has epilogue_fusion: true",
        "peak_memory": "the fusion would keep single-use inputs alive; this guard is a heuristic (peak_memory_factor)",
        "would_create_cycle": "fuse the node on the path into one of the two kernels first, or split the path",
        "no_shared_data": "they share no data worth fusing for: fusing would not save memory traffic",
        "too_far": "inductor scoring refuses horizontal fusion of nodes far apart in the list; stable scoring does not",
        "size_mismatch": "the iteration spaces differ; a reshape (reindexing) that makes them equal would allow it",
        "reduction_mismatch": "reductions fuse only with equal (numel, rnumel)",
    }
    return table.get(reason, "")


def explain(stage: Stage, a: str, b: str, opts: Options) -> Explanation:
    graph = stage.graph
    missing = [n for n in (a, b) if not graph.has_node(n)]
    if missing:
        raise InputError(
            [Diagnostic(f"no node named {n!r} in graph {graph.name}", "", code="name") for n in missing]
        )
    plan = stage.plan
    ka, kb = plan.kernel_of(a), plan.kernel_of(b)
    reorders = tuple(
        f"{r.node}: {r.kind} {list(r.order)} {r.detail}".strip() for r in plan.reorders if r.node in (a, b)
    )
    if ka.name == kb.name:
        members = set(ka.nodes)
        chain = tuple(d for d in plan.decisions if d.pair[0] in members or d.pair[1] in members)
        return Explanation(a, b, True, ka.name, kb.name, decisions=chain, reorders=reorders)
    assert stage.fusion is not None
    state = stage.fusion.state
    ga, gb = state.group(a), state.group(b)
    reason, detail = final_reason(state, ga, gb, opts)
    size = len(ga.members) + len(gb.members)
    suggestion = _suggest(reason, detail, opts, size)  # none for not_chosen or not_candidates
    return Explanation(a, b, False, ka.name, kb.name, reason, detail, suggestion, reorders=reorders)
