"""Why two final kernels stay apart: the legality check asked about the kernels as planned.

Both the plan's `rejected` list (`fusion.fuse`) and `fuseopt explain` take their reason from here,
so the two always agree, and neither depends on the order in which the search met a pair (a
verdict recorded mid-search saw groups, and loop transformations, that the final plan may not have).
"""

from __future__ import annotations

from fuseopt.passes.fusion_state import FusionState, Group
from fuseopt.passes.legality import check_fusion
from fuseopt.passes.options import Options

NOT_CANDIDATES = ("not_candidates", "they share no buffer, so they were never a candidate pair")
NOT_CHOSEN = ("not_chosen", "legal now, but each was fused elsewhere first in an earlier round")


def final_reason(state: FusionState, ga: Group, gb: Group, opts: Options) -> tuple[str, str]:
    """(reason, detail) for two distinct final groups: the first failing legality condition, or,
    where the pair is legal as planned, why the search did not take it."""
    v = check_fusion(state, ga, gb, opts)
    if not v.ok:
        return v.reason, v.detail
    shared = set(ga.buffer_names()) & set(gb.buffer_names())
    return NOT_CHOSEN if shared else NOT_CANDIDATES
