"""Inductor's scheduler nodes (before fusion) -> a FORMAT.md document, while `V.graph` is live.

Buffers keep Inductor's names, layouts and order (graph inputs, then constants, then `V.graph.buffers`);
nodes keep Inductor's names and program order. Three things in Inductor's graph have no direct
FORMAT v1 form, and are expressed as follows:

- A concatenation (`ConcatKernel`, a no-op node) whose inputs were computed straight into slices of
  its output: each slice is its own buffer, and a load of the concatenation becomes a choice between
  masked loads of the slices along the concatenated dim. The no-op node itself is dropped.
- An extern kernel that reads a buffer through a view (a reshape of an activation, a transposed
  weight, a broadcast bias): the buffer is declared with that view's layout, which its compute
  readers and writers do not see (they index the flat storage). Views that would change the storage
  a buffer spans are refused.
- Multi-output reductions: see `fuseopt.capture.body`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from fuseopt.capture.body import (
    NodeContext,
    ReductionPart,
    dtype_of,
    reduction_value,
    run_body,
)
from fuseopt.capture.errors import CaptureError
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, IndexValue, Load, Masked, Reduce, Where, to_text

LIBRARY_OPS: dict[str, str] = {
    "extern_kernels.mm": "mm",
    "extern_kernels.bmm": "bmm",
    "extern_kernels.addmm": "addmm",
}
TEMPLATE_ORIGINS: dict[str, str] = {"mm": "mm", "bmm": "bmm", "addmm": "addmm"}


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: DType

    @property
    def storage_size(self) -> int:
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
    """One graph output: a view of a buffer, or of a concatenation assembled from its slices."""

    buffer: str
    layout: Layout
    pieces: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"buffer": self.buffer, **self.layout.to_json()}
        if self.pieces:
            d["pieces"] = [{"buffer": b, "offset": o} for b, o in self.pieces]
        return d


@dataclass
class Draft:
    """The converted graph, before validation: FORMAT fields plus what the capture reports."""

    buffers: dict[str, dict[str, Any]]
    nodes: list[dict[str, Any]]
    inputs: dict[str, str]  # our input buffer -> Inductor's graph input (or constant) name
    constants: list[str]  # our names of the inputs that are Inductor constants
    outputs: list[OutputSpec]
    dropped: list[str]  # Inductor nodes with no FORMAT node (no-op concatenations)


def _int(e: Any, what: str, node: str | None) -> int:
    if isinstance(e, int):
        return e
    if isinstance(e, sympy.Integer):
        return int(e)
    raise CaptureError(f"{what} {e} is symbolic (dynamic shapes are not supported)", node=node)


def layout_of(layout: Any, node: str | None = None) -> Layout:
    offset = getattr(layout, "offset", 0)
    return Layout(
        tuple(_int(s, "size", node) for s in layout.size),
        tuple(_int(s, "stride", node) for s in layout.stride),
        _int(offset, "offset", node),
        dtype_of(layout.dtype, node=node),
    )


def resolve(x: Any) -> tuple[str, Any]:
    """(buffer name, layout) of an IR value: a buffer, or a view of one (ReinterpretView)."""
    import torch._inductor.ir as ir

    while isinstance(x, ir.TensorBox | ir.StorageBox):
        x = x.data
    return x.get_name(), x.get_layout()


def is_dense(layout: Layout) -> bool:
    dims = sorted((s, n) for n, s in zip(layout.shape, layout.stride, strict=True) if n > 1)
    expect = 1
    for s, n in dims:
        if s != expect:
            return False
        expect *= n
    return True


@dataclass
class Converter:
    """Walks the pre-fusion node list; implements `BodyEnv` for the loop bodies."""

    graph: Any  # torch._inductor.graph.GraphLowering (V.graph)
    renames: dict[str, str]  # Inductor graph input -> our buffer name
    concats: dict[str, Concat] = field(default_factory=dict)
    written: dict[str, Layout] = field(default_factory=dict)  # buffer -> layout, in write order
    library_written: set[str] = field(default_factory=set)
    library_views: dict[str, list[tuple[Layout, str]]] = field(default_factory=dict)
    constants_used: list[str] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    scalars: dict[Any, str] = field(default_factory=dict)  # item()'s symbol -> its 0-d buffer
    _current_buffer: str = ""  # the buffer of the compute node being converted

    # -- BodyEnv ---------------------------------------------------------------------------------
    def buffer_name(self, name: str) -> str:
        return self.renames.get(name, name)

    def load(self, name: str, index: sympy.Expr, ctx: NodeContext) -> Expr:
        if name in self.concats:
            return self._concat_load(self.concats[name], index, ctx)
        if name in self.graph.constants and name not in self.constants_used:
            self.constants_used.append(name)
        return Load(self.buffer_name(name), ctx.index(index))

    def first_output(self, node: str, kind: str) -> str:
        import torch._inductor.ir as ir

        buf = self.graph.get_buffer(self._current_buffer)
        data = buf.data
        # torch 2.11 has WelfordReduction only; later versions share a MultiOutputReduction base.
        multi = getattr(ir, "MultiOutputReduction", ir.WelfordReduction)
        for other in self.graph.buffers:
            od = getattr(other, "data", None)
            if (
                isinstance(od, multi)
                and type(od) is type(data)
                and od.output_index == 0
                and od.reduction_type == data.reduction_type
                and od.inner_fn is data.inner_fn
            ):
                name = other.get_name()
                if name not in self.written:
                    raise CaptureError(
                        f"output {data.output_index} of {kind} is used but its output 0 ({name}) is not "
                        "(FORMAT v1 computes the later outputs from the first one's buffer)",
                        node=node,
                    )
                if layout_of(other.get_layout(), node) != layout_of(buf.get_layout(), node):
                    raise CaptureError(f"the outputs of {kind} have different layouts", node=node)
                return name
        raise CaptureError(f"cannot find output 0 of this {kind}", node=node)

    # -- nodes -----------------------------------------------------------------------------------
    def run(self, snodes: Sequence[Any]) -> None:
        import torch._inductor.ir as ir
        import torch._inductor.scheduler as scheduler

        for outer in snodes:
            for sn in outer.get_nodes():
                name = sn.get_name()
                if isinstance(sn, scheduler.NopKernelSchedulerNode):
                    self._nop(sn, name)
                elif isinstance(sn, scheduler.ExternKernelSchedulerNode):
                    self._extern(sn, name)
                elif isinstance(sn, scheduler.SchedulerNode):
                    if isinstance(sn.node, ir.TemplateBuffer):
                        self._template(sn, name)
                    else:
                        self._compute(sn, name)
                else:
                    raise CaptureError(f"scheduler node kind {type(sn).__name__} is not supported", node=name)

    def _nop(self, sn: Any, name: str) -> None:
        import torch._inductor.ir as ir

        self.dropped.append(name)
        if isinstance(sn.node, ir.ConcatKernel):
            concat = self._concat(sn.node, name)
            self.concats[concat.name] = concat

    def _concat(self, node: Any, name: str) -> Concat:
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
            offset = _int(view.get_layout().offset, "offset", name)
            diff = [d for d, (a, b) in enumerate(zip(lay.shape, out.shape, strict=True)) if a != b]
            d = diff[0] if diff else (dim if dim is not None else 0)
            if len(diff) > 1 or (dim is not None and d != dim) or offset % out.stride[d]:
                raise CaptureError(f"concatenation {node.get_name()} is not along one dim", node=name)
            dim = d
            start = offset // out.stride[d]
            pieces.append(Piece(pname, start, start + lay.shape[d], offset))
        assert dim is not None
        return Concat(node.get_name(), out, dim, tuple(pieces))

    def _concat_load(self, concat: Concat, index: sympy.Expr, ctx: NodeContext) -> Expr:
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
        other = Const(
            False if concat.layout.dtype == DType.bool else 0.0 if concat.layout.dtype.is_float else 0
        )
        out: Expr | None = None
        for p in reversed(live):
            load = Load(self.buffer_name(p.buffer), ctx.index(sympy.expand(index - p.offset)))
            if len(live) == 1:
                return load
            conds = []
            if p.start > lo:
                conds.append(Binary("ge", c, Const(p.start)))
            if p.end <= hi:
                conds.append(Binary("lt", c, Const(p.end)))
            cond = conds[0] if len(conds) == 1 else Binary("and", conds[0], conds[1])
            masked = Masked(cond, load, other)
            out = masked if out is None else Where(cond, masked, out)
        assert out is not None
        return out

    def _library_inputs(self, node: Any, name: str) -> list[str]:
        names: list[str] = []
        for inp in node.inputs:
            bname, lay = resolve(inp)
            if bname in self.concats:
                raise CaptureError(
                    f"extern input {bname} is a concatenation (FORMAT v1 has no aliasing views)", node=name
                )
            self.library_views.setdefault(bname, []).append((layout_of(lay, name), name))
            names.append(self.buffer_name(bname))
        return names

    def _extern(self, sn: Any, name: str) -> None:
        import torch._inductor.ir as ir

        node = sn.node
        if isinstance(node, ir.DynamicScalar):
            self._scalar(node, name)
            return
        if isinstance(node, ir.AssertScalar):
            self.dropped.append(name)
            return
        kernel = getattr(node, "python_kernel_name", None) or type(node).__name__
        op = LIBRARY_OPS.get(kernel)
        if op is None:
            raise CaptureError(
                f"extern kernel {kernel} is not supported (FORMAT v1 externs: mm, bmm, addmm)", node=name
            )
        kwargs = {**getattr(node, "kwargs", {})}
        if any(kwargs.get(k, 1) != 1 for k in ("alpha", "beta")):
            raise CaptureError(f"{op} with alpha/beta {kwargs} is not supported", node=name)
        inputs = self._library_inputs(node, name)
        out = node.get_name()
        self.written[out] = layout_of(node.get_layout(), name)
        self.library_written.add(out)
        self.nodes.append({"name": name, "kind": "extern", "op": op, "inputs": inputs, "output": out})

    def _scalar(self, node: Any, name: str) -> None:
        """`t.item()` (Inductor's DynamicScalar, a host sync): a 0-d copy of the element, whose
        buffer stands for the Python scalar the program returns."""
        if getattr(node, "keypath", ()):
            raise CaptureError(f"item() with key path {node.keypath} is not supported", node=name)
        (inp,) = node.inputs
        src, lay = resolve(inp)
        layout = layout_of(lay, name)
        out = node.get_name()
        self.written[out] = Layout((), (), 0, layout.dtype)
        self.scalars[node.sym] = out
        store = Load(out, Const(0))
        value = Load(self.buffer_name(src), Const(layout.offset))
        self.nodes.append({"name": name, "loops": [], "store": to_text(store), "value": to_text(value)})

    def _template(self, sn: Any, name: str) -> None:
        node = sn.node
        origin = getattr(getattr(node, "origin_node", None), "target", None)
        op = TEMPLATE_ORIGINS.get(getattr(origin, "__name__", "").split(".")[0])
        if op is None:
            raise CaptureError(f"template {type(node).__name__} of {origin} is not supported", node=name)
        inputs = self._library_inputs(node, name)
        out = node.get_name()
        self.written[out] = layout_of(node.get_layout(), name)
        self.library_written.add(out)
        choices = _template_choices(node, name)
        self.nodes.append(
            {"name": name, "kind": "template", "op": op, "inputs": inputs, "output": out, "choices": choices,
             "epilogue_fusion": True}
        )  # fmt: skip

    def _compute(self, sn: Any, name: str) -> None:
        node = sn.node
        if node.get_mutation_names():
            raise CaptureError(
                f"in-place writes to {list(node.get_mutation_names())} are not supported", node=name
            )
        sizes = [[_int(s, "loop size", name) for s in group] for group in sn._sizes]
        syms = [sympy.Symbol(f"x{i}", integer=True, nonnegative=True) for i in range(len(sizes[0]))]
        syms += [sympy.Symbol(f"r{i}", integer=True, nonnegative=True) for i in range(len(sizes[1]))]
        flat = sizes[0] + sizes[1]
        rnumel = 1
        for n in sizes[1]:
            rnumel *= n
        ctx = NodeContext(
            node=name,
            loop_vars={s: s.name for s in syms},
            var_ranges=dict(zip(syms, flat, strict=True)),
            rnumel=rnumel,
        )
        self._current_buffer = node.get_name()
        stores = run_body(sn._body, sizes, self, ctx)
        if len(stores) != 1 or stores[0].buffer != node.get_name():
            raise CaptureError(
                f"expected one store to {node.get_name()}, got {[s.buffer for s in stores]}", node=name
            )
        st = stores[0]
        store = Load(node.get_name(), ctx.index(st.index))
        value = st.value
        is_reduction = bool(sizes[1]) or isinstance(value, ReductionPart | Reduce)
        if is_reduction:
            value = reduction_value(value, store, self, ctx)
        elif isinstance(value, ReductionPart):
            raise CaptureError("a multi-output reduction without reduction loops", node=name)
        assert isinstance(value, Expr)
        doc: dict[str, Any] = {
            "name": name,
            "loops": [[s.name, n] for s, n in zip(syms, sizes[0], strict=False)],
        }
        if is_reduction:
            red = [[s.name, n] for s, n in zip(syms[len(sizes[0]) :], sizes[1], strict=True)] or [["r0", 1]]
            doc["reduce"] = red
        doc["store"] = to_text(store)
        doc["value"] = to_text(value)
        self.written[node.get_name()] = layout_of(node.get_layout(), name)
        self.nodes.append(doc)

    # -- buffers ---------------------------------------------------------------------------------
    def declared_layout(self, buffer: str, base: Layout) -> Layout:
        """The layout to declare: Inductor's, or the one view through which externs read it."""
        views = [(v, n) for v, n in self.library_views.get(buffer, []) if v != base]
        if not views:
            return base
        distinct = list(dict.fromkeys(v for v, _ in views))
        view, reader = views[0]
        if len(distinct) > 1 or buffer in self.library_written:
            raise CaptureError(
                f"{buffer} is read by extern kernels through views {[v.to_json() for v in distinct]} other "
                f"than its layout {base.to_json()} (FORMAT v1 has no aliasing views)",
                node=reader,
            )
        if view.dtype != base.dtype or view.storage_size != base.storage_size:
            raise CaptureError(
                f"extern {reader} reads {buffer} through a view {view.to_json()} that spans other storage "
                f"than its layout {base.to_json()} (FORMAT v1 has no aliasing views)",
                node=reader,
            )
        return view


def _template_choices(node: Any, name: str) -> list[dict[str, Any]]:
    timings = None
    choice_timings = getattr(node, "choice_timings", None)
    if callable(choice_timings):
        try:
            timings = choice_timings()
        except Exception:  # benchmarking needs the device: no timings then
            timings = None
    if timings:
        out = [
            {"name": str(getattr(c, "name", c)), "time_us": round(float(t) * 1000.0, 3)}
            for c, t in timings.items()
        ]
        return sorted(out, key=lambda c: (c["time_us"], c["name"]))
    # Autotuning already picked this template (no timings kept): it is the only choice.
    return [{"name": type(node).__name__, "time_us": 0.0}]
