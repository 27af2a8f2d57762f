"""What a strategy's applicability test returns (`Planned`): the launch reshaped for it, the
variant, its launch and autotune candidates; `tile_shapes.tiling_of` completes it into a Tiling."""

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
