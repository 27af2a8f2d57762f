"""Which L2 eviction hint a load carries (Triton's `eviction_policy`): the first rule that holds.

- A transposed 2D tile's loads: `evict_last` (Inductor's choice for them; faster on apbt,
  commit 0c70975).
- A load that reads each element at several points of its node (its index leaves out a loop
  variable the kernel runs: a bias, a norm's weight, a row's statistic), in any kernel:
  `evict_last`, so that the output and input streams do not push it out of the L2 between the
  programs that read it (Inductor's `is_broadcasted` rule).
- In an r loop, a buffer that a later r loop of the kernel reads again: `evict_last`, so that
  the second read finds the row in the L2 (Inductor's choice for a looped softmax's first pass).
- In an r loop, a load that reads the same elements for every row of the tile (a norm's
  weight): `evict_last`, since every program reads them.
- In the last r loop that reads a buffer an earlier loop read, where the launch's programs
  outnumber those the multiprocessors keep at once (`LoopedRow.waves`): `evict_first`: the row
  is done with, and its lines make room for the rows later programs read again (Inductor marks
  a buffer's last load so, in one wave too; there no later program needs the room, and H100
  measured a 512 x 50257 log_softmax 108.6 us with the hint, 102.2 without:
  benchmarks/results/eviction-2026-12-06-h100.json).
- A streaming kernel's loads (`ReductionEmitter.streaming`: a reduction that writes only its
  results and reads each input once), touching a distinct element at every point of the tile:
  `evict_first`, so that what the L2 holds stays: faster for every such kernel tried, slower for
  every kernel that also writes a point's output (explore rounds 29-30, benchmarks/results/
  README.md, History).
- Anything else: no hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from fuseopt.ir.expr import Expr, Load, free_vars, walk

Hint = Literal["evict_first", "evict_last"]


def reads_again(index: Expr, sizes: Mapping[str, int], run: Mapping[str, object]) -> bool:
    """Whether a direct load reads each element at several points of its node: its index leaves
    out a loop variable of `sizes` (the node's) that the kernel runs (`run[v]` not None)."""
    if any(isinstance(n, Load) for n in walk(index)):
        return False
    used = free_vars(index)
    return any(n > 1 and v not in used and run.get(v) is not None for v, n in sizes.items())


def eviction_hint(
    *,
    tile_2d: bool,
    reused: bool,
    looped: bool,
    reread: bool,
    broadcast: bool,
    read_before: bool,
    streams: bool,
) -> Hint | None:
    if tile_2d or reused:
        return "evict_last"
    if looped and (reread or broadcast):
        return "evict_last"
    if looped and read_before:
        return "evict_first"
    if streams:
        return "evict_first"
    return None
