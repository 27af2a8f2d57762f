"""Masks and the index dtype of a tiling: an axis is masked unless every block candidate divides
it; index arithmetic is int64 only where some intermediate of an index can leave int32.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fuseopt.codegen.common import INT32_MAX, INT_RANGE, cdiv, next_power_of_2, prod
from fuseopt.codegen.indexing import decompose
from fuseopt.codegen.options import LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch, Placement, axes_base
from fuseopt.codegen.windows.sliding import index_ops
from fuseopt.ir.bounds import index_magnitude, indirect_bounds
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Expr, IndexValue, Load, to_text, walk
from fuseopt.ir.graph import Graph


def masked_axes(launch: ComputeLaunch, configs: tuple[LaunchConfig, ...]) -> tuple[str, ...]:
    """Axes whose size some config's block does not divide: their lanes need a mask."""
    return tuple(a.name for a in launch.axes if any(a.numel % c.block(a.block) != 0 for c in configs))


def choose_index_dtype(graph: Graph, launch: ComputeLaunch, configs: tuple[LaunchConfig, ...]) -> DType:
    """int32 when every value the kernel's index arithmetic computes provably fits it, else int64.

    Bounded over the whole launch grid, not just the loop box: lanes past an axis' end (masked
    off from memory) compute their indices too, so each axis index reaches its tiles x block
    (`pid * XBLOCK + arange`), and the outermost loop variable of an axis past its loop's size.
    Every intermediate of every index, `index()` value and integer value arithmetic emitted as
    index arithmetic counts (`bounds.index_magnitude`: the final interval alone misses
    `(x + 2**31 - 8) // 2**28`, whose sum leaves int32 on its way to a small index); an indirect
    load's value by what keeps its access in bounds where it is a term of the index, else by its
    dtype's range (`_valid_run`)."""
    padded = {
        a.name: max(cdiv(a.numel, c.block(a.block)) * c.block(a.block) for c in configs)
        if all(a.block in dict(c.blocks) for c in configs)
        else next_power_of_2(a.numel)
        for a in launch.axes
    }
    if prod(padded.values()) > INT32_MAX:  # the grid's lanes counted, as Inductor counts numel
        return DType.int64

    def load_range(ld: Load) -> tuple[int, int]:
        return INT_RANGE.get(graph.buffer(ld.buffer).dtype, INT_RANGE[DType.int64])

    for p in launch.placements:
        ranges = _grid_ranges(p, launch, padded)
        exprs: list[tuple[Expr, str | None]] = [(p.node.store.index, None)]
        exprs += [(e.index, e.buffer if isinstance(e, Load) else None) for e in walk(p.node.value)
                  if isinstance(e, Load | IndexValue)]  # fmt: skip
        exprs += [(e, None) for e in _index_arithmetic(p.node.value, ranges)]
        for index, buf in exprs:
            m = index_magnitude(index, ranges, _valid_run(graph, index, buf, p.node.var_sizes, load_range))
            if m is None or m > INT32_MAX:
                return DType.int64
    return DType.int32


def _valid_run(
    graph: Graph,
    index: Expr,
    buffer: str | None,
    box: dict[str, int],
    load_range: Callable[[Load], tuple[int, int]],
) -> Callable[[Load], tuple[int, int]]:
    """Load values in an index of `buffer`: a load that is a term of the index takes only the values
    that keep the access in bounds (`bounds.indirect_bounds`: an embedding's `8*ids[i] + j` in a
    table under 2**31 elements is int32 arithmetic whatever the dtype of ids), or 0 (a masked lane
    loads `other`); any other load its dtype's range."""
    if buffer is None:
        return load_range
    valid = indirect_bounds(index, graph.buffer(buffer).storage_size, box, load_range)

    def bounded(ld: Load) -> tuple[int, int]:
        lo, hi = load_range(ld)
        r = valid.get(to_text(ld))
        return (lo, hi) if r is None else (max(lo, min(r[0], 0)), min(hi, max(r[1], 0)))

    return bounded


def _grid_ranges(p: Placement, launch: ComputeLaunch, padded: dict[str, int]) -> dict[str, int]:
    """Each loop variable's range over the launch grid: its digit `(axis // div) % mod` of its
    axis' padded extent (a flat segment: `outer * inner_numel + inner` over both padded axes)."""
    numel = {a.name: a.numel for a in launch.axes}
    ranges: dict[str, int] = {}
    for seg in p.segments:
        sizes = [lv.size for lv in seg.loops]
        if not all(a in numel for a in seg.axes):  # an unrolled reduction's points: constants
            ranges.update({lv.name: lv.size for lv in seg.loops})
            continue
        extent = prod(numel[a] for a in seg.axes)
        grid = padded[seg.axes[0]]
        for a in seg.axes[1:]:
            grid = (grid - 1) * numel[a] + padded[a]
        for lv, d in zip(seg.loops, decompose(sizes, axes_base(seg.axes), extent), strict=True):
            ranges[lv.name] = 1 if d is None else d.mod if d.mod is not None else (grid - 1) // d.div + 1
    return ranges


def _index_arithmetic(e: Expr, ranges: dict[str, int]) -> Iterator[Expr]:
    """The largest sub-expressions of a value that are integer arithmetic of loop variables (the
    emitter may compute them in the index dtype: `KernelEmitter.value`)."""
    if index_ops(e, ranges):
        yield e
        return
    if isinstance(e, Load):  # its index is an index of its own
        return
    for c in e.children():
        yield from _index_arithmetic(c, ranges)
