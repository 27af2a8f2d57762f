"""Deterministic random input storages for a graph (`make_inputs`).

Floats are standard normal, bools fair coins, integers small and non-negative. An integer input
that feeds an indirect index (`x[64*ids[i0] + i1]`) gets values that keep that index inside `x`'s
storage at every point of the loop box (a written buffer's from its offset on), when the index is
linear in the load; otherwise the small default range. Where the indexed buffer is written and its layout has gaps (storage no element
occupies, which nothing writes), the value also stays within the dimension whose stride is its
coefficient, as a gather along that dimension reads (`t[ids[i] + 8*j]` over a [4, 3] buffer of
strides [1, 8]: ids in [0, 3]). Each buffer draws from its own generator, seeded from (seed,
buffer name), so adding a buffer does not change the others' values.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import torch

from fuseopt.interp.limits import DEFAULT_LIMITS, Limits, check_limits
from fuseopt.interp.ops import TORCH_DTYPE
from fuseopt.ir.bounds import interval, linear_form
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Load, walk
from fuseopt.ir.graph import BufferInfo, ComputeNode, Graph

DEFAULT_INT_RANGE = (0, 7)  # inclusive
_INT_MAX: dict[DType, int] = {
    DType.int8: 2**7 - 1,
    DType.int16: 2**15 - 1,
    DType.int32: 2**31 - 1,
    DType.int64: 2**63 - 1,
    DType.uint8: 2**8 - 1,
}


def make_inputs(
    graph: Graph, seed: int = 0, *, limits: Limits | None = DEFAULT_LIMITS
) -> dict[str, torch.Tensor]:
    """One 1-D storage of `storage_size` elements per input buffer, in buffer order.

    Inputs are a run's first allocation: a graph over `limits` (None: unchecked, the caller checked)
    is refused here, before anything is allocated (`fuseopt.interp.limits`)."""
    if limits is not None:
        check_limits(graph, limits)
    ranges = index_value_ranges(graph)
    out: dict[str, torch.Tensor] = {}
    for b in graph.inputs:
        gen = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{b.name}".encode()))
        out[b.name] = _random_storage(b, gen, ranges.get(b.name, DEFAULT_INT_RANGE))
    return out


def _random_storage(b: BufferInfo, gen: torch.Generator, int_range: tuple[int, int]) -> torch.Tensor:
    n = b.storage_size
    dtype = TORCH_DTYPE[b.dtype]
    if b.dtype.is_float:
        wide = torch.float64 if b.dtype == DType.float64 else torch.float32
        return torch.randn(n, generator=gen, dtype=wide).to(dtype)
    if b.dtype == DType.bool:
        return torch.randint(0, 2, (n,), generator=gen, dtype=torch.int64).to(torch.bool)
    lo, hi = int_range
    return torch.randint(lo, hi + 1, (n,), generator=gen, dtype=torch.int64).to(dtype)


def index_value_ranges(graph: Graph) -> dict[str, tuple[int, int]]:
    """Integer input buffer -> inclusive value range that keeps every indirect index it feeds in
    bounds (only buffers used in such indices appear). An empty intersection degrades to (0, 0)."""
    buffers = {b.name: b for b in graph.buffers}
    bounds: dict[str, tuple[int, int]] = {}
    for node in graph.nodes:
        if not isinstance(node, ComputeNode):
            continue
        for name, lo, hi in _indirect_constraints(node, buffers):
            old = bounds.get(name, (0, _INT_MAX[buffers[name].dtype]))
            bounds[name] = (max(old[0], lo), min(old[1], hi))
    return {name: (lo, hi) if lo <= hi else (0, 0) for name, (lo, hi) in bounds.items()}


def _indirect_constraints(node: ComputeNode, buffers: Mapping[str, BufferInfo]) -> list[tuple[str, int, int]]:
    """(buffer, lo, hi) for each integer input load that appears as a linear term of an index."""
    ranges = node.var_sizes
    out: list[tuple[str, int, int]] = []
    for outer in (n for n in walk(node.value) if isinstance(n, Load)):
        form = linear_form(outer.index)
        for atom, k in form.coeffs:
            if not isinstance(atom, Load) or buffers[atom.buffer].role != "input":
                continue
            if not buffers[atom.buffer].dtype.is_int:
                continue
            lo = hi = form.const
            known = True
            for other, k2 in form.coeffs:
                if other == atom:
                    continue
                r = interval(other, ranges)
                if r is None:
                    known = False
                    break
                lo += min(k2 * r[0], k2 * r[1])
                hi += max(k2 * r[0], k2 * r[1])
            if not known:
                continue
            read = buffers[outer.buffer]
            size = read.storage_size
            first = 0 if read.role == "input" else read.offset  # a written buffer's first element
            # Need first <= k*v + rest and k*v + rest <= size - 1 for every rest in [lo, hi].
            if k > 0:
                vlo, vhi = _ceil_div(first - lo, k), (size - 1 - hi) // k
            else:
                vlo, vhi = _ceil_div(hi - (size - 1), -k), (lo - first) // -k
            out.append((atom.buffer, max(vlo, 0), min(vhi, _gather_top(read, k))))
    return out


def _gather_top(b: BufferInfo, k: int) -> int:
    """The largest value a gather of coefficient `k` into `b` takes when `b` is written with gaps
    in its layout: the extent of the dimension whose stride is |k| (the longest such), less one;
    no limit where every storage position from the offset on is an element, or no stride is |k|."""
    if b.role == "input" or b.dense:
        return _INT_MAX[DType.int64]
    sizes = [n for n, s in zip(b.shape, b.stride, strict=True) if s == abs(k)]
    return max(sizes) - 1 if sizes else _INT_MAX[DType.int64]


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)
