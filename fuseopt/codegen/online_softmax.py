"""Online softmax: `sum(exp(F - m))` where `m = max(F)` is a reduction of the same looped kernel,
computed in the r loop of the max instead of a loop after it, so the kernel reads F's data once
less (Milakov and Gimelshein, "Online normalizer calculation for softmax", 2018).

Each step takes the maximum of its block of the row, and the row's running maximum `mx` rises to
it; the lanes keep sums of `exp(F - mx)`, rescaled by `exp(old - new)` (one exponential a row and
step) when `mx` rises. At the end `mx` is `m` and the row's sum is the lanes' sum: one
exponential a point, as the second loop it replaces. The guards keep the reference's values at
the edges: while `mx` is -inf a lane adds 0 (not exp(-inf + inf), NaN) and a maximum that did not
move scales by exactly 1; NaN propagates through the maximum as through `max`; +inf gives NaN
where the reference's exp(inf - inf) does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from fuseopt.codegen.schedule import Placement
from fuseopt.ir.dtypes import DType, compute_dtype
from fuseopt.ir.expr import Binary, Expr, Load, Reduce, Unary, Var, transform
from fuseopt.ir.graph import ComputeNode


def online_operand(p: Placement, produced: Mapping[str, Placement]) -> tuple[Expr, str] | None:
    """(F, the max's node) when `p` is `sum(exp(F - m[row]))` and `m[row]` is the result of a
    `max(F)` reduction of this kernel over the same loops (its loop variables renamed to p's):
    then `p` needs nothing of the max but its own running maximum. None otherwise."""
    red = p.node.value
    if p.role != "reduction" or not isinstance(red, Reduce) or red.op != "sum":
        return None
    e = red.x
    if not (isinstance(e, Unary) and e.op == "exp" and isinstance(e.x, Binary) and e.x.op == "sub"):
        return None
    f, m = e.x.a, e.x.b
    if not isinstance(m, Load) or m.buffer not in produced:
        return None
    src = produced[m.buffer]
    other = src.node
    if src.role != "reduction" or not isinstance(other.value, Reduce) or other.value.op != "max":
        return None
    rename = same_row(p.node, other)
    if rename is None or rename(other.value.x) != f or rename(other.store.index) != m.index:
        return None
    if not _exact(f.dtype, m.dtype) or not (red.dtype == e.x.dtype == m.dtype):
        return None
    return f, other.name


def same_row(node: ComputeNode, other: ComputeNode) -> Callable[[Expr], Expr] | None:
    """Where `other` runs over the same loops and reduction as `node` (sizes in order), what
    renames its loop variables to `node`'s; None otherwise."""
    mine = (*node.loops, *node.reduce)
    theirs = (*other.loops, *other.reduce)
    if len(mine) != len(theirs) or len(node.reduce) != len(other.reduce):
        return None
    if any(a.size != b.size for a, b in zip(mine, theirs, strict=True)):
        return None
    names = {b.name: a.name for a, b in zip(mine, theirs, strict=True)}

    def rename(e: Expr) -> Expr:
        return transform(
            e, lambda n: replace(n, name=names.get(n.name, n.name)) if isinstance(n, Var) else None
        )

    return rename


def _exact(f: DType | None, m: DType | None) -> bool:
    """Whether the max of F values, stored in m's dtype, is exact there, and the sum is computed
    in F's own compute dtype (one accumulator serves the max and the sum)."""
    if f is None or m is None or not f.is_float or not m.is_float or compute_dtype(f) != compute_dtype(m):
        return False
    return f == m or (f.itemsize == 2 and m == DType.float32)
