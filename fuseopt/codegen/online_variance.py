"""Online variance: `sum((F - m) * (F - m))` where `m = sum(F / n)` (the mean of the same looped
kernel's row, n its length) is computed in the r loop of the mean, by Welford's updates, instead
of a loop after it, so the kernel reads F's data once less (a BatchNorm's statistics in training,
a GroupNorm's, a `var_mean` of rows too long to hold: one pass instead of two).

Each lane keeps a count, a mean and a sum of squared deviations of the points it has seen
(`mean += (v - mean) / count`, `m2 += (v - old mean) * (v - mean)`); at the end the lanes
combine by Chan's formula (`_welford_combine`) into the row's sum of squared deviations, the
variance's sum: the reference's value up to rounding, as Inductor's Welford reduction is, and
NaN where a row holds NaN or an infinity, as the two passes give. The mean itself is summed as
before, in the same loop (Welford's own mean would be NaN, not the reference's infinity, for a
row holding one infinity).
"""

from __future__ import annotations

from collections.abc import Mapping

from fuseopt.codegen.online_softmax import same_row
from fuseopt.codegen.schedule import Placement
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, Load, Reduce


def variance_operand(p: Placement, produced: Mapping[str, Placement]) -> tuple[Expr, str] | None:
    """(F, the mean's node) when `p` is `sum((F - m[row]) * (F - m[row]))` in float32 and
    `m[row]` is the result of a `sum(F / n)` reduction of this kernel over the same loops (its
    loop variables renamed to p's), n the number of points it reduces. None otherwise."""
    red = p.node.value
    if p.role != "reduction" or not isinstance(red, Reduce) or red.op != "sum":
        return None
    sq = red.x
    if not (isinstance(sq, Binary) and sq.op == "mul" and sq.a == sq.b):
        return None
    d = sq.a
    if not (isinstance(d, Binary) and d.op == "sub" and isinstance(d.b, Load) and d.b.buffer in produced):
        return None
    f, m = d.a, d.b
    src = produced[m.buffer]
    other = src.node
    mean = other.value
    if src.role != "reduction" or not isinstance(mean, Reduce) or mean.op != "sum":
        return None
    if not (isinstance(mean.x, Binary) and mean.x.op == "truediv" and isinstance(mean.x.b, Const)):
        return None
    rename = same_row(p.node, other)
    if rename is None or mean.x.b.value != p.node.rnumel:
        return None
    if rename(mean.x.a) != f or rename(other.store.index) != m.index:
        return None
    if not all(t == DType.float32 for t in (f.dtype, m.dtype, red.dtype, mean.dtype, sq.dtype)):
        return None
    return f, other.name
