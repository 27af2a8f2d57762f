"""The converter's part for library calls (extern kernels and templates) and the buffers they
read and write, and the state the whole conversion shares (`LibraryConverter`, which
`fuseopt.capture.convert.Converter` extends with compute nodes).

A call is an extension-1.1 call of its ATen operator on views (`fuseopt.capture.externs` binds its
arguments), or a v1 `mm`/`bmm`/`addmm` where every buffer it reads can be declared with the one
view it is read through (`finish`). FORMAT has no aliasing: a concatenation or an allocation a
call reads whole is materialised by a pointwise node (`_materialize`). A result of no elements
is dropped (`_drop_empty`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy

from fuseopt.capture.body import NodeContext, constant, dtype_of
from fuseopt.capture.concat import concat_load
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
from fuseopt.capture.layout import Concat, Layout, Piece, layout_of, resolve, same_elements, same_layout
from fuseopt.ir.expr import Const, Expr, Load, to_text

# ATen ops that FORMAT v1 calls by short name (`inputs`/`output`, whole buffers, alpha = beta = 1).
V1_OPS: dict[str, str] = {"aten.mm.default": "mm", "aten.bmm.default": "bmm", "aten.addmm.default": "addmm"}
TEMPLATE_ORIGINS: dict[str, str] = {"mm": "mm", "bmm": "bmm", "addmm": "addmm"}
# A load of a concatenation longer than this (half the format's 4,096 characters an expression,
# leaving the rest for what the node computes with it) reads groups of GROUP slices instead.
MAX_CONCAT_LOAD_TEXT = 2048
GROUP = 16


@dataclass
class LibraryConverter:
    """Library calls, and the state of the whole conversion (see `Converter`)."""

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
    copies: dict[str, tuple[str, ...]] = field(default_factory=dict)  # concatenation copy -> its slices
    grouped: dict[str, Concat] = field(default_factory=dict)  # see `concat_read`

    def buffer_name(self, name: str) -> str:
        return self.renames.get(name, name)

    def layout(self, name: str) -> Layout:
        """Inductor's layout of a buffer, a graph input or a constant."""
        if name in self.graph.constants:
            t = self.graph.constants[name]
            return Layout(tuple(t.shape), tuple(t.stride()), 0, dtype_of(t.dtype, node=name))
        return layout_of(self.graph.get_buffer(name).get_layout(), name)

    def base_layout(self, buffer: str) -> Layout:
        """Inductor's layout of a buffer: written here, a constant, or a graph input."""
        if buffer in self.written:
            return self.written[buffer]
        return self.layout(buffer)

    def _drop_empty(self, node: Any, name: str) -> bool:
        """Whether `node`'s result has no elements. Such a node computes nothing and is dropped;
        its buffer is one of `empties` (FORMAT has no buffer of zero elements)."""
        layout = layout_of(node.get_layout(), name)
        if layout.empty:
            self.dropped.append(name)
            self.empties[node.get_name()] = layout
        return layout.empty

    def concat_read(self, name: str, index: sympy.Expr, ctx: NodeContext) -> Expr:
        """A load of concatenation `name` at `index` (`concat_load`). One whose text would pass
        half the format's 4,096 characters an expression (about 20 slices: the layers a DenseNet
        block concatenates) reads groups of `GROUP` slices instead, each copied once into a buffer
        `<concatenation>_part<k>` (a slice of the concatenation, as its slices are) by a pointwise
        node counted in the kernel of the node that first reads it (`Draft.companions`)."""
        concat = self.grouped.get(name, self.concats[name])
        value = concat_load(concat, index, ctx, self.buffer_name)
        if name in self.grouped or len(to_text(value)) <= MAX_CONCAT_LOAD_TEXT:
            return value
        lay, d = concat.layout, concat.dim
        parts = []
        for k in range(0, len(concat.pieces), GROUP):
            group = concat.pieces[k : k + GROUP]
            shape = tuple(g if i != d else group[-1].end - group[0].start for i, g in enumerate(lay.shape))
            part = Layout(shape, lay.stride, 0, lay.dtype)
            made = f"{name}_part{k // GROUP}"
            syms = [sympy.Symbol(f"x{i}", integer=True, nonnegative=True) for i in range(len(shape))]
            own = NodeContext(made, {s: s.name for s in syms}, dict(zip(syms, shape, strict=True)), 1)
            at = sympy.Add(*(st * s for st, s in zip(lay.stride, syms, strict=True)))
            piece = Concat(name, lay, d, tuple(group))
            self.nodes.append(
                {
                    "name": made,
                    "loops": [[s.name, n] for s, n in zip(syms, shape, strict=True)],
                    "store": to_text(Load(made, own.index(at))),
                    "value": to_text(concat_load(piece, at + group[0].offset, own, self.buffer_name)),
                }
            )
            self.written[made] = part
            self.companions.setdefault(ctx.node, []).append(made)
            parts.append(Piece(made, group[0].start, group[-1].end, group[0].offset))
        self.grouped[name] = Concat(name, lay, d, tuple(parts))
        return concat_load(self.grouped[name], index, ctx, self.buffer_name)

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
            value = self.concat_read(buffer, index, ctx)
            concat = self.grouped.get(buffer, self.concats[buffer])
            self.copies[made] = tuple(self.buffer_name(p.buffer) for p in concat.pieces)
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

    def _extern(self, sn: Any, name: str) -> None:
        import torch._inductor.ir as ir

        node = sn.node
        if isinstance(node, ir.DynamicScalar):
            self._scalar(node, name)
            return
        if isinstance(node, ir.AssertScalar):
            self.dropped.append(name)
            return
        if type(node).__name__ == "DynamicSelectStorageOffset":  # torch 2.13: `x[n.item()]`
            raise CaptureError(
                "a view at a position known only at run time (x[n.item()]) is not supported: "
                "FORMAT views have fixed offsets",
                node=name,
            )
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

    def _scalar(self, node: Any, name: str) -> None:
        """`t.item()` (Inductor's DynamicScalar, a host sync): a 0-d copy of the element, whose
        buffer stands for the Python scalar the program returns."""
        keypath = tuple(getattr(node, "keypath", ()))
        if keypath and [type(k).__name__ for k in keypath] != ["ConvertIntKey"]:  # a bool's item()
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
