"""Layouts of Inductor's buffers and views as the capture sees them, and what a graph output is.

`Layout` is a buffer's (or view's) shape, stride, offset and dtype, with static ints only (dynamic
shapes are refused); `Concat` a concatenation as its slices (`fuseopt.capture.concat`);
`OutputSpec` a graph output as a view of a buffer, of a concatenation's slices, or of nothing (a
tensor of no elements), which `output_tensors` turns back into tensors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from fuseopt.capture.body import dtype_of
from fuseopt.capture.errors import CaptureError
from fuseopt.ir.dtypes import DType


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: DType

    @property
    def empty(self) -> bool:
        """No elements (a dim of size 0): FORMAT has no such buffer."""
        return 0 in self.shape

    @property
    def storage_size(self) -> int:
        if self.empty:
            return 0
        return self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.stride, strict=True)) + 1

    def to_json(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "stride": list(self.stride),
            "offset": self.offset,
            "dtype": self.dtype.value,
        }


@dataclass(frozen=True)
class Piece:
    buffer: str
    start: int  # along the concatenated dim
    end: int
    offset: int  # of the slice in the concatenation's storage


@dataclass(frozen=True)
class Concat:
    name: str
    layout: Layout
    dim: int
    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class OutputSpec:
    """One graph output: a view of a buffer, or of a concatenation assembled from its slices; a
    tensor of no elements has no buffer (None)."""

    buffer: str | None
    layout: Layout
    pieces: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"buffer": self.buffer, **self.layout.to_json()}
        if self.pieces:
            d["pieces"] = [{"buffer": b, "offset": o} for b, o in self.pieces]
        return d


def static_int(e: Any, what: str, node: str | None) -> int:
    """A size, stride or offset as an int; a symbol (a dynamic shape) is refused."""
    if isinstance(e, int):
        return e
    if isinstance(e, sympy.Integer):
        return int(e)
    raise CaptureError(f"{what} {e} is symbolic (dynamic shapes are not supported)", node=node)


def layout_of(layout: Any, node: str | None = None) -> Layout:
    offset = getattr(layout, "offset", 0)
    return Layout(
        tuple(static_int(s, "size", node) for s in layout.size),
        tuple(static_int(s, "stride", node) for s in layout.stride),
        static_int(offset, "offset", node),
        dtype_of(layout.dtype, node=node),
    )


def resolve(x: Any) -> tuple[str, Any]:
    """(buffer name, layout) of an IR value: a buffer, or a view of one (ReinterpretView)."""
    import torch._inductor.ir as ir

    while isinstance(x, ir.TensorBox | ir.StorageBox):
        x = x.data
    return x.get_name(), x.get_layout()


def same_layout(a: Layout, b: Layout) -> bool:
    """The same elements at the same places: the stride of a size-1 dim is never used (Inductor
    gives keepdim dims arbitrary strides), and a tensor without elements has no places."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if 0 in a.shape:
        return True
    return a.offset == b.offset and all(
        sa == sb for n, sa, sb in zip(a.shape, a.stride, b.stride, strict=True) if n != 1
    )


def is_dense(layout: Layout) -> bool:
    dims = sorted((s, n) for n, s in zip(layout.shape, layout.stride, strict=True) if n > 1)
    expect = 1
    for s, n in dims:
        if s != expect:
            return False
        expect *= n
    return True


def same_elements(a: Layout, b: Layout) -> bool:
    """Whether two layouts of a storage hold the same elements (a reshape or permutation of one
    another, not a slice): both dense from one offset, or the same dims in another order."""
    if a.dtype != b.dtype or math.prod(a.shape) != math.prod(b.shape) or a.offset != b.offset:
        return False
    if is_dense(a) and is_dense(b):
        return True
    dims = [sorted((s, n) for n, s in zip(x.shape, x.stride, strict=True) if n > 1) for x in (a, b)]
    return dims[0] == dims[1]


def output_tensors(specs: Sequence[OutputSpec], storages: Mapping[str, Any]) -> list[Any]:
    """A program's outputs as tensors, from `run_graph`'s storages (slices of a concatenation are
    added into one storage: they do not overlap, and the interpreter zero-fills)."""
    import torch

    from fuseopt.interp.ops import TORCH_DTYPE

    tensors: list[torch.Tensor] = []
    for spec in specs:
        lay = spec.layout
        if spec.buffer is None:
            tensors.append(torch.empty_strided(lay.shape, lay.stride, dtype=TORCH_DTYPE[lay.dtype]))
            continue
        if spec.pieces:
            flat = torch.zeros(lay.storage_size, dtype=storages[spec.pieces[0][0]].dtype)
            for name, offset in spec.pieces:
                part = storages[name]
                flat[offset : offset + part.numel()] += part
        else:
            flat = storages[spec.buffer]
        tensors.append(torch.as_strided(flat, lay.shape, lay.stride, lay.offset))
    return tensors
