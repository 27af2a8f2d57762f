"""A captured program bound to its graph: eager and torch.compile of the same model, same weights.

A captured graph's inputs are the program's arguments *and* the parameters, buffers and constants
that torch.compile lifted into graph inputs (`mlp_fc1_weight`, ...). The program itself is called
with its arguments only; its weights are the module's own. `bind_program` rebuilds the arguments
the graph records (`meta.source`: input specs, layouts, seed) and finds the tensor behind every
input buffer: by the module paths `meta.capture.call` records (`bind_recorded`: the program is the
captured module, or a function whose globals hold the modules), else by capturing the program
again and checking that the capture has the graph's input buffers (`bind_capture`; the only way
to a constant's value). The bound tensors are the arguments and the module's parameters and
buffers themselves; the benchmark gives them to all variants, so fuseopt's module, eager and
torch.compile run the same model on the same weights. The library calls (convolution, mm, attention) are the same ATen
operators in all three: the graph's extern nodes are Inductor's, called on the same views.

Nothing here reads code from a graph file: the program comes from the command line
(`--source FILE.py:FUNCTION`) or from the caller (the API).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from fuseopt.capture.layout import output_tensors
from fuseopt.errors import CheckFailed, InputError
from fuseopt.ir.graph import Graph

if TYPE_CHECKING:
    from fuseopt.capture import Capture
    from fuseopt.capture.layout import OutputSpec


@dataclass(frozen=True)
class BoundProgram:
    """`fn` called with the graph's user inputs; every input buffer's tensor in `tensors`."""

    graph: Graph
    fn: Callable[..., Any]
    arguments: tuple[str, ...]  # the input buffers that are fn's positional arguments, in order
    tensors: Mapping[str, torch.Tensor]  # input buffer -> the tensor it is (weights: the module's own)
    outputs: tuple[OutputSpec, ...]  # fn's tensor results, in order, as views of the graph's buffers
    layouts: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()  # each argument's shape, stride
    # (input buffer, buffer of its new value): the inputs the program writes in place
    mutations: tuple[tuple[str, str], ...] = ()

    @property
    def weights(self) -> tuple[str, ...]:
        """The input buffers that are not arguments: parameters, buffers, constants."""
        return tuple(b.name for b in self.graph.inputs if b.name not in self.arguments)

    def input_storages(self) -> dict[str, torch.Tensor]:
        """Flat storages of every input buffer (copies), for the reference and fuseopt's module."""
        out: dict[str, torch.Tensor] = {}
        for b in self.graph.inputs:  # as `Capture.input_storages`: from the tensor's first element on
            t = self.tensors[b.name].detach()
            out[b.name] = torch.as_strided(t, (b.storage_size,), (1,)).cpu().clone()
        return out

    def arguments_of(self, views: Mapping[str, torch.Tensor]) -> list[torch.Tensor]:
        """The program's arguments on the benchmark's input storages. A buffer may be declared with
        another layout than the argument's (an extern reads it through a view), so each argument is
        rebuilt with its own shape and strides from the start of its buffer's storage."""
        args = []
        for name, (shape, stride) in zip(self.arguments, self.layouts, strict=True):
            view = views[name]
            start = view.storage_offset() - self.graph.buffer(name).offset
            args.append(torch.as_strided(view, shape, stride, start))
        return args

    def to(self, device: torch.device) -> None:
        """Move the weights onto `device` in place (as `nn.Module.to` does: `.data` is replaced),
        so that the program runs there; arguments are given per call."""
        for name in self.weights:
            t = self.tensors[name]
            if t.device != device:
                t.data = t.data.to(device)

    def _storage(self, name: str, views: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The flat storage the program reads input `name` from: an argument's is the benchmark's
        (under `views`), a weight's the module's own tensor's, from its first element on."""
        b = self.graph.buffer(name)
        if name in self.arguments:
            v = views[name]
            return torch.as_strided(v, (b.storage_size,), (1,), v.storage_offset() - b.offset)
        return torch.as_strided(self.tensors[name].data, (b.storage_size,), (1,))

    def restore_inputs(self, views: Mapping[str, torch.Tensor], storages: Mapping[str, torch.Tensor]) -> None:
        """Put back the value in `storages` of every input the program writes in place, so that
        each checked run starts from the inputs the reference ran on (a timed run before it, or an
        earlier benchmark of the same module, has written them)."""
        with torch.no_grad():
            for name, _ in self.mutations:
                self._storage(name, views).copy_(storages[name])

    def check_updated_inputs(
        self, views: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor]
    ) -> None:
        """Each input the program wrote in place against the reference's buffer of its new value,
        with the tolerances `fuseopt run` uses for that buffer."""
        from fuseopt.interp import logical_view
        from fuseopt.runtime.compare import value_tolerances

        problems = []
        for name, new in self.mutations:
            got = logical_view(self.graph, name, self._storage(name, views).detach().cpu())
            want = logical_view(self.graph, new, expected[new])
            why = _mismatch(got, want, value_tolerances(self.graph, self.graph.buffer(new)))
            if why:
                problems.append(f"input {name} written in place (new value {new}): {why}")
        if problems:
            raise CheckFailed("; ".join(problems))

    def __call__(self, views: Mapping[str, torch.Tensor]) -> list[Any]:
        with torch.no_grad():
            return _tensors(self.fn(*self.arguments_of(views)))

    def compiled(self, views: Mapping[str, torch.Tensor], backend: str = "inductor") -> Any:
        """torch.compile of the program itself (Inductor on the same model and weights)."""
        fn = torch.compile(self.fn, backend=backend)

        def run(v: Mapping[str, torch.Tensor]) -> list[Any]:
            with torch.no_grad():
                return _tensors(fn(*self.arguments_of(v)))

        return run

    def check(self, got: Sequence[Any], expected: Mapping[str, torch.Tensor]) -> None:
        """The program's results against the reference's output storages, output by output, with
        the tolerances `fuseopt run` uses for the buffer behind each."""
        from fuseopt.runtime.compare import value_tolerances

        want = output_tensors(self.outputs, expected)
        pairs = _paired(got, self.outputs)
        if pairs is None:
            n = sum(isinstance(r, torch.Tensor) for r in got)
            raise CheckFailed(
                f"the program returned {n} tensors and {len(got) - n} numbers, the graph has "
                f"{len(want)} outputs"
            )
        problems = []
        for g, i in pairs:
            w, spec = want[i], self.outputs[i]
            buffer = spec.pieces[0][0] if spec.pieces else spec.buffer
            tolerances = (
                (0.0, 0.0) if buffer is None else value_tolerances(self.graph, self.graph.buffer(buffer))
            )
            why = _mismatch(g.detach().cpu(), w, tolerances)
            if why:
                problems.append(f"output {i} ({spec.buffer}): {why}")
        if problems:
            raise CheckFailed("; ".join(problems))


def _mismatch(got: torch.Tensor, want: torch.Tensor, tolerances: tuple[float | None, float | None]) -> str:
    """The first lines of assert_close's report where `got` (cast to `want`'s dtype, any strides)
    is not within (rtol, atol) of `want`, NaN matching NaN; empty where it is."""
    rtol, atol = tolerances
    try:
        torch.testing.assert_close(
            got.to(want.dtype), want, rtol=rtol, atol=atol, equal_nan=True, check_stride=False
        )
    except AssertionError as exc:
        return " ".join([ln for ln in str(exc).splitlines() if ln.strip()][:3])
    return ""


def _tensors(result: Any) -> list[Any]:
    """A program's results in order (a tensor, or a pytree of them, e.g. a tuple): tensors and
    Python numbers (`.item()`'s), as `capture.results` reads them."""
    from torch.utils._pytree import tree_leaves

    return [t for t in tree_leaves(result) if isinstance(t, torch.Tensor | int | float)]


def _paired(got: Sequence[Any], specs: Sequence[OutputSpec]) -> list[tuple[torch.Tensor, int]] | None:
    """Each result with the index of its output spec, as `capture.results` paired them: a tensor
    takes the next spec; a Python number the next spec where it is 0-d (the output Inductor
    gives `.item()`'s value), else none (a constant the program returns itself). None where the
    results and the specs do not pair up."""
    pairs: list[tuple[torch.Tensor, int]] = []
    k = 0
    for r in got:
        if not isinstance(r, torch.Tensor):
            if k < len(specs) and specs[k].layout.shape == ():
                pairs.append((torch.tensor(r), k))
                k += 1
            continue
        if k == len(specs):
            return None
        pairs.append((r, k))
        k += 1
    return pairs if k == len(specs) else None


def is_captured(graph: Graph) -> bool:
    """Whether the graph records how its program was called (`fuseopt capture`'s meta.source)."""
    src = graph.meta.get("source")
    return isinstance(src, Mapping) and isinstance(src.get("inputs"), list)


def source_arguments(graph: Graph) -> list[torch.Tensor]:
    """The program's arguments as the capture made them: `meta.source`'s input specs, layouts and
    seed (what `fuseopt capture --input/--layout/--seed` recorded)."""
    from fuseopt.capture.specs import make_inputs, parse_spec

    src = graph.meta.get("source")
    specs = src.get("inputs") if isinstance(src, Mapping) else None
    if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
        raise InputError(
            f"graph {graph.name}: meta.source.inputs does not list the program's input specs, so the "
            "program's arguments cannot be rebuilt (capture it with `fuseopt capture --input ...`)"
        )
    layouts = src.get("layouts") if isinstance(src, Mapping) else None
    if not isinstance(layouts, list) or len(layouts) != len(specs):
        layouts = ["contiguous"] * len(specs)
    seed = src.get("seed", 0) if isinstance(src, Mapping) else 0
    return make_inputs(
        [parse_spec(s, str(lay)) for s, lay in zip(specs, layouts, strict=True)],
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else 0,
    )


def bind_program(
    graph: Graph, fn: Callable[..., Any], arguments: Sequence[torch.Tensor] | None = None
) -> BoundProgram:
    """Bind every input buffer of `graph` to the tensor behind it in `fn(*arguments)` (default:
    the arguments `meta.source` records): by the module paths `meta.capture.call` records when
    they name every weight (`bind_recorded`), else by capturing `fn` again. Raises InputError when the capture's input
    buffers are not the graph's (another program, other shapes, or an edited graph)."""
    from fuseopt.capture import CaptureError, capture_program

    args = list(arguments) if arguments is not None else source_arguments(graph)
    recorded = bind_recorded(graph, fn, args)
    if recorded is not None:
        return recorded
    try:
        cap = capture_program(fn, *args, source=dict(graph.meta.get("source") or {}) or None)
    except CaptureError as err:
        raise InputError(
            f"graph {graph.name} is not the capture of this program on the arguments meta.source records "
            f"({', '.join(describe_tensor_text(a) for a in args)}): capturing it again failed: "
            + "; ".join(d.message for d in err.diagnostics)
        ) from None
    return bind_capture(graph, fn, args, cap)


def bind_capture(
    graph: Graph, fn: Callable[..., Any], args: Sequence[torch.Tensor], cap: Capture
) -> BoundProgram:
    """Bind `graph`'s input buffers to the tensors of `cap`, the capture of `fn(*args)` (which the
    graph may be a saved copy of)."""
    _same_inputs(graph, cap.graph)
    by_id: dict[int, list[int]] = {}
    for i, t in enumerate(args):
        by_id.setdefault(id(t), []).append(i)
    named: dict[int, str] = {}
    for b in graph.inputs:
        for i in by_id.get(id(cap.inputs[b.name]), []):  # one tensor passed twice: one input
            named[i] = b.name
    # an argument that no node reads is not a graph input: the program still takes it
    missing = [i for i in range(len(args)) if i not in named]
    if missing:
        raise InputError(
            f"graph {graph.name}: argument(s) {missing} of the program are not graph inputs (unused by "
            "the captured computation); bench needs every argument as an input buffer"
        )
    outputs = {b.name for b in graph.outputs}
    for spec in cap.outputs:
        for name in [p for p, _ in spec.pieces] or ([spec.buffer] if spec.buffer is not None else []):
            if name not in outputs and graph.buffer(name).role != "input":
                raise InputError(f"graph {graph.name}: the program's result {name} is not an output buffer")
    return BoundProgram(
        graph=graph,
        fn=fn,
        arguments=tuple(named[i] for i in range(len(args))),
        tensors={b.name: cap.inputs[b.name] for b in graph.inputs},
        outputs=cap.outputs,
        layouts=tuple((tuple(t.shape), tuple(t.stride())) for t in args),
        mutations=recorded_mutations(graph),
    )


def bind_recorded(graph: Graph, fn: Callable[..., Any], args: Sequence[torch.Tensor]) -> BoundProgram | None:
    """Bind by `meta.capture.call` (argument buffers in order, parameter and buffer module paths):
    paths are looked up on `fn` when it is the captured `nn.Module`, else on the module a path's
    first name is in `fn`'s globals (`MLP.fc1.weight`). None when the record does not cover every
    input (a constant's value is only in a capture) or a path does not resolve."""
    from fuseopt.capture.layout import Layout, OutputSpec
    from fuseopt.ir.dtypes import DType

    capture = graph.meta.get("capture")
    call = capture.get("call") if isinstance(capture, Mapping) else None
    if not isinstance(call, Mapping) or not isinstance(call.get("args"), list):
        return None
    names = call["args"]
    if not _names_the_program(graph, fn, call.get("module")):
        return None  # another program (or renamed): only a capture tells
    if len(names) != len(args) or not all(isinstance(n, str) and graph.has_buffer(n) for n in names):
        return None
    paths = {**dict(call.get("parameters") or {}), **dict(call.get("buffers") or {})}
    tensors: dict[str, torch.Tensor] = dict(zip(names, args, strict=True))
    for b in graph.inputs:
        if b.name not in tensors:
            t = _resolve(fn, call.get("module"), paths.get(b.name))
            if t is None:
                return None
            tensors[b.name] = t
    for b in graph.inputs:
        t = tensors[b.name]
        room = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
        if str(t.dtype).removeprefix("torch.") != b.dtype.value or room < b.storage_size:
            raise InputError(
                f"graph {graph.name}: input {b.name} ({paths.get(b.name, 'an argument')}) is "
                f"{describe_tensor_text(t)} in the program, not the graph's {b.dtype.value}{list(b.shape)}"
            )
    specs = []
    for o in capture.get("outputs") or []:  # type: ignore[union-attr]
        lay = Layout(tuple(o["shape"]), tuple(o["stride"]), int(o.get("offset", 0)), DType(o["dtype"]))
        pieces = tuple((p["buffer"], int(p["offset"])) for p in o.get("pieces", []))
        specs.append(OutputSpec(o["buffer"], lay, pieces))
    return BoundProgram(
        graph=graph,
        fn=fn,
        arguments=tuple(names),
        tensors=tensors,
        outputs=tuple(specs),
        layouts=tuple((tuple(t.shape), tuple(t.stride())) for t in args),
        mutations=recorded_mutations(graph),
    )


def recorded_mutations(graph: Graph) -> tuple[tuple[str, str], ...]:
    """`meta.capture.mutations` as (input buffer, buffer of its new value) pairs. Raises
    InputError, naming the entry, where one does not pair an input with an output buffer of the
    same shape and dtype."""
    capture = graph.meta.get("capture")
    entries = capture.get("mutations", []) if isinstance(capture, Mapping) else []
    pairs = []
    for i, m in enumerate(entries if isinstance(entries, list) else [entries]):
        names = (m.get("input"), m.get("buffer")) if isinstance(m, Mapping) else (None, None)
        ok = all(isinstance(n, str) and graph.has_buffer(n) for n in names)
        if ok:
            old, new = graph.buffer(str(names[0])), graph.buffer(str(names[1]))
            ok = (
                old.role == "input"
                and new.role == "output"
                and (old.shape, old.dtype) == (new.shape, new.dtype)
            )
        if not ok:
            raise InputError(
                f"graph {graph.name}: meta.capture.mutations[{i}] does not pair an input buffer with the "
                "output buffer of its new value (same shape and dtype)"
            )
        pairs.append((str(names[0]), str(names[1])))
    return tuple(pairs)


def _names_the_program(graph: Graph, fn: Callable[..., Any], module_class: Any) -> bool:
    from torch import nn

    if isinstance(fn, nn.Module):
        return bool(module_class == type(fn).__name__)
    src = graph.meta.get("source")
    function = src.get("function") if isinstance(src, Mapping) else None
    return function in (getattr(fn, "__name__", None), getattr(fn, "__qualname__", None))


def _resolve(fn: Callable[..., Any], module_class: Any, path: str | None) -> torch.Tensor | None:
    """The parameter or buffer at a module path, on `fn` or on the global its path starts with.
    The path is graph-file text: each part must be a plain name or index (no `__`), and it is
    followed through the modules' own `_modules`, `_parameters` and `_buffers` dicts, never getattr."""
    from torch import nn

    if not isinstance(path, str) or not path:
        return None
    parts = path.split(".")
    if not all(_PATH_PART.match(p) for p in parts):
        return None
    if isinstance(fn, nn.Module) and module_class == type(fn).__name__:
        root: Any = fn
    else:
        globals_ = getattr(fn, "__globals__", None)
        root = globals_.get(parts.pop(0)) if isinstance(globals_, dict) else None
    if not isinstance(root, nn.Module) or not parts:
        return None
    for part in parts[:-1]:
        root = root._modules.get(part)
        if not isinstance(root, nn.Module):
            return None
    leaf = parts[-1]
    t = root._parameters.get(leaf) if leaf in root._parameters else root._buffers.get(leaf)
    return t if isinstance(t, torch.Tensor) else None


_PATH_PART = re.compile(r"^(?!.*__)[A-Za-z0-9_]{1,64}$")


def describe_tensor_text(t: torch.Tensor) -> str:
    dtype = str(t.dtype).removeprefix("torch.")
    return f"{dtype}[{','.join(str(d) for d in t.shape)}]"


def _same_inputs(graph: Graph, captured: Graph) -> None:
    def layout(g: Graph) -> dict[str, tuple[Any, ...]]:
        return {b.name: (b.shape, b.stride, b.offset, b.dtype) for b in g.inputs}

    want, got = layout(graph), layout(captured)
    if want == got:
        return
    diff = sorted(set(want) ^ set(got)) or sorted(n for n in want if want[n] != got[n])
    raise InputError(
        f"graph {graph.name} is not the capture of this program on the arguments meta.source records: "
        f"input buffers differ ({', '.join(diff[:8])}{', ...' if len(diff) > 8 else ''}); "
        "capture it again from the program"
    )
