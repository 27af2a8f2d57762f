"""Iteration-space helpers shared by the planner and code generation."""

from __future__ import annotations

from collections.abc import Sequence


def split_loops(sizes: Sequence[int], numel: int) -> int | None:
    """The position p such that prod(sizes[:p]) == numel (x part) -- the rest is the r part.

    A pointwise node with numel*rnumel points runs inside a reduction kernel only when its loops
    split this way (Inductor's `SIMDKernel.is_compatible`). Size-1 loops may sit on either side;
    the first valid split is returned. None if no prefix has that product.
    """
    acc = 1
    if numel == 1:
        return 0
    for p, s in enumerate(sizes):
        acc *= s
        if acc == numel:
            return p + 1
        if acc > numel:
            return None
    return None
