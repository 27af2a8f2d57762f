"""Inductor's scheduler nodes (before fusion) -> a docs/format.md document, while `V.graph` is live.

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from fuseopt.capture.body import (
    NodeContext,
    ReductionPart,
    constant,
    dtype_of,
    reduction_value,
    run_body,
)
from fuseopt.capture.errors import CaptureError
from fuseopt.capture.externs import (
    Call,
    TensorRef,
    bind,
    check_deterministic,
    functional_overload,
    literal,
    multi_output_index,
    op_name,
    result_count,
)
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, IndexValue, Load, Masked, Reduce, Where, to_text

# ATen ops that FORMAT v1 calls by short name (`inputs`/`output`, whole buffers, alpha = beta = 1).
V1_OPS: dict[str, str] = {"aten.mm.default": "mm", "aten.bmm.default": "bmm", "aten.addmm.default": "addmm"}
TEMPLATE_ORIGINS: dict[str, str] = {"mm": "mm", "bmm": "bmm", "addmm": "addmm"}


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


@dataclass
class Draft:
    """The converted graph, before validation: FORMAT fields plus what the capture reports."""

    buffers: dict[str, dict[str, Any]]
    nodes: list[dict[str, Any]]
    inputs: dict[str, str]  # our input buffer -> Inductor's graph input (or constant) name
    constants: list[str]  # our names of the inputs that are Inductor constants
    outputs: list[OutputSpec]
    dropped: list[str]  # Inductor nodes with no FORMAT node (no-op concatenations)
    # Inductor node -> the FORMAT nodes made for it besides its own (an output of its multi-output
    # reduction that Inductor computes in the same kernel and dropped, which a later output reads)
    companions: dict[str, list[str]] = field(default_factory=dict)


def _same_loader(a: Any, b: Any) -> bool:
    """Whether two outputs of multi-output reductions read the same values: one loader, or (a
    Welford combine, whose (mean, M2, weight) loaders each output wraps in a closure of its own)
    the same inner loaders."""
    if a is b:
        return True
    fa, fb = _inner_loaders(a), _inner_loaders(b)
    if fa is None or fb is None or len(fa) != len(fb):
        return False
    return all(x is y for x, y in zip(fa, fb, strict=True))


def _inner_loaders(loader: Any) -> tuple[Any, ...] | None:
    for cell in getattr(loader, "__closure__", None) or ():
        v = cell.cell_contents
        if isinstance(v, tuple | list) and len(v) > 1 and all(callable(f) for f in v):
            return tuple(v)
    return None


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


@dataclass
class Converter:
    """Walks the pre-fusion node list; implements `BodyEnv` for the loop bodies."""

    graph: Any  # torch._inductor.graph.GraphLowering (V.graph)
    renames: dict[str, str]  # Inductor graph input -> our buffer name
    concats: dict[str, Concat] = field(default_factory=dict)
    empties: dict[str, Layout] = field(default_factory=dict)  # allocations nothing computes
    written: dict[str, Layout] = field(default_factory=dict)  # buffer -> layout, in write order
    library_written: set[str] = field(default_factory=set)
    library_views: dict[str, list[tuple[Layout, str]]] = field(default_factory=dict)
    calls: dict[str, Call] = field(default_factory=dict)  # extern node -> its library call
    v1_calls: set[str] = field(default_factory=set)  # those written with v1's inputs/output
    multi_parents: dict[str, Call] = field(default_factory=dict)  # multi-result kernel -> its call
    constants_used: list[str] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    scalars: dict[Any, str] = field(default_factory=dict)  # item()'s symbol -> its 0-d buffer
    companions: dict[str, list[str]] = field(default_factory=dict)  # see Draft.companions
    _current_buffer: str = ""  # the buffer of the compute node being converted
    # the loop sizes and symbols of the compute node being converted (`_make_output` repeats them)
    _current_loops: tuple[list[list[int]], list[Any]] = ([], [])
    # buffer -> the Inductor compute node that writes it; those `_make_output` converted early
    _scheduled: dict[str, str] = field(default_factory=dict)
    _converted_early: set[str] = field(default_factory=set)

    # -- BodyEnv ---------------------------------------------------------------------------------
    def buffer_name(self, name: str) -> str:
        return self.renames.get(name, name)

    def load(self, name: str, index: sympy.Expr, ctx: NodeContext) -> Expr:
        if name in self.empties:
            # Memory nothing wrote (`torch.empty`; circular padding writes its output in slices
            # over one): any value is its value, and a correct program never uses it.
            return constant(0, self.empties[name].dtype, node=ctx.node)
        if name in self.concats:
            return self._concat_load(self.concats[name], index, ctx)
        if name in self.graph.constants and name not in self.constants_used:
            self.constants_used.append(name)
        return Load(self.buffer_name(name), self._checked_index(name, index, ctx))

    def _checked_index(self, name: str, index: sympy.Expr, ctx: NodeContext) -> Expr:
        """The index, plus `S*(w // n)` for each checked indirect index `w` of a dim of size `n`
        whose out-of-range values would not leave the storage (S) by themselves (see
        `fuseopt.capture.indirect`)."""
        from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

        tree = ctx.index(index)
        checked = [s for s in sorted(index.free_symbols, key=str) if s in ctx.indirect_dims]
        checked = [s for s in checked if ctx.indirect_dims[s].check]
        if not checked:
            return tree
        storage = self._storage_size(name)
        for sym in checked:
            dim = ctx.indirect_dims[sym]
            coeff = index.coeff(sym)
            rest = sympy.expand(index - coeff * sym)
            if coeff.is_Integer and int(coeff) > 0 and not (rest.free_symbols & set(ctx.indirect_dims)):
                ranges = {s: ValueRanges(0, n - 1) for s, n in ctx.var_ranges.items()}
                bounds = bound_sympy(rest, ranges)
                c = int(coeff)
                if c * dim.size >= storage and bounds.lower >= 0 and bounds.upper < c:
                    continue  # the outermost dim of the access: out of range is out of the storage
            term = Binary("mul", Const(storage), Binary("floordiv", dim.index, Const(dim.size)))
            tree = Binary("add", tree, term)
        return tree

    def storage_size(self, buffer: str) -> int:
        inductor = next((k for k, v in sorted(self.renames.items()) if v == buffer), buffer)
        return self._storage_size(inductor)

    def _storage_size(self, name: str) -> int:
        return self.layout(name).storage_size

    def layout(self, name: str) -> Layout:
        """Inductor's layout of a buffer, a graph input or a constant."""
        if name in self.graph.constants:
            t = self.graph.constants[name]
            return Layout(tuple(t.shape), tuple(t.stride()), 0, dtype_of(t.dtype, node=name))
        return layout_of(self.graph.get_buffer(name).get_layout(), name)

    def output_of(self, part: ReductionPart, index: int, store: Load, ctx: NodeContext) -> str:
        import torch._inductor.ir as ir

        node, kind = ctx.node, part.kind
        buf = self.graph.get_buffer(self._current_buffer)
        data = buf.data
        # torch 2.11 has WelfordReduction only; later versions share a MultiOutputReduction base.
        multi = getattr(ir, "MultiOutputReduction", ir.WelfordReduction)
        for other in self.graph.buffers:
            od = getattr(other, "data", None)
            if (
                isinstance(od, multi)
                and type(od) is type(data)
                and od.output_index == index
                and od.reduction_type == data.reduction_type
                and _same_loader(od.inner_fn, data.inner_fn)
            ):
                name = other.get_name()
                if not same_layout(layout_of(other.get_layout(), node), layout_of(buf.get_layout(), node)):
                    raise CaptureError(f"the outputs of {kind} have different layouts", node=node)
                if name not in self.written:
                    # nothing wrote it yet: Inductor dropped it (only a later output is used:
                    # torch.var, torch.std, a split var_mean's total weight) or orders it later
                    self._make_output(part, index, name, layout_of(other.get_layout(), node), store, ctx)
                return name
        raise CaptureError(f"cannot find output {index} of this {kind}", node=node)

    def _make_output(
        self, part: ReductionPart, index: int, buffer: str, layout: Layout, store: Load, ctx: NodeContext
    ) -> None:
        """The node of output `index` of the multi-output reduction being converted, which a later
        output reads before anything wrote it: the same loops, stored at the same index of its own
        buffer, placed before the node that reads it (after what it reads in turn). Where Inductor
        has a node for it later in its order (the outputs of one reduction come in any order), it
        is that node, converted now and skipped then; where Inductor dropped it, it is named
        `<node>_<buffer>` and counted in this node's Inductor kernel (`Draft.companions`)."""
        value = reduction_value(ReductionPart(part.kind, index, part.value, part.parts), store, self, ctx)
        later = self._scheduled.get(buffer)
        if later is not None:
            made = later
            self._converted_early.add(later)
        else:
            taken = {doc["name"] for doc in self.nodes}
            made = f"{ctx.node}_{buffer}"
            while made in taken:
                made += "_"
            self.companions.setdefault(ctx.node, []).append(made)
        sizes, syms = self._current_loops
        self.nodes.append(
            {
                "name": made,
                "loops": [[s.name, n] for s, n in zip(syms, sizes[0], strict=False)],
                "reduce": [[s.name, n] for s, n in zip(syms[len(sizes[0]) :], sizes[1], strict=True)]
                or [["r0", 1]],
                "store": to_text(Load(buffer, store.index)),
                "value": to_text(value),
            }
        )
        self.written[buffer] = layout

    # -- nodes -----------------------------------------------------------------------------------
    def run(self, snodes: Sequence[Any]) -> None:
        import torch._inductor.ir as ir
        import torch._inductor.scheduler as scheduler

        for outer in snodes:
            for sn in outer.get_nodes():
                other = (scheduler.NopKernelSchedulerNode, scheduler.ExternKernelSchedulerNode)
                node: Any = sn.node
                computes = isinstance(sn, scheduler.SchedulerNode) and not isinstance(sn, other)
                if computes and not isinstance(node, ir.TemplateBuffer):
                    self._scheduled[node.get_name()] = sn.get_name()
        for outer in snodes:
            for sn in outer.get_nodes():
                name = sn.get_name()
                if name in self._converted_early:
                    continue  # an output of a multi-output reduction another output needed first
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
        self.finish()

    def _nop(self, sn: Any, name: str) -> None:
        import torch._inductor.ir as ir

        if isinstance(sn.node, ir.Buffer) and self._drop_empty(sn.node, name):
            return  # Inductor's no-op for a result of no elements
        self.dropped.append(name)
        if isinstance(sn.node, ir.ConcatKernel):
            concat = self._concat(sn.node, name)
            self.concats[concat.name] = concat
        elif isinstance(sn.node, ir.Buffer):  # an allocation nothing computes (`torch.empty`)
            self.empties[sn.node.get_name()] = layout_of(sn.node.get_layout(), name)

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

    def _materialize(self, buffer: str, reader: str) -> None:
        """A buffer a library call reads whole that no node writes (FORMAT has no aliasing): a
        concatenation, copied from its slices, or an allocation nothing computes, filled with 0
        (any value is its value). Once, by a pointwise node `<reader>_<buffer>` counted in the
        call's Inductor kernel (`Draft.companions`)."""
        if buffer in self.written or (buffer not in self.concats and buffer not in self.empties):
            return
        layout = self.concats[buffer].layout if buffer in self.concats else self.empties[buffer]
        syms = [sympy.Symbol(f"x{i}", integer=True, nonnegative=True) for i in range(len(layout.shape))]
        made = f"{reader}_{buffer}"
        ctx = NodeContext(made, {s: s.name for s in syms}, dict(zip(syms, layout.shape, strict=True)), 1)
        index = sympy.Add(layout.offset, *(st * s for st, s in zip(layout.stride, syms, strict=True)))
        if buffer in self.concats:
            value = self._concat_load(self.concats[buffer], index, ctx)
        else:
            value = constant(0, layout.dtype, node=made)
        self.companions.setdefault(reader, []).append(made)
        self.nodes.append(
            {
                "name": made,
                "loops": [[s.name, n] for s, n in zip(syms, layout.shape, strict=True)],
                "store": to_text(Load(buffer, ctx.index(index))),
                "value": to_text(value),
            }
        )
        self.written[buffer] = layout

    def _library_inputs(self, node: Any, name: str) -> list[str]:
        names: list[str] = []
        for inp in node.inputs:
            bname, lay = resolve(inp)
            view = self._library_read(bname, lay, name)
            self.library_views.setdefault(bname, []).append((view, name))
            names.append(self.buffer_name(bname))
        return names

    def _library_read(self, buffer: str, view: Any, reader: str) -> Layout:
        """The layout through which library call `reader` reads `buffer`, once the buffer exists."""
        layout = layout_of(view, reader)
        if layout.empty or self.layout(buffer).empty:
            raise CaptureError(
                f"a library call reads {self.buffer_name(buffer)} through a view of shape "
                f"{list(layout.shape)}, with no elements, into a result that has some: FORMAT has no "
                "buffer or view of zero elements",
                node=reader,
            )
        self._materialize(buffer, reader)
        return layout

    @staticmethod
    def _results_empty(node: Any) -> bool:
        """Whether every result of multi-result library call `node` has no elements."""
        import torch._inductor.ir as ir
        import torch.utils._pytree as pytree

        results = [r for r in pytree.tree_leaves(getattr(node, "outputs", None)) if isinstance(r, ir.Buffer)]
        return bool(results) and all(0 in r.get_size() for r in results)

    def _drop_empty(self, node: Any, name: str) -> bool:
        """Whether `node`'s result has no elements. Such a node computes nothing and is dropped;
        its buffer is one of `empties` (FORMAT has no buffer of zero elements)."""
        layout = layout_of(node.get_layout(), name)
        if layout.empty:
            self.dropped.append(name)
            self.empties[node.get_name()] = layout
        return layout.empty

    def _extern(self, sn: Any, name: str) -> None:
        import torch._inductor.ir as ir

        node = sn.node
        if isinstance(node, ir.DynamicScalar):
            self._scalar(node, name)
            return
        if isinstance(node, ir.AssertScalar):
            self.dropped.append(name)
            return
        if isinstance(node, ir.MultiOutput):
            self._multi_output(node, name)
            return
        if not isinstance(node.layout, ir.MultiOutputLayout):
            if self._drop_empty(node, name):
                return
        elif self._results_empty(node):
            self.dropped.append(name)  # so are its results (`_multi_output`)
            return
        op = functional_overload(node, name)
        label = op_name(op)
        args, kwargs = bind(node, op, name)
        check_deterministic(op, args, kwargs, name)

        def tensor(x: Any) -> TensorRef:
            return self._tensor_ref(x, name)

        call = Call(
            node=name,
            op=label,
            args=[literal(a, tensor, name, f"args/{i}") for i, a in enumerate(args)],
            kwargs={k: literal(v, tensor, name, f"kwargs/{k}") for k, v in kwargs.items()},
            outputs=[None] * result_count(op),
        )
        out = node.get_name()
        if isinstance(node.layout, ir.MultiOutputLayout):
            self.multi_parents[out] = call
        else:
            if len(call.outputs) != 1:
                raise CaptureError(
                    f"{label} has {len(call.outputs)} results but one output buffer", node=name
                )
            call.outputs[0] = out
            self.written[out] = layout_of(node.get_layout(), name)
            self.library_written.add(out)
        self.calls[name] = call
        self.nodes.append({"name": name, "kind": "extern", "op": label})
        v1 = V1_OPS.get(label)
        refs = [a for a in call.args if isinstance(a, TensorRef)]
        if (
            v1 is not None
            and len(refs) == len(call.args)
            and all(call.kwargs.get(k, 1) == 1 for k in ("alpha", "beta"))
        ):
            self.v1_calls.add(name)
            for ref in refs:
                self.library_views.setdefault(ref.buffer, []).append((ref.layout, name))

    def _tensor_ref(self, x: Any, name: str) -> TensorRef:
        bname, lay = resolve(x)
        view = self._library_read(bname, lay, name)
        if bname in self.graph.constants and bname not in self.constants_used:
            self.constants_used.append(bname)
        return TensorRef(bname, view)

    def _multi_output(self, node: Any, name: str) -> None:
        """A result of a multi-result call: that result's buffer; the node itself launches nothing."""
        if self._drop_empty(node, name):
            return  # a result of no elements: as one nobody reads
        (parent,) = node.inputs
        pname = parent.get_name()
        call = self.multi_parents.get(pname)
        if call is None:
            raise CaptureError(f"result of {pname}, which is not a captured library call", node=name)
        i = multi_output_index(node, name)
        if not 0 <= i < len(call.outputs) or call.outputs[i] is not None:
            raise CaptureError(f"result {i} of {call.op} is selected twice or does not exist", node=name)
        out = node.get_name()
        call.outputs[i] = out
        self.written[out] = layout_of(node.get_layout(), name)
        self.library_written.add(out)
        self.dropped.append(name)

    def finish(self) -> None:
        """Decide each mm/bmm/addmm's form, then render the library calls (views need the declared
        layouts). A v1 call stays v1 when every buffer it reads can be declared with the one view
        v1 calls read it through; the readers of a buffer read through several views (q, k and v of
        one projection), or through a view of an extern's own output, become 1.1 calls."""
        while True:
            bad = {b for b in self.library_views if self._view_conflict(b) is not None}
            movers = sorted(
                n
                for n in self.v1_calls
                if any(isinstance(a, TensorRef) and a.buffer in bad for a in self.calls[n].args)
            )
            if not movers:
                break
            for n in movers:
                self.v1_calls.discard(n)
            for b in list(self.library_views):
                self.library_views[b] = [(v, r) for v, r in self.library_views[b] if r not in movers]
        by_name = {d["name"]: d for d in self.nodes}
        for n, call in self.calls.items():
            doc = by_name[n]
            if n in self.v1_calls:
                doc["op"] = V1_OPS[call.op]
                doc["inputs"] = [self.buffer_name(a.buffer) for a in call.args]
                doc["output"] = call.outputs[0]
                continue
            doc["args"] = [self._render(a) for a in call.args]
            if call.kwargs:
                doc["kwargs"] = {k: self._render(v) for k, v in sorted(call.kwargs.items())}
            doc["outputs"] = list(call.outputs)

    def _render(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._render(v) for v in value]
        if not isinstance(value, TensorRef):
            return value
        view = value.layout
        declared = self.declared_layout(value.buffer, self.base_layout(value.buffer))
        if same_layout(view, declared):
            return {"buffer": self.buffer_name(value.buffer)}
        return {
            "buffer": self.buffer_name(value.buffer),
            "shape": list(view.shape),
            "stride": list(view.stride),
            "offset": view.offset,
        }

    def base_layout(self, buffer: str) -> Layout:
        """Inductor's layout of a buffer: written here, a constant, or a graph input."""
        if buffer in self.written:
            return self.written[buffer]
        return self.layout(buffer)

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
        if not stores:  # a node that only asserts (one_hot's non-negative classes): no value
            self.dropped.append(name)
            return
        if len(stores) != 1 or stores[0].buffer != node.get_name():
            raise CaptureError(
                f"expected one store to {node.get_name()}, got {[s.buffer for s in stores]}", node=name
            )
        st = stores[0]
        store = Load(node.get_name(), ctx.index(st.index))
        value = st.value
        is_reduction = bool(sizes[1]) or isinstance(value, ReductionPart | Reduce)
        if is_reduction:
            self._current_loops = (sizes, syms)
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
    def _view_conflict(self, buffer: str) -> str | None:
        """Why `buffer` cannot be declared with the view its v1 readers use, or None."""
        base = self.base_layout(buffer)
        readers = self.library_views.get(buffer, [])
        views = [(v, n) for v, n in readers if not same_layout(v, base)]
        if not views:
            return None
        distinct = list(dict.fromkeys(v for v, _ in views))
        view, reader = views[0]
        as_declared = [n for v, n in readers if same_layout(v, base)]
        if len(distinct) > 1 or as_declared or buffer in self.library_written:
            return (
                f"{buffer} is read by extern kernels through views {[v.to_json() for v in distinct]}"
                f"{' and as declared' if as_declared else ''}, other than its layout {base.to_json()}"
            )
        if not same_elements(view, base):
            return (
                f"extern {reader} reads {buffer} through a view {view.to_json()} of other elements "
                f"than its layout {base.to_json()}"
            )
        return None

    def declared_layout(self, buffer: str, base: Layout) -> Layout:
        """The layout to declare: Inductor's, or the one view through which v1 externs read it."""
        views = [(v, n) for v, n in self.library_views.get(buffer, []) if not same_layout(v, base)]
        if not views:
            return base
        problem = self._view_conflict(buffer)
        if problem is not None:  # only template readers (no 1.1 form) are left to conflict
            raise CaptureError(problem, node=views[0][1])
        return views[0][0]


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
