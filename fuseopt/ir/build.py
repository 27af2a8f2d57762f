"""From the structural models to the validated IR graph, collecting every error it can find.

Contract: `build_graph` either returns a `Graph` in which every name resolves, every expression is
parsed and typed, the program order is valid, every library call's shapes and dtypes agree and
every access stays inside its storage and every non-input buffer is written whole, each element
exactly once (`fuseopt.ir.coverage`) -- or raises one `InputError` that carries all the
diagnostics, each with a JSON pointer (and, for expressions, a span).

Errors do not cascade: a node whose value is broken still counts as the writer of the buffer its
store names (even when the store itself does not parse, if its text starts with `name[`), so the
buffer is not also reported as never written or read before it is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from fuseopt.errors import DiagnosticSink, ExprError, FuseoptError
from fuseopt.ir import models
from fuseopt.ir.bounds import check_node_bounds
from fuseopt.ir.coverage import counted_loads, layout_problem, read_problem, store_problem
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import KEYWORDS, Expr, Load, Reduce, Var, walk
from fuseopt.ir.extern_call import build_call, call_targets, mixed_fields
from fuseopt.ir.graph import BufferInfo, ComputeNode, Graph, LibraryNode, LoopVar, Node
from fuseopt.ir.parser import parse_expr_text, parse_store
from fuseopt.ir.typecheck import TypeChecker

# A shape problem of a library call: (message, pointer suffix under the node, e.g. "inputs/1").
ShapeProblem = tuple[str, str]


@dataclass(frozen=True)
class LibraryOp:
    """What an extern/template op reads and writes: its inputs in order and a shape rule."""

    inputs: tuple[str, ...]  # parameter names, for messages
    shapes: Callable[[tuple[BufferInfo, ...], BufferInfo], list[ShapeProblem]]

    @property
    def arity(self) -> int:
        return len(self.inputs)


def _dims(b: BufferInfo) -> str:
    return "[" + ", ".join(str(n) for n in b.shape) + "]"


def _rank_problems(
    op: str, ins: tuple[BufferInfo, ...], ranks: tuple[int, ...], first: int
) -> list[ShapeProblem]:
    out = []
    for j, (b, r) in enumerate(zip(ins, ranks, strict=True)):
        if len(b.shape) != r:
            out.append(
                (f"{op}: input {b.name!r} must be {r}-d, its shape is {_dims(b)}", f"inputs/{first + j}")
            )
    return out


def _matmul(op: str, a: BufferInfo, b: BufferInfo, out: BufferInfo, batch: bool) -> list[ShapeProblem]:
    """[(B,) M, K] x [(B,) K, N] -> [(B,) M, N]; inputs a and b are the last two of the call."""
    *ba, m, k = a.shape
    *bb, k2, n = b.shape
    if k != k2:
        return [
            (f"{op}: inner dimensions differ: {a.name} is {_dims(a)} and {b.name} is {_dims(b)}", "inputs")
        ]
    if batch and ba != bb:
        return [
            (f"{op}: batch dimensions differ: {a.name} is {_dims(a)} and {b.name} is {_dims(b)}", "inputs")
        ]
    want = (*ba, m, n)
    if out.shape != want:
        shown = "[" + ", ".join(str(x) for x in want) + "]"
        return [
            (
                f"{op}: output {out.name!r} has shape {_dims(out)}; {_dims(a)} x {_dims(b)} gives {shown}",
                "output",
            )
        ]
    return []


def _mm(ins: tuple[BufferInfo, ...], out: BufferInfo) -> list[ShapeProblem]:
    return _rank_problems("mm", ins, (2, 2), 0) or _matmul("mm", ins[0], ins[1], out, batch=False)


def _bmm(ins: tuple[BufferInfo, ...], out: BufferInfo) -> list[ShapeProblem]:
    return _rank_problems("bmm", ins, (3, 3), 0) or _matmul("bmm", ins[0], ins[1], out, batch=True)


def _addmm(ins: tuple[BufferInfo, ...], out: BufferInfo) -> list[ShapeProblem]:
    bias, a, b = ins
    problems = _rank_problems("addmm", (a, b), (2, 2), 1) or _matmul("addmm", a, b, out, batch=False)
    if problems or len(a.shape) != 2 or len(b.shape) != 2:
        return problems
    m, n = a.shape[0], b.shape[1]
    # Broadcasting, right-aligned: each bias dim is 1 or equal to the result's.
    if len(bias.shape) > 2 or any(
        d not in (1, w) for d, w in zip(reversed(bias.shape), (n, m), strict=False)
    ):
        return [
            (f"addmm: bias {bias.name!r} of shape {_dims(bias)} does not broadcast to [{m}, {n}]", "inputs/0")
        ]
    return []


# Extern/template ops. Extending v1 = one entry here plus one in the interpreter's table.
LIBRARY_OPS: dict[str, LibraryOp] = {
    "mm": LibraryOp(("a", "b"), _mm),
    "bmm": LibraryOp(("a", "b"), _bmm),
    "addmm": LibraryOp(("bias", "a", "b"), _addmm),
}

# What a reduction's result may be stored into (anything else is almost surely a mistake: the
# stored value is cast to the buffer's dtype, and an index or a truth value in a float buffer is
# not what anyone meant).
_INT_MAX = {
    DType.int8: 2**7 - 1,
    DType.uint8: 2**8 - 1,
    DType.int16: 2**15 - 1,
    DType.int32: 2**31 - 1,
    DType.int64: 2**63 - 1,
}
_STORE_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[|$)")


def build_graph(model: models.Graph, file: str = "") -> Graph:
    sink = DiagnosticSink(file=file)
    buffers = _build_buffers(model, sink)
    bufmap = {b.name: b for b in buffers}
    overlapping = _check_layouts(buffers, sink)
    dtypes = {b.name: b.dtype for b in buffers}
    roles = {b.name: b.role for b in buffers}

    nodes: list[Node] = []
    seen_nodes: set[str] = set()
    written: dict[str, str] = {}  # buffer -> writer node name
    # Buffers some node means to write: reading one that no node writes is reported once, as
    # "never written", rather than as a program-order error at every reader.
    targets = {t for raw in model.nodes for t, _ in _target_names(raw, roles, "")}
    for i, raw in enumerate(model.nodes):
        ptr = f"/nodes/{i}"
        if raw.name in seen_nodes:
            sink.add(f"duplicate node name {raw.name!r}", f"{ptr}/name", code="duplicate")
        seen_nodes.add(raw.name)
        if isinstance(raw, models.ExternNode | models.TemplateNode):
            node: Node | None = _build_library(raw, ptr, bufmap, written, targets, sink)
            writes = _target_names(raw, roles, ptr)
        else:
            n_errors = len(sink.items)
            node, target = _build_compute(raw, ptr, bufmap, dtypes, roles, written, targets, sink)
            # Whole writes are proven only for a store that is otherwise sound (in bounds).
            if node is not None and len(sink.items) == n_errors and node.output not in overlapping:
                problem = store_problem(node, bufmap[node.output])
                if problem is not None:
                    sink.add_error(ExprError(problem, raw.store, node.store.span, "coverage"), f"{ptr}/store")
                for ld in counted_loads(node.value):
                    b = bufmap[ld.buffer]
                    problem = (
                        None if b.role == "input" or b.name in overlapping else read_problem(node, ld, b)
                    )
                    if problem is not None:
                        sink.add_error(ExprError(problem, raw.value, ld.span, "coverage"), f"{ptr}/value")
            writes = [] if target is None else [(target, f"{ptr}/store")]
        for target, out_ptr in writes:
            if target in written and written[target] != raw.name:
                sink.add(
                    f"buffer {target!r} is written by both {written[target]!r} and {raw.name!r}; "
                    "each non-input buffer has exactly one writer",
                    out_ptr,
                    code="two-writers",
                )
            written.setdefault(target, raw.name)
        if node is not None:
            nodes.append(node)

    for b in buffers:
        if b.role != "input" and b.name not in written:
            sink.add(
                f"buffer {b.name!r} ({b.role}) is never written; only inputs may be left unwritten",
                f"/buffers/{_ptr_escape(b.name)}",
                code="unwritten",
            )
    from fuseopt.ir.recorded_options import recorded_problems  # planning options in meta

    for message, pointer in recorded_problems(model.meta):
        sink.add(message, pointer, code="meta-option")
    sink.raise_if_any()
    meta = MappingProxyType(dict(model.meta))
    return Graph(
        name=model.name, buffers=tuple(buffers), nodes=tuple(nodes), description=model.description, meta=meta
    )


def _target_names(raw: models.Node, roles: dict[str, str], ptr: str) -> list[tuple[str, str]]:
    """The non-input buffers a node writes, as far as its text says, each with its pointer."""
    if isinstance(raw, models.ExternNode) and raw.outputs is not None:
        return [(name, f"{ptr}/{where}") for name, where in call_targets(raw, roles)]
    if isinstance(raw, models.ExternNode | models.TemplateNode):
        out = raw.output
        return [(out, f"{ptr}/output")] if out is not None and roles.get(out, "input") != "input" else []
    name = _salvage_store_buffer(raw.store, roles)
    return [] if name is None else [(name, f"{ptr}/store")]


def _ptr_escape(s: str) -> str:
    return s.replace("~", "~0").replace("/", "~1")


def _build_buffers(model: models.Graph, sink: DiagnosticSink) -> list[BufferInfo]:
    out: list[BufferInfo] = []
    for name, b in model.buffers.items():
        ptr = f"/buffers/{_ptr_escape(name)}"
        if name in KEYWORDS:
            sink.add(
                f"buffer name {name!r} is a keyword or function of the expression language", ptr, code="name"
            )
        stride = b.strides()
        if len(stride) != len(b.shape):
            sink.add(
                f"stride has {len(stride)} entries but shape has {len(b.shape)}",
                f"{ptr}/stride",
                code="shape",
            )
            # Go on as if it were contiguous, so that its readers and writer are still checked.
            stride = models.Buffer(shape=b.shape, dtype=b.dtype).strides()
        info = BufferInfo(name, tuple(b.shape), tuple(stride), b.offset, DType(b.dtype), b.role)
        if info.storage_size >= 2**62:
            sink.add(f"storage of {info.storage_size} elements is too large", ptr, code="limit")
        out.append(info)
    return out


def _check_layouts(buffers: list[BufferInfo], sink: DiagnosticSink) -> set[str]:
    """Written buffers need one storage position per element; the names of those that lack it."""
    bad = set()
    for b in buffers:
        problem = None if b.role == "input" else layout_problem(b)
        if problem is not None:
            sink.add(problem, f"/buffers/{_ptr_escape(b.name)}/stride", code="layout")
            bad.add(b.name)
    return bad


def _check_loops(
    loops: tuple[tuple[str, int], ...],
    ptr: str,
    dtypes: dict[str, DType],
    sink: DiagnosticSink,
    seen: set[str],
) -> tuple[LoopVar, ...]:
    out = []
    for j, (name, size) in enumerate(loops):
        if name in seen or name in dtypes or name in KEYWORDS:
            p = f"{ptr}/{j}/0"
            if name in seen:
                sink.add(f"loop variable {name!r} is declared twice", p, code="duplicate")
            elif name in dtypes:
                sink.add(f"loop variable {name!r} collides with a buffer name", p, code="name")
            else:
                sink.add(
                    f"loop variable {name!r} is a keyword or function of the expression language",
                    p,
                    code="name",
                )
        seen.add(name)
        out.append(LoopVar(name, size))
    return tuple(out)


def _build_compute(
    raw: models.PointwiseNode | models.ReductionNode,
    ptr: str,
    bufmap: dict[str, BufferInfo],
    dtypes: dict[str, DType],
    roles: dict[str, str],
    written: dict[str, str],
    targets: set[str],
    sink: DiagnosticSink,
) -> tuple[ComputeNode | None, str | None]:
    """The node (None if it has errors) and the buffer it writes (None if unknown or an input)."""
    seen: set[str] = set()
    loops = _check_loops(raw.loops, f"{ptr}/loops", dtypes, sink, seen)
    reduce = (
        _check_loops(raw.reduce, f"{ptr}/reduce", dtypes, sink, seen)
        if isinstance(raw, models.ReductionNode)
        else ()
    )
    n_errors = len(sink.items)
    outer = {lv.name: lv.size for lv in loops}
    everything = {**outer, **{lv.name: lv.size for lv in reduce}}

    store = _check_store(raw.store, dtypes, roles, outer, everything, f"{ptr}/store", sink)
    target = store.buffer if store is not None else _salvage_store_buffer(raw.store, roles)

    value = None
    value_loads: list[Load] = []
    try:
        parsed = parse_expr_text(raw.value)
        is_red = isinstance(raw, models.ReductionNode)
        if is_red and not isinstance(parsed, Reduce):
            raise ExprError(
                "a reduction node's value must be exactly one top-level reduction, e.g. sum(...)",
                raw.value,
                parsed.span,
                "reduction",
            )
        tc = TypeChecker(raw.value, dtypes, everything)
        value = tc.value(parsed, allow_reduce=is_red)
        value_loads = tc.loads
        for ld in tc.loads:
            if ld.buffer not in written and ld.buffer in targets:
                raise ExprError(
                    f"{ld.buffer!r} is read before it is written: nodes must be in program order "
                    "(a node reads only inputs and buffers written by earlier nodes)",
                    raw.value,
                    ld.span,
                    "order",
                )
    except FuseoptError as err:
        sink.add_error(err, f"{ptr}/value")

    if store is not None and value is not None:
        _check_store_dtype(store, value, reduce, raw.store, f"{ptr}/store", sink)
    if store is None or value is None or len(sink.items) != n_errors:
        return None, target
    node = ComputeNode(raw.name, "reduction" if reduce else "pointwise", loops, reduce, store, value)
    for msg, field_name, span, source in check_node_bounds(node, bufmap, raw.store, raw.value, value_loads):
        sink.add_error(ExprError(msg, source, span, "bounds"), f"{ptr}/{field_name}")
    return node, target


def _check_store(
    text: str,
    dtypes: dict[str, DType],
    roles: dict[str, str],
    outer: dict[str, int],
    everything: dict[str, int],
    ptr: str,
    sink: DiagnosticSink,
) -> Load | None:
    try:
        parsed = parse_store(text)
        # Walk the index only when the text could hold a load or a reduction variable.
        suspect = text.count("[") > 1 or any(v in text for v in everything if v not in outer)
        if suspect and parsed.buffer in dtypes:
            for n in walk(parsed.index):
                if isinstance(n, Load):
                    raise ExprError(
                        "a store index must use only loop variables, not loads", text, n.span, "store"
                    )
                if isinstance(n, Var) and n.name in everything and n.name not in outer:
                    raise ExprError(
                        f"a store index must use only the node's loops; {n.name!r} is a reduction variable",
                        text,
                        n.span,
                        "store",
                    )
        store = TypeChecker(text, dtypes, outer).load(parsed)
        if roles.get(store.buffer) == "input":
            raise ExprError(
                f"{store.buffer!r} is an input; inputs are never written", text, parsed.span, "store"
            )
        return store
    except FuseoptError as err:
        sink.add_error(err, ptr)
        return None


def _salvage_store_buffer(text: str, roles: dict[str, str]) -> str | None:
    """The buffer a store that failed to parse or check evidently names, so that it still counts
    as written (no cascade of "never written" / "read before written" errors)."""
    m = _STORE_NAME.match(text)
    if m is None or roles.get(m.group(1), "input") == "input":
        return None
    return m.group(1)


def _check_store_dtype(
    store: Load, value: Expr, reduce: tuple[LoopVar, ...], text: str, ptr: str, sink: DiagnosticSink
) -> None:
    """A reduction's result must fit the buffer it is stored into (other values are cast, as torch
    does on assignment)."""
    if not isinstance(value, Reduce) or store.dtype is None:
        return
    target = store.dtype
    if value.op in ("argmax", "argmin"):
        if not target.is_int:
            msg = f"{value.op} yields an int64 index, but {store.buffer!r} is {target.value}; store it in an integer buffer"
        else:
            last = 1
            for lv in reduce:
                last *= lv.size
            if last - 1 <= _INT_MAX[target]:
                return
            msg = f"{value.op} over {last} elements yields indices up to {last - 1}, which {target.value} ({store.buffer!r}) cannot hold"
    elif value.op == "any" and target.is_float:
        msg = f"any yields a bool, but {store.buffer!r} is {target.value}; store it in a bool (or integer) buffer"
    else:
        return
    sink.add_error(ExprError(msg, text, store.span, "dtype"), ptr)


def _build_library(
    raw: models.ExternNode | models.TemplateNode,
    ptr: str,
    bufmap: dict[str, BufferInfo],
    written: dict[str, str],
    targets: set[str],
    sink: DiagnosticSink,
) -> LibraryNode | None:
    if isinstance(raw, models.ExternNode):
        if mixed_fields(raw, ptr, sink):
            return None
        if raw.is_call():
            return build_call(raw, ptr, bufmap, written, targets, sink)
    assert raw.inputs is not None and raw.output is not None  # mixed_fields said so
    ok = True
    op = LIBRARY_OPS.get(raw.op)
    if op is None:
        sink.add(
            f"unknown {raw.kind} op {raw.op!r}; supported: {', '.join(sorted(LIBRARY_OPS))}",
            f"{ptr}/op",
            code="op",
        )
        ok = False
    elif len(raw.inputs) != op.arity:
        sink.add(
            f"{raw.op}({', '.join(op.inputs)}) takes {op.arity} inputs, got {len(raw.inputs)}",
            f"{ptr}/inputs",
            code="op",
        )
        ok = False
    for j, name in enumerate(raw.inputs):
        b = bufmap.get(name)
        if b is None:
            sink.add(f"unknown buffer {name!r}", f"{ptr}/inputs/{j}", code="name")
            ok = False
        elif name not in written and name in targets:
            sink.add(
                f"{name!r} is read before it is written (program order)", f"{ptr}/inputs/{j}", code="order"
            )
            ok = False
        elif b.role != "input" and name not in written:
            ok = False  # written by no node at all: reported once, on the buffer
    out = bufmap.get(raw.output)
    if out is None:
        sink.add(f"unknown buffer {raw.output!r}", f"{ptr}/output", code="name")
        ok = False
    elif out.role == "input":
        sink.add(f"{raw.output!r} is an input; inputs are never written", f"{ptr}/output", code="store")
        ok = False
    if isinstance(raw, models.TemplateNode):
        names = [c.name for c in raw.choices]
        for j, c in enumerate(names):
            if c in names[:j]:
                sink.add(f"duplicate choice name {c!r}", f"{ptr}/choices/{j}/name", code="duplicate")
                ok = False
    if not ok or op is None or out is None:
        return None
    ins = tuple(bufmap[n] for n in raw.inputs)
    problems = _library_dtypes(raw.op, ins, out) or op.shapes(ins, out)
    for msg, where in problems:
        sink.add(msg, f"{ptr}/{where}", code="shape")
    if problems:
        return None
    choices = tuple((c.name, c.time_us) for c in raw.choices) if isinstance(raw, models.TemplateNode) else ()
    epi = raw.epilogue_fusion if isinstance(raw, models.TemplateNode) else False
    return LibraryNode(raw.name, raw.kind, raw.op, tuple(raw.inputs), raw.output, choices, epi)


def _library_dtypes(op: str, ins: tuple[BufferInfo, ...], out: BufferInfo) -> list[ShapeProblem]:
    """Matmuls run on one floating dtype (torch.mm rejects mixed or integer operands)."""
    for j, b in enumerate(ins):
        if not b.dtype.is_float:
            return [(f"{op} needs floating-point operands; {b.name!r} is {b.dtype.value}", f"inputs/{j}")]
    for j, b in enumerate(ins[1:], start=1):
        if b.dtype != ins[0].dtype:
            return [
                (
                    f"{op} operands must have one dtype: {ins[0].name!r} is {ins[0].dtype.value}, "
                    f"{b.name!r} is {b.dtype.value}",
                    f"inputs/{j}",
                )
            ]
    if out.dtype != ins[0].dtype:
        return [(f"{op} writes {ins[0].dtype.value}, but output {out.name!r} is {out.dtype.value}", "output")]
    return []
