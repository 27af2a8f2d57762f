"""The validated, immutable graph every pass works on (built from the models by `fuseopt.ir.build`).

Expressions here are parsed and typed trees (`fuseopt.ir.expr`); buffers know their strides and
storage size. Nothing in this module mutates: passes derive new values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Expr, Load, Reduce, loads


@dataclass(frozen=True, slots=True)
class LoopVar:
    name: str
    size: int


@dataclass(frozen=True, slots=True)
class BufferInfo:
    name: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: DType
    role: str  # input | output | intermediate
    numel: int = field(init=False, compare=False, repr=False)
    storage_size: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "numel", _prod(self.shape))
        size = self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.stride, strict=True)) + 1
        object.__setattr__(self, "storage_size", size)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    @property
    def dense(self) -> bool:
        """Every storage position from the offset on is an element (for a valid layout: as many
        elements as positions from the offset); the positions below the offset are none."""
        return self.numel == self.storage_size - self.offset


@dataclass(frozen=True, slots=True)
class ComputeNode:
    """A pointwise or reduction node: `store <- value` over `loops` (x `reduce`)."""

    name: str
    kind: str  # pointwise | reduction
    loops: tuple[LoopVar, ...]
    reduce: tuple[LoopVar, ...]
    store: Load
    value: Expr
    # Derived once (nodes are immutable): sizes and the buffers read, in first-use order.
    numel: int = field(init=False, compare=False, repr=False)
    rnumel: int = field(init=False, compare=False, repr=False)
    _loads: tuple[Load, ...] = field(init=False, compare=False, repr=False)
    _read_buffers: tuple[str, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "numel", _prod(lv.size for lv in self.loops))
        object.__setattr__(self, "rnumel", _prod(lv.size for lv in self.reduce))
        object.__setattr__(self, "_loads", tuple(loads(self.value)))
        object.__setattr__(self, "_read_buffers", tuple(dict.fromkeys(ld.buffer for ld in self._loads)))

    @property
    def output(self) -> str:
        return self.store.buffer

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.store.buffer,)

    @property
    def reduction(self) -> str | None:
        return self.value.op if isinstance(self.value, Reduce) else None

    def reads(self) -> list[Load]:
        """Every load in the value (including loads inside indices: indirect indexing), in
        pre-order."""
        return list(self._loads)

    def read_buffers(self) -> tuple[str, ...]:
        return self._read_buffers

    @property
    def var_sizes(self) -> dict[str, int]:
        return {lv.name: lv.size for lv in (*self.loops, *self.reduce)}


@dataclass(frozen=True, slots=True)
class View:
    """A tensor of a library call: `as_strided(storage of buffer, shape, stride, offset)`; the offset
    is absolute in the buffer's storage, the dtype the buffer's."""

    buffer: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int

    @property
    def numel(self) -> int:
        return _prod(self.shape)

    @property
    def extent(self) -> int:
        """One past the last storage position the view touches."""
        return self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.stride, strict=True)) + 1

    @staticmethod
    def of(b: BufferInfo) -> View:
        return View(b.name, b.shape, b.stride, b.offset)


@dataclass(frozen=True, slots=True)
class EnumArg:
    """A literal of one of torch's enums, given as a name: a `ScalarType` (`float32`), `Layout`
    (`strided`) or `MemoryFormat` (`channels_last`) argument (`fuseopt.ir.aten_ops.ENUMS`)."""

    kind: str  # dtype | layout | memory_format
    name: str


# A bound argument: a view, a literal, or a tuple of these (lists: Tensor[], int[], ...).
CallArg = View | EnumArg | None | bool | int | float | str | tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class AtenCall:
    """An extension-1.1 library call: `torch.ops.<op>(*args, **kwargs)`, its tensor results written
    into `outputs` (None: a result nobody reads). Bound and checked against the op's schema."""

    op: str  # namespace.name.overload, e.g. aten.convolution.default
    args: tuple[CallArg, ...]
    kwargs: tuple[tuple[str, CallArg], ...]
    outputs: tuple[View | None, ...]

    def views(self) -> tuple[View, ...]:
        """Every tensor argument, in argument order (positional, then keyword; lists flattened)."""
        out: list[View] = []
        _collect(self.args, out)
        _collect(tuple(v for _, v in self.kwargs), out)
        return tuple(out)

    def rename(self, mapping: Mapping[str, str]) -> AtenCall:
        return AtenCall(
            self.op,
            tuple(_renamed(a, mapping) for a in self.args),
            tuple((k, _renamed(v, mapping)) for k, v in self.kwargs),
            tuple(None if v is None else _renamed(v, mapping) for v in self.outputs),
        )


def _collect(args: tuple[Any, ...], out: list[View]) -> None:
    for a in args:
        if isinstance(a, View):
            out.append(a)
        elif isinstance(a, tuple):
            _collect(a, out)


def _renamed(a: Any, mapping: Mapping[str, str]) -> Any:
    if isinstance(a, View):
        return dataclasses.replace(a, buffer=mapping.get(a.buffer, a.buffer))
    if isinstance(a, tuple):
        return tuple(_renamed(x, mapping) for x in a)
    return a


@dataclass(frozen=True, slots=True)
class LibraryNode:
    """An extern call or a template (autotuned library kernel). v1: reads `inputs` whole, writes
    `output` whole. Extension 1.1 (`call` set): `op` is the ATen overload, `inputs` are the
    buffers its views read (first-use order), `output` is its first written buffer and `outputs`
    all of them; each written buffer is covered exactly by its output view."""

    name: str
    kind: str  # extern | template
    op: str
    inputs: tuple[str, ...]
    output: str
    choices: tuple[tuple[str, float], ...] = ()
    epilogue_fusion: bool = False
    call: AtenCall | None = None

    @property
    def outputs(self) -> tuple[str, ...]:
        if self.call is None:
            return (self.output,)
        return tuple(v.buffer for v in self.call.outputs if v is not None)

    def read_buffers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.inputs))

    def read_views(self, graph: Graph) -> tuple[View, ...]:
        """What the node reads: the call's views, or each v1 input as declared."""
        if self.call is not None:
            return self.call.views()
        return tuple(View.of(graph.buffer(b)) for b in self.inputs)

    def best_choice(self) -> tuple[str, float] | None:
        """Finalizing picks the smallest time_us; ties go to the smallest name (docs/format.md)."""
        if not self.choices:
            return None
        return min(self.choices, key=lambda c: (c[1], c[0]))

    def renamed(self, mapping: Mapping[str, str]) -> LibraryNode:
        """The node with every buffer named in `mapping` renamed (reads, writes and views)."""
        return dataclasses.replace(
            self,
            inputs=tuple(mapping.get(b, b) for b in self.inputs),
            output=mapping.get(self.output, self.output),
            call=None if self.call is None else self.call.rename(mapping),
        )


Node = ComputeNode | LibraryNode


@dataclass(frozen=True)
class Graph:
    name: str
    buffers: tuple[BufferInfo, ...]
    nodes: tuple[Node, ...]
    description: str | None = None
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    _buf_index: Mapping[str, BufferInfo] = field(default_factory=dict, init=False, repr=False, compare=False)
    _node_index: Mapping[str, Node] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_buf_index", MappingProxyType({b.name: b for b in self.buffers}))
        object.__setattr__(self, "_node_index", MappingProxyType({n.name: n for n in self.nodes}))

    def buffer(self, name: str) -> BufferInfo:
        return self._buf_index[name]

    def node(self, name: str) -> Node:
        return self._node_index[name]

    def has_buffer(self, name: str) -> bool:
        return name in self._buf_index

    def has_node(self, name: str) -> bool:
        return name in self._node_index

    @property
    def inputs(self) -> tuple[BufferInfo, ...]:
        return tuple(b for b in self.buffers if b.role == "input")

    @property
    def outputs(self) -> tuple[BufferInfo, ...]:
        return tuple(b for b in self.buffers if b.role == "output")

    def writer(self) -> dict[str, str]:
        """Buffer name -> the node that writes it."""
        return {out: n.name for n in self.nodes for out in n.outputs}

    def replace(self, **changes: Any) -> Graph:
        """A new graph with some fields changed (the indices are rebuilt)."""
        return dataclasses.replace(self, **changes)


def _prod(xs: Any) -> int:
    n = 1
    for x in xs:
        n *= x
    return n
