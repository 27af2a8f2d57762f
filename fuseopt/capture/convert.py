"""Inductor's scheduler nodes (before fusion) -> a docs/format.md document, while `V.graph` is live.

Buffers keep Inductor's names, layouts and order (graph inputs, then constants, then `V.graph.buffers`);
nodes keep Inductor's names and program order. `Converter` converts compute nodes (their loop
bodies, `fuseopt.capture.body`) here; library calls and the buffers they read are its base
`fuseopt.capture.library.LibraryConverter`; concatenations (a no-op whose inputs were computed
straight into slices of it: each slice its own buffer) `fuseopt.capture.concat`; layouts and what
a graph output is, `fuseopt.capture.layout`. Multi-output reductions: see `fuseopt.capture.body`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from fuseopt.capture.body import (
    NodeContext,
    ReductionPart,
    constant,
    reduction_value,
    run_body,
)
from fuseopt.capture.concat import concat_of
from fuseopt.capture.errors import LIMIT_MESSAGE, CaptureError
from fuseopt.capture.layout import (
    Layout,
    OutputSpec,
    layout_of,
    same_layout,
    static_int,
)
from fuseopt.capture.library import LibraryConverter
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, Load, Masked, Reduce, to_text, tree_size
from fuseopt.ir.parser import MAX_NODES


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
    mutations: dict[str, str] = field(default_factory=dict)  # buffer -> the input it is the new value of
    inlined: list[str] = field(default_factory=list)  # Inductor nodes computed into a copy (`inline_slices`)


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


@dataclass
class Converter(LibraryConverter):
    """Walks the pre-fusion node list; implements `BodyEnv` for the loop bodies (compute nodes
    here, library calls and the buffers they read in `LibraryConverter`)."""

    _current_buffer: str = ""  # the buffer of the compute node being converted
    # the loop sizes and symbols of the compute node being converted (`_make_output` repeats them)
    _current_loops: tuple[list[list[int]], list[Any]] = ([], [])
    # buffer -> the Inductor compute node that writes it; those `_make_output` converted early
    _scheduled: dict[str, str] = field(default_factory=dict)
    _converted_early: set[str] = field(default_factory=set)
    # buffer -> the graph input (Inductor's name) it is the new value of (`_mutation`), and back
    mutations: dict[str, str] = field(default_factory=dict)
    _written_in_place: dict[str, str] = field(default_factory=dict)

    def load(self, name: str, index: sympy.Expr, ctx: NodeContext) -> Expr:
        name = self._written_in_place.get(name, name)  # the input's new value, once written
        if name in self.empties:
            # Memory nothing wrote (`torch.empty`; circular padding writes its output in slices
            # over one): any value is its value, and a correct program never uses it.
            return constant(0, self.empties[name].dtype, node=ctx.node)
        if name in self.concats:
            return self.concat_read(name, index, ctx)
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

    def index_buffer(self, value: Expr, ctx: NodeContext) -> Load:
        """`value` (an integer) at every point of the node's loops (its reduction loops too), in an
        int64 buffer `<node>_index<k>` of their shape written by a pointwise node of that name
        made just before the node (counted in its Inductor kernel, `Draft.companions`), under the
        conditions of the `masked` bodies it is computed in (elsewhere 0, a load not run)."""
        syms = list(ctx.var_ranges)
        sizes = [ctx.var_ranges[s] for s in syms]
        taken = {doc["name"] for doc in self.nodes} | set(self.written) | set(self.renames.values())
        k = 0
        while f"{ctx.node}_index{k}" in taken:
            k += 1
        made = f"{ctx.node}_index{k}"
        strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
        at = Load(made, ctx.index(sympy.Add(0, *(st * s for st, s in zip(strides, syms, strict=True)))))
        for cond in reversed(ctx.masks):
            value = Masked(cond, value, Const(0))
        self.nodes.append(
            {
                "name": made,
                "loops": [[ctx.loop_vars[s], n] for s, n in zip(syms, sizes, strict=True)],
                "store": to_text(at),
                "value": to_text(value),
            }
        )
        self.written[made] = Layout(tuple(sizes), tuple(strides), 0, DType.int64)
        self.companions.setdefault(ctx.node, []).append(made)
        return at

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
            concat = concat_of(sn.node, name)
            self.concats[concat.name] = concat
        elif isinstance(sn.node, ir.Buffer):  # an allocation nothing computes (`torch.empty`)
            self.empties[sn.node.get_name()] = layout_of(sn.node.get_layout(), name)

    def _mutation(self, node: Any, mutated: list[str], name: str) -> str:
        """The graph input that `node` writes in place (`x.add_(y)`, a KV cache's `index_copy_`,
        BatchNorm's running statistics): after functionalization, the one copy of the input's
        final value into it. FORMAT has no aliasing: the node's buffer is that value, an output
        (`meta.capture.mutations` says which input it is the new value of), in the input's layout,
        and a load of the input after it loads the buffer (`load`)."""
        inputs = {k for k, v in self.graph.graph_inputs.items() if not isinstance(v, sympy.Expr)}
        if len(mutated) != 1 or mutated[0] not in inputs:
            raise CaptureError(
                f"in-place writes to {mutated}: only one graph input a node is captured", node=name
            )
        if mutated[0] in self._written_in_place:
            raise CaptureError(
                f"graph input {self.buffer_name(mutated[0])} is written in place twice", node=name
            )
        part, whole = layout_of(node.get_layout(), name), self.layout(mutated[0])
        if not same_layout(part, whole):
            raise CaptureError(
                f"writes {list(part.shape)} of graph input {self.buffer_name(mutated[0])} {list(whole.shape)} in "
                "place (a slice assigned): FORMAT has no aliasing, so only a write of a whole input is captured",
                node=name,
            )
        return mutated[0]

    def _compute(self, sn: Any, name: str) -> None:
        node = sn.node
        mutated = list(node.get_mutation_names())
        target = self._mutation(node, mutated, name) if mutated else None
        sizes = [[static_int(s, "loop size", name) for s in group] for group in sn._sizes]
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
            indirect={sym: Load(buf, Const(0)) for sym, buf in self.scalars.items()},  # item()'s
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
        if tree_size(value, MAX_NODES) > MAX_NODES:  # before writing it, which could take forever
            raise CaptureError(LIMIT_MESSAGE, node=name, code="limit")
        doc["store"] = to_text(store)
        doc["value"] = to_text(value)
        self.written[node.get_name()] = layout_of(node.get_layout(), name)
        self.nodes.append(doc)
        if target is not None:
            self.mutations[node.get_name()] = target
            self._written_in_place[target] = node.get_name()
