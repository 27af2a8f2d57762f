"""What a strategy's applicability test returns (`Planned`): the launch reshaped for it, the
variant, its launch and autotune candidates; `tile_shapes.tiling_of` completes it into a Tiling.
What one of its programs does, for the cost model (`Work`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from fuseopt.codegen.options import LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch

S = TypeVar("S", covariant=True)


@dataclass(frozen=True)
class Planned(Generic[S]):
    launch: ComputeLaunch  # with the strategy's axes and placements
    strategy: S
    config: LaunchConfig
    candidates: tuple[LaunchConfig, ...]  # autotune candidates, the default first
    # The launch where thread-block clusters are not available, when `config` uses them.
    fallback: LaunchConfig | None = None


@dataclass(frozen=True)
class Work:
    """A strategy's program as the cost model (`codegen.cost`) weighs it: memory round trips it
    makes one after another (`steps`), kernels launched, and whether its reductions keep a
    whole tile of accumulators (an r loop) in registers. The default: one step, one kernel."""

    steps: int = 1
    kernels: int = 1
    accumulates: bool = False
