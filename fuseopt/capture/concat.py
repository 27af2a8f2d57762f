"""Inductor's concatenations (`ConcatKernel`, a no-op whose inputs were computed straight into
slices of its output). FORMAT has no aliasing, so each slice is its own buffer, and a load of the
concatenation is a choice between masked loads of the slices its index can reach along the
concatenated dim (`concat_load`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy

from fuseopt.capture.body import NodeContext
from fuseopt.capture.errors import CaptureError
from fuseopt.capture.layout import Concat, Piece, is_dense, layout_of, resolve, static_int
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, IndexValue, Load, Masked, Where


def concat_of(node: Any, name: str) -> Concat:
    """The concatenation `node` (Inductor's ConcatKernel) as its slices along one dim."""
    out = layout_of(node.get_layout(), name)
    if not is_dense(out):
        raise CaptureError(f"concatenation {node.get_name()} has a non-dense layout {out}", node=name)
    pieces: list[Piece] = []
    dim: int | None = None
    for inp in node.inputs:
        pname, play = resolve(inp)
        view = getattr(play, "view", None)
        if view is None:
            raise CaptureError(
                f"input {pname} of concatenation {node.get_name()} is not a slice of it", node=name
            )
        lay = layout_of(play, name)
        offset = static_int(view.get_layout().offset, "offset", name)
        diff = [d for d, (a, b) in enumerate(zip(lay.shape, out.shape, strict=True)) if a != b]
        d = diff[0] if diff else (dim if dim is not None else 0)
        if len(diff) > 1 or (dim is not None and d != dim) or offset % out.stride[d]:
            raise CaptureError(f"concatenation {node.get_name()} is not along one dim", node=name)
        dim = d
        start = offset // out.stride[d]
        pieces.append(Piece(pname, start, start + lay.shape[d], offset))
    assert dim is not None
    return Concat(node.get_name(), out, dim, tuple(pieces))


def concat_load(
    concat: Concat, index: sympy.Expr, ctx: NodeContext, buffer_name: Callable[[str], str]
) -> Expr:
    """A load of `concat` at `index`: a choice between masked loads of the slices its range meets,
    a balanced tree of `where`s on the coordinate along the concatenated dim."""
    from torch._inductor.virtualized import V
    from torch.utils._sympy.functions import ModularIndexing
    from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

    d = concat.dim
    coord = V.graph.sizevars.simplify_with_ranges(
        ModularIndexing(index, concat.layout.stride[d], concat.layout.shape[d]), ctx.var_ranges
    )
    bounds = bound_sympy(coord, {s: ValueRanges(0, n - 1) for s, n in ctx.var_ranges.items()})
    lo, hi = int(bounds.lower), int(bounds.upper)
    live = [p for p in concat.pieces if p.start <= hi and p.end > lo]
    c = IndexValue(ctx.index(coord))
    other = Const(False if concat.layout.dtype == DType.bool else 0.0 if concat.layout.dtype.is_float else 0)
    if len(live) == 1:
        return Load(buffer_name(live[0].buffer), ctx.index(sympy.expand(index - live[0].offset)))

    def leaf(p: Piece) -> Expr:
        # masked where the coordinate can leave the slice: a load outside it never runs
        conds: list[Expr] = []
        if p.start > lo:
            conds.append(Binary("ge", c, Const(p.start)))
        if p.end <= hi:
            conds.append(Binary("lt", c, Const(p.end)))
        cond = conds[0] if len(conds) == 1 else Binary("and", conds[0], conds[1])
        return Masked(cond, Load(buffer_name(p.buffer), ctx.index(sympy.expand(index - p.offset))), other)

    def choice(pieces: list[Piece]) -> Expr:
        # a balanced tree of `where`s: the depth grows with log2 of the slices, not with their count
        if len(pieces) == 1:
            return leaf(pieces[0])
        mid = len(pieces) // 2
        return Where(Binary("lt", c, Const(pieces[mid].start)), choice(pieces[:mid]), choice(pieces[mid:]))

    return choice(live)
