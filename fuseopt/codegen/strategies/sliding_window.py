"""A sliding window: a program walks `rows` consecutive rows of a pointwise launch (or of a small
reduction unrolled, `rnumel` points) in order, carrying the loads a row shares with the row before
(`codegen.windows.sliding`, `codegen.windows.sliding_emit`). Candidates: `tile_shapes.window_tilings`."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.options import LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Work


@dataclass(frozen=True)
class SlidingWindow:
    rows: int  # rows a program walks (YBLOCK)
    period: int  # bands of rows never cross a multiple of this many rows
    rnumel: int = 0  # points of a reduction unrolled into each row (0: a pointwise launch)


def applies(loads: int, carried: int, carry_ratio: int) -> bool:
    """Whether at least 1/`carry_ratio` of the values a row needs (loads, points of an unrolled
    reduction) come from the row before, and at least one."""
    return carried > 0 and carry_ratio * carried >= loads


def cost(loads: int, carried: int) -> int:
    """Values a row loads from memory (the others come from the row before)."""
    return loads - carried


def work(s: SlidingWindow, launch: ComputeLaunch, config: LaunchConfig, loops: int) -> Work:
    """A row of the walk a step, one after another."""
    return Work(steps=s.rows)
