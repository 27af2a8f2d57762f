"""From the structural models to the validated IR graph, collecting every error it can find.

Contract: `build_graph` either returns a `Graph` in which every name resolves, every expression is
parsed and typed, the program order is valid and every access stays inside its storage -- or raises
one `InputError` that carries all the diagnostics, each with a JSON pointer and a span.
"""

from __future__ import annotations

from types import MappingProxyType

from fuseopt.errors import DiagnosticSink, ExprError, FuseoptError
from fuseopt.ir import models
from fuseopt.ir.bounds import check_node_bounds
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import KEYWORDS, Load, Reduce, Var, walk
from fuseopt.ir.graph import BufferInfo, ComputeNode, Graph, LibraryNode, LoopVar, Node
from fuseopt.ir.parser import parse_expr_text, parse_store
from fuseopt.ir.typecheck import TypeChecker

# Extern/template ops: name -> (number of inputs, rule for shapes). Extending v1 = one line here plus
# one line in the interpreter's table.
LIBRARY_OPS: dict[str, int] = {"mm": 2, "bmm": 2, "addmm": 3}


def build_graph(model: models.Graph, file: str = "") -> Graph:
    sink = DiagnosticSink(file=file)
    buffers = _build_buffers(model, sink)
    bufmap = {b.name: b for b in buffers}
    dtypes = {b.name: b.dtype for b in buffers}
    roles = {b.name: b.role for b in buffers}

    nodes: list[Node] = []
    seen_nodes: set[str] = set()
    written: dict[str, str] = {}  # buffer -> writer node name
    for i, raw in enumerate(model.nodes):
        ptr = f"/nodes/{i}"
        if raw.name in seen_nodes:
            sink.add(f"duplicate node name {raw.name!r}", f"{ptr}/name", code="duplicate")
        seen_nodes.add(raw.name)
        if isinstance(raw, models.ExternNode | models.TemplateNode):
            node: Node | None = _build_library(raw, ptr, dtypes, roles, written, sink)
        else:
            node = _build_compute(raw, ptr, bufmap, written, sink)
        if node is None:
            continue
        for out in node.outputs:
            if out in written:
                sink.add(
                    f"buffer {out!r} is written by both {written[out]!r} and {node.name!r}; "
                    "each non-input buffer has exactly one writer",
                    _out_ptr(raw, ptr),
                    code="two-writers",
                )
            written.setdefault(out, node.name)
        nodes.append(node)

    for b in buffers:
        if b.role != "input" and b.name not in written:
            sink.add(
                f"buffer {b.name!r} ({b.role}) is never written; only inputs may be left unwritten",
                f"/buffers/{_ptr_escape(b.name)}",
                code="unwritten",
            )
    sink.raise_if_any()
    meta = MappingProxyType(dict(model.meta))
    return Graph(
        name=model.name, buffers=tuple(buffers), nodes=tuple(nodes), description=model.description, meta=meta
    )


def _ptr_escape(s: str) -> str:
    return s.replace("~", "~0").replace("/", "~1")


def _out_ptr(raw: object, ptr: str) -> str:
    return f"{ptr}/output" if isinstance(raw, models.ExternNode | models.TemplateNode) else f"{ptr}/store"


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
            continue
        info = BufferInfo(name, tuple(b.shape), tuple(stride), b.offset, DType(b.dtype), b.role)
        if info.storage_size >= 2**62:
            sink.add(f"storage of {info.storage_size} elements is too large", ptr, code="limit")
        out.append(info)
    return out


def _check_loops(
    loops: tuple[tuple[str, int], ...],
    ptr: str,
    dtypes: dict[str, DType],
    sink: DiagnosticSink,
    seen: set[str],
) -> tuple[LoopVar, ...]:
    out = []
    for j, (name, size) in enumerate(loops):
        p = f"{ptr}/{j}/0"
        if name in seen:
            sink.add(f"loop variable {name!r} is declared twice", p, code="duplicate")
        elif name in dtypes:
            sink.add(f"loop variable {name!r} collides with a buffer name", p, code="name")
        elif name in KEYWORDS:
            sink.add(
                f"loop variable {name!r} is a keyword or function of the expression language", p, code="name"
            )
        seen.add(name)
        out.append(LoopVar(name, size))
    return tuple(out)


def _build_compute(
    raw: models.PointwiseNode | models.ReductionNode,
    ptr: str,
    bufmap: dict[str, BufferInfo],
    written: dict[str, str],
    sink: DiagnosticSink,
) -> ComputeNode | None:
    dtypes = {n: b.dtype for n, b in bufmap.items()}
    roles = {n: b.role for n, b in bufmap.items()}
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

    store: Load | None = None
    try:
        parsed_store = parse_store(raw.store)
        store_tc = TypeChecker(raw.store, dtypes, outer)
        if parsed_store.buffer in dtypes:
            for n in walk(parsed_store.index):
                if isinstance(n, Load):
                    raise ExprError(
                        "a store index must use only loop variables, not loads", raw.store, n.span, "store"
                    )
                if isinstance(n, Var) and n.name in everything and n.name not in outer:
                    raise ExprError(
                        f"a store index must use only the node's loops; {n.name!r} is a reduction variable",
                        raw.store,
                        n.span,
                        "store",
                    )
        store = store_tc.load(parsed_store)
        if roles.get(store.buffer) == "input":
            raise ExprError(
                f"{store.buffer!r} is an input; inputs are never written",
                raw.store,
                parsed_store.span,
                "store",
            )
    except FuseoptError as err:
        sink.add_error(err, f"{ptr}/store")

    value = None
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
        for ld in [n for n in walk(value) if isinstance(n, Load)]:
            if roles.get(ld.buffer) != "input" and ld.buffer not in written:
                raise ExprError(
                    f"{ld.buffer!r} is read before it is written: nodes must be in program order "
                    "(a node reads only inputs and buffers written by earlier nodes)",
                    raw.value,
                    ld.span,
                    "order",
                )
    except FuseoptError as err:
        sink.add_error(err, f"{ptr}/value")

    if store is None or value is None or len(sink.items) != n_errors:
        return None
    node = ComputeNode(raw.name, "reduction" if reduce else "pointwise", loops, reduce, store, value)
    for msg, field_name, span, source in check_node_bounds(node, bufmap, raw.store, raw.value):
        sink.add_error(ExprError(msg, source, span, "bounds"), f"{ptr}/{field_name}")
    return node


def _build_library(
    raw: models.ExternNode | models.TemplateNode,
    ptr: str,
    dtypes: dict[str, DType],
    roles: dict[str, str],
    written: dict[str, str],
    sink: DiagnosticSink,
) -> LibraryNode | None:
    ok = True
    if raw.op not in LIBRARY_OPS:
        sink.add(
            f"unknown {raw.kind} op {raw.op!r}; supported: {', '.join(sorted(LIBRARY_OPS))}",
            f"{ptr}/op",
            code="op",
        )
        ok = False
    elif len(raw.inputs) != LIBRARY_OPS[raw.op]:
        sink.add(
            f"{raw.op} takes {LIBRARY_OPS[raw.op]} inputs, got {len(raw.inputs)}", f"{ptr}/inputs", code="op"
        )
        ok = False
    for j, name in enumerate(raw.inputs):
        if name not in dtypes:
            sink.add(f"unknown buffer {name!r}", f"{ptr}/inputs/{j}", code="name")
            ok = False
        elif roles[name] != "input" and name not in written:
            sink.add(
                f"{name!r} is read before it is written (program order)", f"{ptr}/inputs/{j}", code="order"
            )
            ok = False
    if raw.output not in dtypes:
        sink.add(f"unknown buffer {raw.output!r}", f"{ptr}/output", code="name")
        ok = False
    elif roles[raw.output] == "input":
        sink.add(f"{raw.output!r} is an input; inputs are never written", f"{ptr}/output", code="store")
        ok = False
    if not ok:
        return None
    choices = tuple((c.name, c.time_us) for c in raw.choices) if isinstance(raw, models.TemplateNode) else ()
    epi = raw.epilogue_fusion if isinstance(raw, models.TemplateNode) else False
    return LibraryNode(raw.name, raw.kind, raw.op, tuple(raw.inputs), raw.output, choices, epi)
