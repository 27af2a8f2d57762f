"""A launch's flat x axis cut into rows (y) of `s` points (x), and the digits of the flat index
that say where it can be cut: shared by the row split, the transposed tile, the unrolled
reduction and the windows."""

from __future__ import annotations

import math

from fuseopt.codegen.indexing import Digit, digit_of
from fuseopt.codegen.schedule import Axis, ComputeLaunch, Placement, Segment, digits_of, pointwise_segments
from fuseopt.ir.expr import walk


def rows(launch: ComputeLaunch, s: int) -> ComputeLaunch:
    """A launch's flat x axis as rows (y) of `s` points (x): a transposed access's contiguous run,
    a pooling window's row arithmetic (`x // 6720 % 35` once per row, see `digit_split`), a
    sliding window's rows. A small reduction to unroll keeps its loops as an r0_ segment."""
    numel = launch.axes[0].numel
    y, x = Axis("y", numel // s), Axis("x", s)
    return launch.with_axes((y, x), tuple(placed(p, y, x) for p in launch.placements))


def placed(p: Placement, outer: Axis, inner: Axis | None) -> Placement:
    segs = pointwise_segments(p.node, outer, inner)
    if p.role == "reduction":
        segs = (*segs, Segment(("r0_",), p.node.reduce))
    return Placement(p.node, p.role, segs)


def flat_digits(launch: ComputeLaunch, numel: int, rnumel: int) -> set[Digit]:
    """The digits `(x // div) % mod` of the flat index that a 1D launch's indices and values use."""
    sizes = {"x": numel, "r0_": rnumel}
    out: set[Digit] = set()
    for p in launch.placements:
        digits = digits_of(p, sizes)
        for root in (p.node.store.index, p.node.value):
            for e in walk(root):
                d = digit_of(e, digits)
                if d is not None and d.base == "xindex":
                    out.add(d)
    return out


def digit_split(launch: ComputeLaunch, numel: int, rnumel: int, min_points: int) -> int | None:
    """Where to split the flat x index of an unrolled reduction into (y, x) so that all its `//`
    and `%` arithmetic (the window's bounds checks: `x // 6720 % 35` for a channels-last image row)
    runs on the [YBLOCK, 1] column of row indices, once per row, instead of once per element.

    The split s is the gcd of every divisor applied to the flat index: each `x // d` digit is then
    a digit of the row index alone (`y // (d / s)`); a bare `x % m` needs m | s (it falls on x).
    Only when the x tile keeps at least `min_points` points (a channels-last image: s = channels)."""
    flat = flat_digits(launch, numel, rnumel)
    divs = {d.div for d in flat if d.div > 1}
    mods = {d.mod for d in flat if d.div == 1 and d.mod is not None}
    if not divs:
        return None
    s = 0
    for div in sorted(divs):
        s = math.gcd(s, div)
    if s & -s < min_points or s >= numel or numel % s or any(s % m for m in mods):
        return None
    return s
