"""Online variance: `sum((F - m) * (F - m))` where `m` is the mean of F over the same looped
kernel's row (`sum(F / n)`, or `sum(F)` divided by n, its length) is computed in the r loop of
that sum, by Welford's updates, instead of a loop after it, so the kernel reads F's data once
less (a BatchNorm's statistics in training, a GroupNorm's, a `var_mean` of rows too long to
hold, a layer norm of long rows: one pass instead of two).

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
    """(F, the mean's node) when `p` is `sum((F - m) * (F - m))` in float32 and `m` is the mean
    of F over this kernel's row: `mean[row]` where a reduction of this kernel over the same loops
    (its loop variables renamed to p's) stores `sum(F / n)`, or `total[row] / n` where one stores
    `sum(F)`, n the number of points it reduces. None otherwise."""
    red = p.node.value
    if p.role != "reduction" or not isinstance(red, Reduce) or red.op != "sum":
        return None
    sq = red.x
    if not (isinstance(sq, Binary) and sq.op == "mul" and sq.a == sq.b):
        return None
    d = sq.a
    if not (isinstance(d, Binary) and d.op == "sub"):
        return None
    f, m = d.a, d.b
    total = _divided(m)  # `total[row] / n`, else `mean[row]`
    load = total[0] if total is not None else m
    if not isinstance(load, Load) or load.buffer not in produced:
        return None
    src = produced[load.buffer]
    other = src.node
    mean = other.value
    if src.role != "reduction" or not isinstance(mean, Reduce) or mean.op != "sum":
        return None
    summed = (mean.x, total[1]) if total is not None else _divided(mean.x)  # sum(F), else sum(F / n)
    rename = same_row(p.node, other)
    if rename is None or summed is None or summed[1] != p.node.rnumel:
        return None
    operand = summed[0]
    if rename(operand) != f or rename(other.store.index) != load.index:
        return None
    if not all(t == DType.float32 for t in (f.dtype, m.dtype, load.dtype, red.dtype, mean.dtype, sq.dtype)):
        return None
    return f, other.name


def _divided(e: Expr) -> tuple[Expr, int | float] | None:
    """(a, n) where `e` is `a / n`, n a literal; None otherwise."""
    if isinstance(e, Binary) and e.op == "truediv" and isinstance(e.b, Const):
        return e.a, e.b.value
    return None


def is_variance_sum(red: Expr) -> bool:
    """Whether an online sum (`loop_phases.online_sums`) is a variance's, of a square, not a
    softmax's: it keeps three accumulators a lane (Welford's count, mean and squared deviations)."""
    return isinstance(red, Reduce) and isinstance(red.x, Binary) and red.x.op == "mul"
