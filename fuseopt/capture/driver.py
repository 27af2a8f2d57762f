"""`capture_program(fn, *inputs)`: compile with torch.compile (Inductor), keep what its scheduler saw.

The program is compiled by Dynamo with a backend that records the example inputs and hands the
graph to Inductor's `compile_fx`. Inductor lowers it (under `gpu_emulation()` unless asked not to)
and builds its scheduler; our replacement of `Scheduler.fuse_nodes` converts the nodes as created,
lets Inductor fuse them, records its kernels, and stops the compile there (kernels are never
generated). The result is validated like any input file.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fuseopt.capture.body import dtype_of
from fuseopt.capture.convert import Converter, Draft
from fuseopt.capture.emulate import Emulation, gpu_emulation, has_config
from fuseopt.capture.errors import LIMIT_MESSAGE, CaptureError
from fuseopt.capture.fallbacks import library_fallbacks, pool_offsets_by_the_threshold
from fuseopt.capture.inline import inline_slices
from fuseopt.capture.layout import Layout, OutputSpec, layout_of, output_tensors, resolve
from fuseopt.capture.origins import CallRecord, call_record, input_names, origin_of
from fuseopt.capture.reporting import chain_text, real_cause, torch_log_quiet
from fuseopt.capture.results import draft_results
from fuseopt.capture.specs import describe_tensor
from fuseopt.errors import InputError
from fuseopt.ir.dtypes import DType
from fuseopt.ir.graph import Graph
from fuseopt.ir.models import FORMAT_ID, GRAPH_NAME_PATTERN

if TYPE_CHECKING:
    import torch

BYTES_DEFINITION = (
    "fuseopt's num_bytes_accessed (fuseopt.analysis.metrics.AccessTable.kernel_bytes) summed over "
    "Inductor's kernels"
)


class _Stop(Exception):
    """Raised after fusion to end the compile: nothing past the scheduler is needed."""


@dataclass
class _State:
    placeholders: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # Dynamo's source of each placeholder
    self_name: str | None = None  # the module's `self` in forward, when the program is a module
    arg_names: list[str] = field(default_factory=list)  # the program's positional parameters
    module: str | None = None  # the nn.Module class, when the program is one
    call: CallRecord | None = None
    examples: list[Any] = field(default_factory=list)
    draft: Draft | None = None
    groups: list[list[str]] | None = None
    real_inputs: dict[str, Any] = field(default_factory=dict)
    error: CaptureError | None = None
    device: str = "cpu"


@dataclass(frozen=True)
class Capture:
    """A captured program: the graph, the tensors its inputs held, how to read its outputs back."""

    graph: Graph
    inputs: Mapping[str, torch.Tensor]  # input buffer -> the example tensor (or constant) it held
    outputs: tuple[OutputSpec, ...]  # the program's tensor results, in order (`capture.results`)
    emulation: Emulation | None

    def input_storages(self) -> dict[str, torch.Tensor]:
        """Flat storages for `run_graph`: each input's elements from its data pointer on."""
        import torch

        out: dict[str, torch.Tensor] = {}
        for b in self.graph.inputs:
            t = self.inputs[b.name]
            out[b.name] = torch.as_strided(t, (b.storage_size,), (1,)).detach().cpu().clone()
        return out

    def updated_inputs(self, storages: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The inputs the program writes in place (`meta.capture.mutations`), each its new value
        from `run_graph`'s storages, in the input's layout."""
        import torch

        out = {}
        for m in self.graph.meta["capture"].get("mutations", []):
            b = self.graph.buffer(m["buffer"])
            out[m["input"]] = torch.as_strided(storages[b.name], b.shape, b.stride, b.offset)
        return out

    def program_outputs(self, storages: Mapping[str, torch.Tensor]) -> list[torch.Tensor]:
        """The graph's outputs as tensors, from `run_graph`'s storages (slices of a concatenation
        are added into one storage: they do not overlap, and the interpreter zero-fills)."""
        return output_tensors(self.outputs, storages)


def capture(fn: Callable[..., Any], *example_inputs: Any, name: str | None = None) -> Graph:
    """The fuseopt graph of `fn(*example_inputs)` as Inductor schedules it, with Inductor's own
    fusion result in `graph.meta["inductor"]` (see `capture_program`)."""
    return capture_program(fn, *example_inputs, name=name).graph


def capture_program(
    fn: Callable[..., Any],
    *example_inputs: Any,
    name: str | None = None,
    source: Mapping[str, Any] | None = None,
    emulate_gpu: bool = True,
    inductor_config: Mapping[str, Any] | None = None,
    quiet: bool = True,
) -> Capture:
    """Compile `fn` with torch.compile (Inductor) on `example_inputs` and convert its scheduler nodes.

    Runs under `torch.no_grad()` (an inference graph), with static shapes and one graph
    (`fullgraph=True`). Dynamo's caches are reset before and after. `source` goes to
    `meta["source"]` (default: the function's file, name and input specs). With `emulate_gpu`
    (the default) Inductor plans for a GPU although the tensors are on the CPU. `inductor_config`
    patches `torch._inductor.config` for the compile (e.g. `{"max_fusion_size": 2}`); it is
    recorded in `meta["capture"]["inductor_config"]`. `quiet` (the default) silences torch's log
    while it compiles; a failure's message leads with the innermost cause either way.
    Raises CaptureError when torch.compile fails or the graph uses what FORMAT v1 cannot express.
    """
    from torch._inductor import config

    if name is not None and not re.match(GRAPH_NAME_PATTERN, name):
        raise CaptureError(f"graph name {name!r} is not a name: it must match {GRAPH_NAME_PATTERN}")
    overrides = dict(inductor_config or {})
    unknown = [k for k in overrides if not has_config(config, k)]
    if unknown:
        raise CaptureError(f"unknown Inductor config option(s): {', '.join(sorted(unknown))}")
    meta_source = dict(source) if source is not None else _default_source(fn, example_inputs)
    graph_name = name or _graph_name(getattr(fn, "__name__", "captured"))
    args = (fn, example_inputs, graph_name, meta_source, emulate_gpu, quiet)
    try:
        return _capture_once(*args, overrides)
    except CaptureError as err:
        if err.diagnostics[0].code != "limit" or _NOT_UNROLLED in overrides:
            raise
    # Inductor unrolls a reduction over fewer than `unroll_reductions_threshold` points into one
    # expression (an argmax over 4 classes, a softmax over 3 heads), which repeats its operands
    # past the format's limits; not unrolled, it is a reduction node. Recorded in
    # meta.capture.inductor_config, and Inductor's plan in meta.inductor is the one of that compile.
    try:
        return _capture_once(*args, {**overrides, _NOT_UNROLLED: 1})
    except CaptureError as err:
        if err.diagnostics[0].code != "limit":
            raise
        raise CaptureError(
            f"{err.message}\n(also with Inductor's reductions not unrolled)", code="limit"
        ) from None


_NOT_UNROLLED = "unroll_reductions_threshold"


def _capture_once(
    fn: Callable[..., Any],
    example_inputs: Sequence[Any],
    graph_name: str,
    meta_source: dict[str, Any],
    emulate_gpu: bool,
    quiet: bool,
    overrides: dict[str, Any],
) -> Capture:
    import torch
    from torch._inductor import config

    state = _State()
    _signature(fn, state)
    emulation_cm = gpu_emulation() if emulate_gpu else nullcontext(None)
    torch._dynamo.reset()
    try:
        with (
            emulation_cm as emulation,
            config.patch(overrides),
            library_fallbacks(),
            pool_offsets_by_the_threshold() if _NOT_UNROLLED in overrides else nullcontext(),
            _hooked(state),
            torch.no_grad(),
        ):
            _run(fn, example_inputs, state, quiet)
    finally:
        torch._dynamo.reset()
    if state.error is not None:
        raise state.error
    if state.draft is None or state.groups is None:
        raise CaptureError("Inductor scheduled nothing: the program has no tensor computation to capture")
    state.draft.outputs = draft_results(fn, example_inputs, state.draft, state.real_inputs)
    return _assemble(state, graph_name, meta_source, emulation, overrides)


def _backend_for(state: _State) -> Callable[..., Any]:
    def backend(gm: Any, example_inputs: Sequence[Any]) -> Any:
        from torch._inductor.compile_fx import compile_fx

        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        state.placeholders = [n.name for n in placeholders]
        state.sources = [_source_text(n) for n in placeholders]
        state.examples = list(example_inputs)
        devices = [t.device.type for t in state.examples if hasattr(t, "device")]
        state.device = devices[0] if devices else "cpu"
        return compile_fx(gm, list(example_inputs))

    return backend


def _source_text(node: Any) -> str:
    source = getattr(node.meta.get("grapharg"), "source", None)
    if source is None:
        return ""
    name = source.name
    return str(name() if callable(name) else name)


def _signature(fn: Callable[..., Any], state: _State) -> None:
    """The program's positional parameter names, and `self`'s name when it is an nn.Module (or a
    bound method of one): Dynamo names graph inputs after them (`L['x']`, `L['self']._modules...`)."""
    import torch

    target: Any = fn
    if isinstance(fn, torch.nn.Module):
        target = type(fn).forward
        state.module = type(fn).__qualname__
    elif isinstance(getattr(fn, "__self__", None), torch.nn.Module):
        target = fn.__func__  # type: ignore[attr-defined]
        state.module = type(fn.__self__).__qualname__  # type: ignore[attr-defined]
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in params if p.kind in kinds]
    if state.module is not None and names:
        state.self_name, names = names[0], names[1:]
    state.arg_names = names


def _run(fn: Callable[..., Any], inputs: Sequence[Any], state: _State, quiet: bool) -> None:
    import torch

    try:
        with torch_log_quiet(quiet):
            torch.compile(fn, backend=_backend_for(state), fullgraph=True, dynamic=False)(*inputs)
    except Exception as exc:
        if state.error is not None or state.draft is not None:
            return
        err = CaptureError(f"torch.compile could not capture the program: {real_cause(exc)}")
        err.details = chain_text(exc)
        raise err from exc


@contextmanager
def _hooked(state: _State) -> Iterator[None]:
    """Replace Scheduler.fuse_nodes for the duration: convert before fusion, record after, stop."""
    from torch._inductor import scheduler

    original = scheduler.Scheduler.fuse_nodes

    def fuse_nodes(self: Any, nodes: list[Any]) -> list[Any]:
        if state.draft is not None or state.error is not None:
            return original(self, nodes)  # a second graph: never reached with fullgraph=True
        try:
            draft, real = _convert(nodes, state)
        except CaptureError as err:
            state.error = err
            raise _Stop() from None
        fused = original(self, nodes)
        state.groups = [[n.get_name() for n in group.get_nodes()] for group in fused]
        state.draft, state.real_inputs = draft, real
        raise _Stop()

    scheduler.Scheduler.fuse_nodes = fuse_nodes  # type: ignore[method-assign]
    try:
        yield
    finally:
        scheduler.Scheduler.fuse_nodes = original  # type: ignore[method-assign]


def _convert(nodes: list[Any], state: _State) -> tuple[Draft, dict[str, Any]]:
    import sympy
    from torch._inductor.virtualized import V

    graph = V.graph
    names = list(graph.graph_input_names)
    if len(names) != len(state.examples):
        raise CaptureError(
            f"Inductor has {len(names)} graph inputs for {len(state.examples)} example inputs "
            "(aliased or duplicated inputs are not supported)"
        )
    placeholders = state.placeholders + [""] * (len(names) - len(state.placeholders))
    sources = state.sources + [""] * (len(names) - len(state.sources))
    origins = [
        origin_of(src, state.self_name, state.arg_names, ph)
        for src, ph in zip(sources, placeholders, strict=True)
    ]
    renames = input_names(names, origins, state.arg_names)
    n_args = len(state.arg_names)
    conv = Converter(graph, renames)
    # a scalar (a symbol) or a tensor of no elements is no input buffer (FORMAT has no such buffer)
    tensors = [
        i
        for i, n in enumerate(names)
        if not isinstance(graph.graph_inputs[n], sympy.Expr) and not conv.layout(n).empty
    ]
    state.call = call_record(
        [names[i] for i in tensors], [origins[i] for i in tensors], renames, n_args, state.module
    )
    conv.run(nodes)
    if not conv.nodes:
        raise CaptureError(
            "the program computes nothing FORMAT can hold: every result is an input, a view of one, "
            "a constant or a tensor of no elements"
        )

    outputs = [_output_spec(conv, o) for o in graph.graph_outputs]
    # an output's buffer, or its concatenation's slices (the concatenation is no buffer)
    output_buffers = {b for o in outputs for b, _ in o.pieces} | {o.buffer for o in outputs if o.buffer}
    output_buffers |= set(conv.mutations)  # an input's new value is an output of the program too
    position = {d["name"]: i for i, d in enumerate(conv.nodes)}
    by_copy = inline_slices(conv.nodes, conv.copies, conv.written, output_buffers)
    for copy, writers in by_copy.items():
        # the copy computes the slices in the kernel of their last writer, not in the reader's
        reader = next(r for r, made in conv.companions.items() if copy in made)
        conv.companions[reader].remove(copy)
        conv.companions.setdefault(max(writers, key=position.__getitem__), []).append(copy)
    inlined = sorted((w for ws in by_copy.values() for w in ws), key=position.__getitem__)
    kept = {d["store"].partition("[")[0] for d in conv.nodes if "store" in d} | conv.library_written

    buffers: dict[str, dict[str, Any]] = {}
    real: dict[str, Any] = {}
    inputs: dict[str, str] = {}
    for i in tensors:
        gname = names[i]
        value = graph.graph_inputs[gname]
        ours = renames[gname]
        buffers[ours] = _buffer_doc(
            conv.declared_layout(gname, layout_of(value.get_layout(), gname)), "input"
        )
        real[ours] = state.examples[i]
        inputs[ours] = gname
    for cname in conv.constants_used:
        t = graph.constants[cname]
        lay = Layout(tuple(t.shape), tuple(t.stride()), 0, dtype_of(t.dtype, node=cname))
        buffers[cname] = _buffer_doc(conv.declared_layout(cname, lay), "input")
        real[cname] = t
        inputs[cname] = cname
    order = [b.get_name() for b in graph.buffers]
    written = sorted(conv.written, key=lambda b: order.index(b) if b in order else len(order))
    for bname in (b for b in written if b in kept):
        role = "output" if bname in output_buffers else "intermediate"
        buffers[bname] = _buffer_doc(conv.declared_layout(bname, conv.written[bname]), role)
    draft = Draft(
        buffers=buffers,
        nodes=conv.nodes,
        inputs=inputs,
        constants=list(conv.constants_used),
        outputs=outputs,
        dropped=conv.dropped,
        companions=conv.companions,
        mutations={b: renames[i] for b, i in conv.mutations.items()},
        inlined=inlined,
    )
    return draft, real


def _output_spec(conv: Converter, out: Any) -> OutputSpec:
    import sympy

    expr = getattr(out, "expr", out)  # ShapeAsConstantBuffer wraps a symbol
    if isinstance(expr, sympy.Eq) and expr.args[0] in conv.scalars and expr.args[1] == 1:
        expr = expr.args[0]  # a bool's item(): Eq(u, 1) of the int its symbol stands for
        if conv.written[conv.scalars[expr]].dtype != DType.bool:
            raise CaptureError(f"graph output {out.expr} is not a buffer")
    if isinstance(expr, sympy.Basic) and expr in conv.scalars:  # item()'s Python scalar: its 0-d buffer
        name = conv.scalars[expr]
        return OutputSpec(name, conv.written[name])
    try:
        name, layout = resolve(out)
    except (AttributeError, NotImplementedError) as exc:
        raise CaptureError(f"graph output {type(out).__name__} is not a buffer: {exc}") from None
    lay = layout_of(layout, name)
    if lay.empty:
        return OutputSpec(None, lay)
    if name in conv.concats:
        c = conv.concats[name]
        return OutputSpec(name, lay, tuple((p.buffer, p.offset) for p in c.pieces))
    if name not in conv.written and name not in conv.renames and name not in conv.constants_used:
        raise CaptureError(f"graph output {name} is not computed by any captured node")
    # a graph input written in place (`x.add_(1); return x`): its final value is the buffer of its
    # new value (FORMAT has no aliasing), in the input's layout
    new_value = next((b for b, i in conv.mutations.items() if i == name), None)
    return OutputSpec(new_value or conv.buffer_name(name), lay)


def _buffer_doc(lay: Layout, role: str) -> dict[str, Any]:
    d: dict[str, Any] = {"shape": list(lay.shape), "stride": list(lay.stride)}
    if lay.offset:
        d["offset"] = lay.offset
    d["dtype"] = lay.dtype.value
    if role != "intermediate":
        d["role"] = role
    return d


def _graph_name(fn_name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]", "_", fn_name)[:64] or "captured"
    return s if re.match(GRAPH_NAME_PATTERN, s) else f"g_{s}"[:64]


def _default_source(fn: Callable[..., Any], inputs: Sequence[Any]) -> dict[str, Any]:
    try:
        path = inspect.getsourcefile(fn) or ""
    except TypeError:
        path = ""
    if path:
        rel = os.path.relpath(path)
        path = rel if not rel.startswith("..") else os.path.basename(path)
    return {
        "file": path.replace(os.sep, "/"),
        "function": getattr(fn, "__qualname__", getattr(fn, "__name__", "?")),
        "inputs": [describe_tensor(t) for t in inputs],
    }


def _assemble(
    state: _State, name: str, source: dict[str, Any], emulation: Emulation | None, overrides: dict[str, Any]
) -> Capture:
    import torch

    from fuseopt.analysis.metrics import AccessTable

    draft = state.draft
    assert draft is not None and state.groups is not None
    capture_meta: dict[str, Any] = {
        "torch": torch.__version__.split("+")[0],
        "device": state.device,
        "gpu_emulation": emulation is not None,
    }
    if overrides:
        capture_meta["inductor_config"] = {k: overrides[k] for k in sorted(overrides)}
    if emulation is not None and emulation.missing:
        capture_meta["emulation_missing"] = list(emulation.missing)
    capture_meta["inputs"] = {
        b: ("constant" if b in draft.constants else f"graph input {g}") for b, g in draft.inputs.items()
    }
    if state.call is not None:
        capture_meta["call"] = state.call.to_json()
    capture_meta["outputs"] = [o.to_json() for o in draft.outputs]
    if draft.dropped:
        capture_meta["dropped_nodes"] = list(draft.dropped)
    if draft.mutations:
        capture_meta["mutations"] = [{"buffer": b, "input": i} for b, i in draft.mutations.items()]
    if draft.inlined:
        capture_meta["inlined_nodes"] = list(draft.inlined)
    doc: dict[str, Any] = {
        "format": FORMAT_ID,
        "name": name,
        "description": (
            f"Captured by fuseopt from {source.get('file') or '?'}:{source.get('function', '?')} with "
            f"torch {capture_meta['torch']}: Inductor's scheduler nodes before fusion"
            + (" (planned as for a GPU)." if emulation is not None else f" on {state.device}.")
        ),
        "buffers": draft.buffers,
        "nodes": draft.nodes,
        "meta": {"source": source, "capture": capture_meta},
    }
    graph = _validated(doc, name)
    present = {n.name for n in graph.nodes}
    # a node made beside an Inductor node runs in its kernel (Draft.companions)
    made = draft.companions
    kernels = [[m for n in group for m in (*made.get(n, ()), n) if m in present] for group in state.groups]
    # a kernel whose nodes were all computed into a concatenation's copy (`inline_slices`) still
    # ran in Inductor: it counts, with the copy's bytes in the copy's kernel
    launched = sum(1 for k, g in zip(kernels, state.groups, strict=True) if k or set(g) & set(draft.inlined))
    kernels = [k for k in kernels if k]
    table = AccessTable(graph)
    doc["meta"]["inductor"] = {
        "kernels": kernels,
        "kernel_count": launched,
        "num_bytes_accessed": sum(table.kernel_bytes(k) for k in kernels),
        "bytes_definition": BYTES_DEFINITION,
    }
    graph = _validated(doc, name)
    inputs = {b: state.real_inputs[b] for b in draft.inputs}
    return Capture(graph=graph, inputs=inputs, outputs=tuple(draft.outputs), emulation=emulation)


_TEXT_LIMIT = "String should have at most 4096 characters"  # pydantic's message for an expression


def _validated(doc: Mapping[str, Any], name: str) -> Graph:
    """The document as a graph, checked like any input file. A failure here is a converter bug."""
    import json

    from fuseopt.io.load import load_text

    try:
        return load_text(json.dumps(doc, indent=1, allow_nan=False), f"<capture of {name}>")
    except InputError as err:
        rendered = "\n".join(d.render() for d in err.diagnostics)
        if all(d.code == "limit" or _TEXT_LIMIT in d.message for d in err.diagnostics):
            raise CaptureError(LIMIT_MESSAGE + "\n" + rendered, code="limit") from None
        raise CaptureError(
            "the captured graph does not validate (a bug of fuseopt capture; please report it with the "
            "program):\n" + rendered
        ) from None
