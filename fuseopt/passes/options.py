"""The explicit configuration every pass receives (no hidden globals)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCORINGS = ("stable", "inductor")
# The largest max_fusion_size accepted: a fusion costs time linear in the group it absorbs, so
# planning is O(nodes x max_fusion_size); 1024 nodes in one kernel is far past any real kernel.
MAX_FUSION_SIZE_LIMIT = 1024


@dataclass(frozen=True)
class Options:
    scoring: str = "stable"  # stable | inductor
    max_fusion_size: int = 64  # Inductor's config.max_fusion_size
    loop_order: bool = True  # the loop-order unification pass (LOAF)
    peak_memory_factor: int = 32  # reject when shared single-use inputs (elements) > factor x bytes saved
    memory_threshold: int = 10  # bytes of shared data below which a pair is not worth fusing
    pair_window: int = 64  # Inductor's max_fusion_buffer_group_pairwise_attempts
    max_distance: int = 64  # Inductor's are_long_distant_nodes limit (horizontal, inductor mode)
    max_rounds: int = 10
    # Processes planning may use (`packing`: the natural plan in a child at the size cap). The
    # plan is the same for any value, so it is neither compared nor recorded in the plan.
    jobs: int = field(default=1, compare=False)

    def __post_init__(self) -> None:
        if self.scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}")
        if not 1 <= self.max_fusion_size <= MAX_FUSION_SIZE_LIMIT:
            raise ValueError(f"max_fusion_size must be in 1..{MAX_FUSION_SIZE_LIMIT}")
        if self.jobs < 1:
            raise ValueError("jobs must be at least 1")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        del out["jobs"]
        return out
