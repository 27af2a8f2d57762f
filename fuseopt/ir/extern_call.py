"""Extension 1.1: an extern node's `args`/`kwargs`/`outputs` -> a checked `AtenCall`.

Every error is located under the node (`/nodes/3/args/1/0`): the op (registry, functional, not
random), the views (the buffer exists and is read after it is written, the view lies inside its
storage and reads only elements of a written buffer), the outputs (non-input buffers, each once,
each view covering its buffer exactly), the binding against the op's schema, and the results'
shapes and dtypes from meta tensors. torch is imported only for graphs that use the extension.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fuseopt.errors import DiagnosticSink
from fuseopt.ir import models
from fuseopt.ir.coverage import view_bounds_problem, view_cover_problem, view_read_problem
from fuseopt.ir.graph import AtenCall, BufferInfo, LibraryNode, View

_V1_FIELDS = ("inputs", "output")
_CALL_FIELDS = ("args", "kwargs", "outputs")


def mixed_fields(raw: models.ExternNode, ptr: str, sink: DiagnosticSink) -> bool:
    """Whether the node mixes v1 `inputs`/`output` with 1.1 `args`/`kwargs`/`outputs` (reported),
    or lacks what its kind of call needs."""
    v1 = [f for f in _V1_FIELDS if getattr(raw, f) is not None]
    call = [f for f in _CALL_FIELDS if getattr(raw, f) is not None]
    if v1 and call:
        sink.add(
            f"an extern node uses either inputs/output (v1) or args/kwargs/outputs (extension 1.1), "
            f"not both: drop {', '.join(v1)} or {', '.join(call)}",
            f"{ptr}/{call[0]}",
            code="fields",
        )
        return True
    if call:
        if raw.outputs is None:
            sink.add("an extension-1.1 call needs `outputs`: one entry per result", ptr, code="fields")
            return True
        if "." not in raw.op:
            sink.add(
                f"with args/outputs, op names an ATen operator (namespace.name.overload, e.g. "
                f"aten.{raw.op}.default), not {raw.op!r}",
                f"{ptr}/op",
                code="op",
            )
            return True
        return False
    missing = [f for f in _V1_FIELDS if getattr(raw, f) is None]
    if missing:
        sink.add(
            f"an extern node needs inputs and output (v1), or args and outputs (extension 1.1); "
            f"{' and '.join(missing)} missing",
            ptr,
            code="fields",
        )
        return True
    if "." in raw.op:
        sink.add(
            f"{raw.op} is an ATen operator: call it with args/kwargs/outputs (inputs/output are for "
            "the v1 ops mm, bmm, addmm)",
            f"{ptr}/op",
            code="op",
        )
        return True
    return False


def build_call(
    raw: models.ExternNode,
    ptr: str,
    bufmap: Mapping[str, BufferInfo],
    written: Mapping[str, str],
    targets: set[str],
    sink: DiagnosticSink,
) -> LibraryNode | None:
    from fuseopt.ir import aten_ops

    n_errors = len(sink.items)
    operator = None
    try:
        operator = aten_ops.resolve_op(raw.op)
    except aten_ops.CallProblem as p:
        sink.add(p.message, f"{ptr}/{p.where}", code="op")
    reads = _Reads(bufmap, written, targets, sink)
    args = tuple(reads.resolve(a, f"{ptr}/args/{j}") for j, a in enumerate(raw.args or ()))
    kwargs = {k: reads.resolve(v, f"{ptr}/kwargs/{_escape(k)}") for k, v in (raw.kwargs or {}).items()}
    outputs = _outputs(raw.outputs or (), ptr, bufmap, sink)
    if operator is None or len(sink.items) != n_errors:
        return None
    try:
        bound_args, bound_kwargs = aten_ops.bind(operator, args, kwargs)
        call = AtenCall(raw.op, bound_args, bound_kwargs, outputs)
        aten_ops.check_results(operator, call, lambda b: bufmap[b].dtype)
    except aten_ops.CallProblem as p:
        sink.add(p.message, f"{ptr}/{p.where}" if p.where else ptr, code="call")
        return None
    inputs = tuple(dict.fromkeys(v.buffer for v in call.views()))
    first = next(v.buffer for v in outputs if v is not None)
    return LibraryNode(raw.name, raw.kind, raw.op, inputs, first, call=call)


def call_targets(raw: models.ExternNode, roles: Mapping[str, str]) -> list[tuple[str, str]]:
    """(buffer, pointer suffix) of each non-input buffer the call's `outputs` name."""
    out = []
    for j, o in enumerate(raw.outputs or ()):
        name = o if isinstance(o, str) else o.buffer if o is not None else None
        if name is not None and roles.get(name, "input") != "input":
            out.append((name, f"outputs/{j}"))
    return out


class _Reads:
    """Resolves the call's tensor arguments to views, reporting bad ones where they are."""

    def __init__(
        self,
        bufmap: Mapping[str, BufferInfo],
        written: Mapping[str, str],
        targets: set[str],
        sink: DiagnosticSink,
    ) -> None:
        self.bufmap, self.written, self.targets, self.sink = bufmap, written, targets, sink

    def resolve(self, arg: Any, ptr: str) -> Any:
        if isinstance(arg, tuple):
            return tuple(self.resolve(a, f"{ptr}/{j}") for j, a in enumerate(arg))
        if not isinstance(arg, models.TensorView):
            return arg
        b = self.bufmap.get(arg.buffer)
        if b is None:
            self.sink.add(f"unknown buffer {arg.buffer!r}", f"{ptr}/buffer", code="name")
            return None
        if b.role != "input" and b.name not in self.written:
            if b.name in self.targets:
                self.sink.add(
                    f"{b.name!r} is read before it is written (program order)", f"{ptr}/buffer", code="order"
                )
            else:
                self.sink.add(f"{b.name!r} is never written", f"{ptr}/buffer", code="order")
            return None
        v = _view(arg, b)
        problem = view_bounds_problem(v, b) or (None if b.role == "input" else view_read_problem(v, b))
        if problem is not None:
            self.sink.add(problem, ptr, code="bounds")
        return v


def _view(arg: models.TensorView, b: BufferInfo) -> View:
    if arg.shape is None or arg.stride is None:
        return View.of(b)
    return View(b.name, tuple(arg.shape), tuple(arg.stride), arg.offset)


def _outputs(
    raw: tuple[models.Output, ...], ptr: str, bufmap: Mapping[str, BufferInfo], sink: DiagnosticSink
) -> tuple[View | None, ...]:
    out: list[View | None] = []
    seen: set[str] = set()
    for j, o in enumerate(raw):
        where = f"{ptr}/outputs/{j}"
        if o is None:
            out.append(None)
            continue
        name = o if isinstance(o, str) else o.buffer
        b = bufmap.get(name)
        if b is None:
            sink.add(f"unknown buffer {name!r}", where, code="name")
            out.append(None)
            continue
        if b.role == "input":
            sink.add(f"{name!r} is an input; inputs are never written", where, code="store")
        elif name in seen:
            sink.add(
                f"{name!r} is named by two results of one call; each buffer has one writer",
                where,
                code="two-writers",
            )
        seen.add(name)
        v = View.of(b) if isinstance(o, str) else _view(o, b)
        problem = view_bounds_problem(v, b) or view_cover_problem(v, b)
        if problem is not None:
            sink.add(problem, where, code="coverage")
        out.append(v)
    if all(v is None for v in out) and raw:
        sink.add(
            "a call writes at least one buffer: every entry of `outputs` is null",
            f"{ptr}/outputs",
            code="fields",
        )
    return tuple(out)


def _escape(s: str) -> str:
    return s.replace("~", "~0").replace("/", "~1")
