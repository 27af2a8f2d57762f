"""Test support for code generation: hand-built plans, a run-and-compare check, and a hypothesis
strategy of random *valid* small graphs (FORMAT.md documents as plain dicts).

The graphs mix layouts (permuted and padded strides, offsets), broadcasts, reductions over any
subset of dims, masked (padded) loads, indirect loads, index() values and every FORMAT.md dtype;
they are valid by construction, so `load_text` never rejects one.
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton (CPU runs)

from hypothesis import strategies as st

from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.io.load import load_text
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode
from fuseopt.plan import Kernel, Plan
from fuseopt.runtime import compare_with_reference

# -- plans ------------------------------------------------------------------------------------------


def kernel_for(graph: Graph, name: str, nodes: list[str]) -> Kernel:
    members = [graph.node(n) for n in nodes]
    head = members[0]
    if isinstance(head, LibraryNode):
        kind = "template" if head.kind == "template" or len(members) > 1 else "extern"
        return Kernel(name, tuple(nodes), kind, (), (), 0)
    reds = [n for n in members if isinstance(n, ComputeNode) and n.kind == "reduction"]
    lead = reds[0] if reds else head
    assert isinstance(lead, ComputeNode)
    return Kernel(
        name,
        tuple(nodes),
        "reduction" if reds else "pointwise",
        tuple((lv.name, lv.size) for lv in lead.loops),
        tuple((lv.name, lv.size) for lv in lead.reduce),
        0,
    )


def plan_of(graph: Graph, groups: list[list[str]]) -> Plan:
    return Plan(graph.name, "", tuple(kernel_for(graph, f"k{i}", g) for i, g in enumerate(groups)))


def unfused_plan(graph: Graph) -> Plan:
    """Every node its own kernel."""
    return plan_of(graph, [[n.name] for n in graph.nodes])


# Looped reductions split along r wherever the shape allows (chunks of one 4-wide R0_BLOCK), so
# that small graphs take the split-reduction path (partial kernel + finishing kernel).
SPLIT = CodegenOptions(
    persistent_rnumel=0,
    max_xblock=4,
    max_r0_block=1,
    unroll_rnumel=0,
    split_programs=1 << 20,
    split_min_r_blocks=1,
)


# Sliding windows on rows of any length (tests/test_window.py), tiles of 8 so that rows need masks.
WINDOW = CodegenOptions(window_min_row=2, max_xblock=8)


def check_window(graph: Graph, plan: Plan) -> None:
    """`check` with WINDOW options, where some kernel of the plan does walk rows."""
    if "sliding window" in emit_module(graph, plan, options=WINDOW):
        check(graph, plan, WINDOW)


def check_split(graph: Graph, plan: Plan) -> None:
    """`check` with SPLIT options, where some reduction kernel of the plan does split."""
    if any(k.kind == "reduction" for k in plan.kernels) and "rsplit" in emit_module(
        graph, plan, options=SPLIT
    ):
        check(graph, plan, SPLIT)


def check(
    graph: Graph,
    plan: Plan,
    options: CodegenOptions | None = None,
    seed: int = 0,
    rtol: float | None = None,
    atol: float | None = None,
) -> str:
    """Emit, run under the current backend (TRITON_INTERPRET=1 on CPU) and compare every output
    with the interpreter; returns the module source."""
    src = emit_module(graph, plan, options=options)
    compare_with_reference(graph, plan, seed, source=src, rtol=rtol, atol=atol)
    return src


def graph(text: str, name: str = "test.yaml") -> Graph:
    return load_text(text, name)


# -- random graphs ------------------------------------------------------------------------------------

FLOATS = ("float32", "float32", "float32", "float16", "bfloat16", "float64")
INTS = ("int32", "int64", "int8", "int16", "uint8")


class _Buf:
    """A buffer as the generator sees it: which logical dims it spans and how they are laid out."""

    def __init__(self, name: str, dims: list[int], strides: list[int], offset: int, dtype: str):
        self.name, self.dims, self.strides, self.offset, self.dtype = name, dims, strides, offset, dtype

    def index(self, coord: dict[int, str]) -> str:
        terms = [
            f"{s}*{coord[d]}" if s != 1 else coord[d]
            for d, s in zip(self.dims, self.strides, strict=True)
            if s
        ]
        if self.offset:
            terms.append(str(self.offset))
        return " + ".join(terms) or "0"

    def load(self, coord: dict[int, str]) -> str:
        return f"{self.name}[{self.index(coord)}]"

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOATS


def _layout(draw: Any, sizes: list[int]) -> tuple[list[int], int]:
    """Strides of a (possibly permuted, possibly padded) dense layout, and an offset."""
    order = draw(st.permutations(list(range(len(sizes)))))
    strides = [0] * len(sizes)
    acc = 1
    for pos in reversed(order):
        strides[pos] = acc
        acc *= sizes[pos] + draw(st.sampled_from((0, 0, 0, 1)))
    return strides, draw(st.sampled_from((0, 0, 1, 3)))


class _Gen:
    def __init__(self, draw: Any, shape: list[int]):
        self.draw = draw
        self.shape = shape
        self.bufs: list[_Buf] = []
        self.ids: _Buf | None = None

    def leaf(self, coord: dict[int, str], loops: dict[int, str]) -> str:
        draw = self.draw
        kind = draw(st.sampled_from(("load", "load", "load", "const", "index", "masked", "gather", "select")))
        visible = [b for b in self.bufs if all(d in coord for d in b.dims)]
        readable = [b for b in visible if b.dtype != "bool"]
        flags = [b for b in visible if b.dtype == "bool"]
        if kind == "select" and flags and readable:
            # bool buffers only ever serve as conditions
            a, b = draw(st.sampled_from(readable)), draw(st.sampled_from(readable))
            return f"where({draw(st.sampled_from(flags)).load(coord)}, {a.load(coord)}, {b.load(coord)})"
        if kind == "const" or not readable:
            return draw(st.sampled_from(("2", "0.5", "-1.5", "3", "1e-3")))
        if kind == "index" and loops:
            d = draw(st.sampled_from(sorted(loops)))
            return f"index({loops[d]})"
        b = draw(st.sampled_from(readable))
        shiftable = [d for d in b.dims if d in loops and self.shape[d] > 1 and coord[d] == loops[d]]
        if kind == "masked" and shiftable:
            d = draw(st.sampled_from(shiftable))
            shifted = dict(coord)
            shifted[d] = f"({loops[d]} - 1)"
            other = "0.0" if b.is_float else "0"
            return f"masked({loops[d]} >= 1, {b.load(shifted)}, {other})"
        if kind == "gather" and self.ids is not None and self.ids.dims[0] in b.dims:
            d = self.ids.dims[0]
            if all(x in coord for x in self.ids.dims):
                gathered = dict(coord)
                gathered[d] = self.ids.load(coord)
                return b.load(gathered)
        return b.load(coord)

    def value(self, depth: int, coord: dict[int, str], loops: dict[int, str]) -> str:
        draw = self.draw
        if depth <= 0 or draw(st.integers(0, 3)) == 0:
            return self.leaf(coord, loops)
        a = self.value(depth - 1, coord, loops)
        form = draw(st.integers(0, 9))
        if form <= 3:
            op = draw(st.sampled_from(("+", "-", "*", "+", "*")))
            return f"({a} {op} {self.value(depth - 1, coord, loops)})"
        if form == 4:
            fn = draw(st.sampled_from(("abs", "relu", "sigmoid", "tanh", "sin", "floor", "neg")))
            return f"-({a})" if fn == "neg" else f"{fn}({a})"
        if form == 5:
            fn = draw(st.sampled_from(("maximum", "minimum")))
            return f"{fn}({a}, {self.value(depth - 1, coord, loops)})"
        if form == 6:
            b = self.value(depth - 1, coord, loops)
            cmp = draw(st.sampled_from(("<", ">=", "==", "!=")))
            c = self.value(depth - 1, coord, loops)
            return f"where({a} {cmp} {b}, {c}, {a})"
        if form == 7:
            fn = draw(
                st.sampled_from(
                    ("sqrt(abs({a}))", "log(abs({a}) + 1)", "exp(-abs({a}))", "{a} / (abs({a}) + 1)")
                )
            )
            return fn.format(a=a)
        if form == 8:
            to = draw(st.sampled_from(("float32", "float16", "bfloat16", "float64", "int32", "int8")))
            if to.startswith("int"):
                # Truncating a computed float would turn a 1-ulp difference into 1: cast only exact
                # values (an input's elements times 4).
                exact = [b for b in self.bufs if b.name.startswith("in") and b.is_float]
                exact = [b for b in exact if all(d in coord for d in b.dims)]
                if not exact:
                    return f"cast({a}, float32)"
                return f"cast({draw(st.sampled_from(exact)).load(coord)} * 4, {to})"
            return f"cast({a}, {to})"
        div = draw(st.sampled_from(("//", "%")))
        return f"({a} {div} 3)"

    def new_buffer(self, name: str, dims: list[int], dtype: str) -> _Buf:
        strides, offset = _layout(self.draw, [self.shape[d] for d in dims])
        b = _Buf(name, dims, strides, offset, dtype)
        return b


def _buffer_doc(b: _Buf, shape: list[int], role: str) -> dict[str, Any]:
    return {
        "shape": [shape[d] for d in b.dims],
        "stride": b.strides,
        "offset": b.offset,
        "dtype": b.dtype,
        "role": role,
    }


@st.composite
def graph_docs(draw: Any, max_nodes: int = 4) -> dict[str, Any]:
    """A random valid graph document (FORMAT.md as a dict)."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 5)) for _ in range(rank)]
    if all(s == 1 for s in shape):
        shape[-1] = 3
    gen = _Gen(draw, shape)
    docs: dict[str, dict[str, Any]] = {}
    for i in range(draw(st.integers(1, 3))):
        dims = list(range(rank))
        if i > 0 and draw(st.booleans()):  # a broadcast input spans a subset of the dims
            dims = sorted(draw(st.sets(st.sampled_from(dims), min_size=1, max_size=rank)))
        dtype = draw(st.sampled_from(FLOATS + FLOATS + INTS + ("bool",)))
        b = gen.new_buffer(f"in{i}", dims, dtype)
        gen.bufs.append(b)
        docs[b.name] = _buffer_doc(b, shape, "input")
    if draw(st.booleans()):
        d = draw(st.integers(0, rank - 1))
        ids = _Buf("ids", [d], [1], 0, draw(st.sampled_from(("int32", "int64"))))
        gen.ids = ids
        docs["ids"] = _buffer_doc(ids, shape, "input")

    nodes: list[dict[str, Any]] = []
    written: list[str] = []
    for k in range(draw(st.integers(1, max_nodes))):
        name = f"buf{k}"
        dtype = draw(st.sampled_from(FLOATS + ("int32", "int64")))
        if draw(st.integers(0, 2)) == 0:
            nodes.append(_reduction(draw, gen, name, dtype, docs))
        else:
            order = draw(st.permutations(list(range(rank))))
            loops = {d: f"i{d}" for d in range(rank)}
            out = gen.new_buffer(name, list(range(rank)), dtype)
            value = gen.value(3, dict(loops), loops)
            nodes.append(
                {
                    "name": f"n{k}",
                    "loops": [[loops[d], shape[d]] for d in order],
                    "store": f"{name}[{out.index(loops)}]",
                    "value": value,
                }
            )
            gen.bufs.append(out)
            docs[name] = _buffer_doc(out, shape, "intermediate")
        written.append(name)
    outputs = {written[-1]} | {w for w in written[:-1] if draw(st.booleans())}
    for w in outputs:
        docs[w]["role"] = "output"
    return {"format": "fuseopt-graph/1", "name": "random", "buffers": docs, "nodes": nodes}


def _reduction(
    draw: Any, gen: _Gen, name: str, dtype: str, docs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    rank = len(gen.shape)
    reduced = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
    kept = [d for d in range(rank) if d not in reduced]
    coord = {d: (f"i{d}" if d in kept else f"r{d}") for d in range(rank)}
    loops = {d: f"i{d}" for d in kept}
    op = draw(st.sampled_from(("sum", "sum", "max", "min", "argmax", "argmin", "prod", "any")))
    body = gen.value(2, coord, {d: coord[d] for d in range(rank)})
    if op == "prod":
        body = f"(1 + sigmoid({body}) / 4)"  # bounded factors: products stay well conditioned
    if op == "any":
        body = f"{body} > 0"
    rorder = draw(st.permutations(reduced))
    korder = draw(st.permutations(kept)) if kept else []
    out_dtype = "int64" if op in ("argmax", "argmin") else "bool" if op == "any" else dtype
    out = gen.new_buffer(name, korder, out_dtype)
    gen.bufs.append(out)
    docs[name] = _buffer_doc(out, gen.shape, "intermediate")
    return {
        "name": f"n{name[3:]}",
        "loops": [[loops[d], gen.shape[d]] for d in korder],
        "reduce": [[coord[d], gen.shape[d]] for d in rorder],
        "store": f"{name}[{out.index(loops)}]",
        "value": f"{op}({body})",
    }


def doc_graph(doc: dict[str, Any]) -> Graph:
    return load_text(json.dumps(doc), "random.json")
