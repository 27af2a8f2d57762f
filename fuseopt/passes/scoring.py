"""Fusion scores: Inductor's `score_fusion` reproduced, and fuseopt's order-independent `stable` score.

Both return a `Score` whose `key()` sorts candidates (higher first) and whose `to_json()` names
each term, so that a divergence can say which term flipped ("proximity -2 vs -1").

inductor: (template, node_type, memory, buffer_overlap, proximity) compared as in Inductor's
  FusionScore.__lt__: template first; if one memory score is more than 16x the other, memory alone
  decides; else the tuple. proximity = -max(|n1.min_order - n2.max_order|, |n2.min_order -
  n1.max_order|), from the node-list order -- the root of the JIT/AOT divergence.
stable: (template, bytes_saved, node_type, -level_distance), then the pair's node names. bytes_saved
  is the exact drop in num_bytes_accessed if the pair became one kernel; level_distance is the
  difference of the groups' depths in the dependency DAG. Nothing depends on list order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from fuseopt.passes.fusion_state import FusionState, Group

INDUCTOR_TERMS = ("template", "node_type", "memory", "buffer_overlap", "proximity")
STABLE_TERMS = ("template", "bytes_saved", "node_type", "closeness")


@dataclass(frozen=True, slots=True)
class Score:
    mode: str
    terms: tuple[int, ...]
    tiebreak: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        names = INDUCTOR_TERMS if self.mode == "inductor" else STABLE_TERMS
        return dict(zip(names, self.terms, strict=True))


def _template_score(g1: Group, g2: Group, memory: int) -> int:
    if g2.kind == "template":
        return 0
    # config.epilogue_fusion_first is False in Inductor: (is_template == False) and memory > 0.
    return 1 + int((g1.kind == "template") is False and memory > 0)


def inductor_score(state: FusionState, g1: Group, g2: Group, memory: int) -> Score:
    node_type = int(g1.is_reduction == g2.is_reduction and memory > 0)
    proximity = -max(abs(g1.min_order - g2.max_order), abs(g2.min_order - g1.max_order))
    # buffer_overlap is 0 under Inductor's defaults (min_overlap_ratio = 1.1 disables it).
    return Score("inductor", (_template_score(g1, g2, memory), node_type, memory, 0, proximity))


def _inductor_lt(a: Score, b: Score) -> bool:
    ta, na, ma, oa, pa = a.terms
    tb, nb, mb, ob, pb = b.terms
    if ta != tb:
        return ta < tb
    if max(ma, mb) > min(ma, mb) * 16:
        return ma < mb
    return (na, ma, oa, pa) < (nb, mb, ob, pb)


def inductor_sort(items: list[tuple[Score, Any]]) -> list[tuple[Score, Any]]:
    """Descending by FusionScore, stable (ties keep discovery order), as list.sort(reverse=True)."""

    def cmp(x: tuple[Score, Any], y: tuple[Score, Any]) -> int:
        if _inductor_lt(x[0], y[0]):
            return -1
        if _inductor_lt(y[0], x[0]):
            return 1
        return 0

    # list.sort(reverse=True) keeps equal items in their original order.
    return sorted(items, key=functools.cmp_to_key(cmp), reverse=True)


def stable_score(state: FusionState, g1: Group, g2: Group, memory: int, levels: dict[str, int]) -> Score:
    """The pair's score. It depends on `memory` only through memory > 0, which every legal pair
    has: the fusion loop scores a pair whose loop transformation it has yet to find as if shared."""
    return Score("stable", *stable_terms(state, g1, g2, memory, levels))


def stable_terms(
    state: FusionState, g1: Group, g2: Group, memory: int, levels: dict[str, int]
) -> tuple[tuple[int, int, int, int], tuple[str, str]]:
    """`stable_score`'s terms and tie-break names (the queue keeps these, not a Score)."""
    summaries = (state.summary(g1), state.summary(g2))
    saved = state.access.saved_bytes(g1.members, g2.members, summaries, (g1.member_set, g2.member_set))
    node_type = int(g1.is_reduction == g2.is_reduction and memory > 0)
    lo1, hi1 = state.level_range(g1, levels)
    lo2, hi2 = state.level_range(g2, levels)
    closeness = -max(abs(lo1 - hi2), abs(lo2 - hi1))
    a, b = state.label(g1), state.label(g2)
    return (_template_score(g1, g2, memory), saved, node_type, closeness), ((a, b) if a < b else (b, a))


def stable_sort(items: list[tuple[Score, Any]]) -> list[tuple[Score, Any]]:
    """Descending by terms; ties broken by node names ascending (content, not position)."""
    return sorted(items, key=lambda it: (tuple(-t for t in it[0].terms), it[0].tiebreak))
