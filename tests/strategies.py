"""Test support for code generation: hand-built plans, a run-and-compare check, and a hypothesis
strategy of random *valid* small graphs (docs/format.md documents as plain dicts).

The graphs mix layouts (permuted and padded strides, offsets), broadcasts, reductions over any
subset of dims, masked (padded) loads, indirect loads, index() values and every docs/format.md dtype;
they are valid by construction, so `load_text` never rejects one. `differential_docs` (for
tests/test_differential.py) adds library calls, long chains, typed integer and bool arithmetic,
big index intermediates and split or merged loops.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton (CPU runs)

from hypothesis import strategies as st

from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.io.load import load_text
from fuseopt.ir.dtypes import DType, promote
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode
from fuseopt.plan import Kernel, Plan
from fuseopt.runtime import compare_with_reference

# -- plans ------------------------------------------------------------------------------------------


def kernel_for(graph: Graph, name: str, nodes: list[str]) -> Kernel:
    members = [graph.node(n) for n in nodes]
    library = [n for n in members if isinstance(n, LibraryNode)]
    head = library[0] if library else members[0]  # a template's epilogue may be listed before it
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
    strategy="split",  # taken where it applies: a tiny reduction's cost favours one kernel
)


# Sliding windows on rows of any length (tests/test_windows_sliding.py), tiles of 8 so that rows need masks.
WINDOW = CodegenOptions(window_min_row=2, max_xblock=8)


def check_window(graph: Graph, plan: Plan) -> None:
    """`check` with WINDOW options, where some kernel of the plan does walk rows."""
    if "sliding window" in emit_module(graph, plan, options=WINDOW):
        check(graph, plan, WINDOW)


# Every reduction looped (R0_BLOCK 2, no split), so that small graphs take the r loops, and
# softmax-like sums the online form (codegen/online_softmax.py).
LOOPED = CodegenOptions(persistent_rnumel=0, max_r0_block=2, unroll_rnumel=0, split_programs=0)


def check_online(graph: Graph, plan: Plan) -> None:
    """`check` with LOOPED options, where some kernel of the plan sums online."""
    if 'tl.full([XBLOCK, 1], float("-inf")' in emit_module(graph, plan, options=LOOPED):
        check(graph, plan, LOOPED)


def check_forced(
    graph: Graph, plan: Plan, strategies: tuple[str, ...] = ("tile_2d", "persistent_row")
) -> None:
    """`check` with each of `strategies` forced (`CodegenOptions.strategy`) where that changes
    the module: the cost model leaves them out of tiny launches (one 2D tile, a persistent tile of
    few programs), which random graphs are made of."""
    default = emit_module(graph, plan)
    for name in strategies:
        options = CodegenOptions(strategy=name)
        if emit_module(graph, plan, options=options) != default:
            check(graph, plan, options)


def check_autotuned(graph: Graph, plan: Plan) -> None:
    """`check` of the module `--autotune` emits, where some kernel has candidates: under the
    interpreter its `_prune` keeps each kernel's first candidate (`test_choice` checks that it is
    the launch the module without --autotune fixes)."""
    tuned = CodegenOptions(autotune=True)
    src = emit_module(graph, plan, options=tuned)
    if "@triton.autotune(" in src:
        compare_with_reference(graph, plan, 0, source=src)


def check_split(graph: Graph, plan: Plan) -> None:
    """`check` with SPLIT options, where some reduction kernel of the plan does split."""
    if any(k.kind == "reduction" for k in plan.kernels) and "rsplit" in emit_module(
        graph, plan, options=SPLIT
    ):
        check(graph, plan, SPLIT)


# Where generated modules run, as `compare_with_reference` runs them: the GPU where there is one,
# else the CPU (TRITON_INTERPRET=1, tests/conftest.py).
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


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


def planned_source(graph: Graph, options: CodegenOptions) -> str:
    """The module of the graph as planned, which must be one kernel."""
    from fuseopt.passes.pipeline import optimize

    stage = optimize(graph)
    assert len(stage.plan.kernels) == 1
    return emit_module(stage.graph, stage.plan, options=options)


def check_on(graph: Graph, src: str, inputs: dict[str, torch.Tensor]) -> None:
    """`src` run on the given inputs (edge values: NaN, infinities) against the interpreter."""
    from fuseopt.interp import run_graph
    from fuseopt.runtime.compare import check_outputs
    from fuseopt.runtime.module import run_module

    expected = run_graph(graph, {k: v.clone() for k, v in inputs.items()})
    got = run_module(src, {k: v.clone() for k, v in inputs.items()}, poison=True)
    bad = [c.message() for c in check_outputs(graph, got, expected) if not c.ok]
    assert not bad, bad


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
    """A random valid graph document (docs/format.md as a dict)."""
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
            if nodes[-1]["value"].startswith("max(") and dtype in FLOATS and draw(st.booleans()):
                written.append(name)  # a softmax's sum over the max: codegen's online form
                name = f"buf{k}s"
                nodes.append(_softmax_sum(gen, nodes[-1], name, docs))
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
    draw: Any, gen: _Gen, name: str, dtype: str, docs: dict[str, dict[str, Any]], op: str | None = None
) -> dict[str, Any]:
    rank = len(gen.shape)
    reduced = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
    kept = [d for d in range(rank) if d not in reduced]
    coord = {d: (f"i{d}" if d in kept else f"r{d}") for d in range(rank)}
    loops = {d: f"i{d}" for d in kept}
    if op is None:
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


def _softmax_sum(gen: _Gen, mx: dict[str, Any], name: str, docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`sum(exp(F - m))` over the loops of the reduction `m = max(F)` (node `mx`)."""
    m = gen.bufs[-1]
    loops = {int(v[1:]): v for v, _ in mx["loops"]}
    out = gen.new_buffer(name, m.dims, "float32")
    gen.bufs.append(out)
    docs[name] = _buffer_doc(out, gen.shape, "intermediate")
    return {
        "name": f"n{name[3:]}",
        "loops": mx["loops"],
        "reduce": mx["reduce"],
        "store": f"{name}[{out.index(loops)}]",
        "value": f"sum(exp({mx['value'][4:-1]} - {m.load(loops)}))",
    }


def _variance_sum(
    gen: _Gen, mean: dict[str, Any], name: str, docs: dict[str, dict[str, Any]], n: int | None
) -> dict[str, Any]:
    """`sum((F - m) * (F - m))` over the loops of the reduction `m = sum(F / n)` (node `mean`),
    or of `t = sum(F)` with `m = t / n` (n given)."""
    m = gen.bufs[-1]
    loops = {int(v[1:]): v for v, _ in mean["loops"]}
    out = gen.new_buffer(name, m.dims, "float32")
    gen.bufs.append(out)
    docs[name] = _buffer_doc(out, gen.shape, "intermediate")
    v = mean["value"]
    f = v[len("sum((") : v.rindex(") / ")] if n is None else v[len("sum((") : -len("))")]
    d = f"({f} - {m.load(loops)})" if n is None else f"({f} - {m.load(loops)} / {n})"
    return {
        "name": f"n{name[3:]}",
        "loops": mean["loops"],
        "reduce": mean["reduce"],
        "store": f"{name}[{out.index(loops)}]",
        "value": f"sum({d} * {d})",
    }


@st.composite
def variance_docs(draw: Any) -> dict[str, Any]:
    """A random mean `m = sum(F / n)` and `v = sum((F - m) * (F - m))` over random dims of random
    float32 inputs, both outputs: the pattern of codegen's online variance."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    gen = _Gen(draw, shape)
    docs: dict[str, dict[str, Any]] = {}
    for i in range(draw(st.integers(1, 2))):
        b = gen.new_buffer(f"in{i}", list(range(rank)), "float32")
        gen.bufs.append(b)
        docs[b.name] = _buffer_doc(b, shape, "input")
    mean = _reduction(draw, gen, "buf0", "float32", docs, op="sum")
    n = 1
    for _, size in mean["reduce"]:
        n *= size
    body = mean["value"][4:-1]
    after = draw(st.booleans())  # sum(F) read as `total / n`, else sum(F / n)
    mean["value"] = f"sum(({body}) / {float(n)})" if not after else f"sum(({body}))"
    var = _variance_sum(gen, mean, "buf1", docs, n if after else None)
    docs["buf0"]["role"] = docs["buf1"]["role"] = "output"
    return {"format": "fuseopt-graph/1", "name": "variance", "buffers": docs, "nodes": [mean, var]}


@st.composite
def softmax_docs(draw: Any) -> dict[str, Any]:
    """A random `m = max(F)` and `s = sum(exp(F - m))` over random dims of a random float input
    (and a second input F may read), both outputs: the pattern of codegen's online form."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    gen = _Gen(draw, shape)
    docs: dict[str, dict[str, Any]] = {}
    for i in range(draw(st.integers(1, 2))):
        b = gen.new_buffer(f"in{i}", list(range(rank)), draw(st.sampled_from(FLOATS)))
        gen.bufs.append(b)
        docs[b.name] = _buffer_doc(b, shape, "input")
    dtype = draw(st.sampled_from(FLOATS))
    mx = _reduction(draw, gen, "buf0", dtype, docs, op="max")
    sm = _softmax_sum(gen, mx, "buf1", docs)
    docs["buf0"]["role"] = docs["buf1"]["role"] = "output"
    return {"format": "fuseopt-graph/1", "name": "softmax", "buffers": docs, "nodes": [mx, sm]}


def doc_graph(doc: dict[str, Any]) -> Graph:
    return load_text(json.dumps(doc), "random.json")


# -- the differential strategy ------------------------------------------------------------------------
#
# `differential_docs` draws graphs for tests/test_differential.py: everything `graph_docs` does, plus
# templates (with choices, with and without epilogue fusion) and externs, chains of 10-30 fused nodes
# with shared reads, every dtype with integer and bool arithmetic that wraps, // and % with negative
# operands, coordinates transformed through big intermediates near 2**31 that cancel, split and
# merged loops, and stores that permute their buffer. Every expression carries the dtype the type
# checker will give it (`promote`, literals weak), so a node stores a value of its buffer's family
# and a computed float is never truncated into an integer (a 1-ulp difference would become 1).
# Conditions, argmax bodies and anything else whose result a 1-ulp difference could flip use only
# exact arithmetic (+ - * max min of loads, no transcendental). Graphs are valid by construction:
# every index stays in bounds and every store writes its buffer whole, once.

DIFF_FLOATS = ("float32", "float32", "float32", "float16", "bfloat16", "float64")
DIFF_INTS = ("int8", "uint8", "int16", "int32", "int64", "int8", "uint8")
NEAR_2_31 = (2**31 - 8, 2**31 - 1, 2**31 + 5, 2**32 - 3)


@dataclass(frozen=True)
class _E:
    """A generated expression: its text and the dtype the type checker will give it."""

    text: str
    dtype: DType


class _Diff:
    """The generator's state: dim sizes (the graph's dims first, then matmul K dims), buffers."""

    def __init__(self, draw: Any, shape: list[int]):
        self.draw = draw
        self.rank = len(shape)
        self.sizes = list(shape)
        self.bufs: list[_Buf] = []
        self.ids: _Buf | None = None
        self.docs: dict[str, dict[str, Any]] = {}
        self.nodes: list[dict[str, Any]] = []
        self.written: list[str] = []

    def pick(self, xs: Any) -> Any:
        return self.draw(st.sampled_from(xs))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 99)) < int(p * 100)

    # -- buffers ------------------------------------------------------------------------------
    def buffer(self, name: str, dims: list[int], dtype: str, role: str) -> _Buf:
        strides, offset = _layout(self.draw, [self.sizes[d] for d in dims])
        b = _Buf(name, dims, strides, offset, dtype)
        self.docs[name] = {
            "shape": [self.sizes[d] for d in dims],
            "stride": strides,
            "offset": offset,
            "dtype": dtype,
            "role": role,
        }
        return b

    def add_written(self, b: _Buf, visible: bool = True) -> None:
        if visible:
            self.bufs.append(b)
        self.written.append(b.name)

    # -- coordinates and loads ----------------------------------------------------------------
    def bent(self, c: str, n: int) -> str:
        """A coordinate in [0, n) computed from coordinate `c`, often through big intermediates
        (near 2**31, beyond int32) or // and % of negative operands."""
        form = self.draw(st.integers(0, 19))
        big = self.pick(NEAR_2_31)
        if n == 1 or form <= 3 or form > 11:
            return c
        if form == 4:
            return f"({n - 1} - {c})"
        if form == 5:
            return f"(({c} + {big}) % {n})"
        if form == 6:
            return f"(({c} - 2) // 3 + 1)"
        if form == 7:
            return f"(({c} - {self.pick((1, 3, 5))}) % {n})"
        if form == 8:
            return self.pick((f"min({c} + 1, {n - 1})", f"max({c} - 1, 0)"))
        if form == 9:
            return f"((2147483647*{c}) % {n})"
        if form == 10:
            return f"((1073741825*{c}) // 1073741824)"
        return f"(({c} + {big} - 3) - {big - 3})"

    def load(self, b: _Buf, coord: dict[int, str]) -> str:
        at = {d: self.bent(coord[d], self.sizes[d]) for d in b.dims}
        ids = self.ids
        if ids is not None and ids.dims[0] in b.dims and ids.dims[0] in coord and self.chance(0.2):
            at[ids.dims[0]] = ids.load({d: self.bent(coord[d], self.sizes[d]) for d in ids.dims})
        shiftable = [d for d in b.dims if self.sizes[d] > 1 and not at[d].startswith("ids[")]
        if shiftable and self.chance(0.15):
            d = self.pick(shiftable)
            c, n = at[d], self.sizes[d]
            other = {"bool": "false"}.get(
                b.dtype, "0" if b.dtype in DIFF_INTS else self.pick(("0.0", "-1.5"))
            )
            if self.draw(st.booleans()):
                cond, at[d] = f"{c} >= 1", f"({c} - 1)"
            else:
                cond, at[d] = f"{c} < {n - 1}", f"({c} + 1)"
            return f"masked({cond}, {b.load(at)}, {other})"
        return b.load(at)

    def visible(self, coord: dict[int, str], family: str) -> list[_Buf]:
        out = [b for b in self.bufs if all(d in coord for d in b.dims)]
        if family == "float":
            return [b for b in out if b.dtype in DIFF_FLOATS]
        if family == "int":
            return [b for b in out if b.dtype in DIFF_INTS]
        return [b for b in out if b.dtype == "bool"]

    # -- typed values -------------------------------------------------------------------------
    def fexpr(self, depth: int, coord: dict[int, str], exact: bool = False) -> _E:
        draw = self.draw
        if depth <= 0 or draw(st.integers(0, 3)) == 0:
            return self.fleaf(coord, exact)
        a = self.fexpr(depth - 1, coord, exact)
        form = draw(st.integers(0, 9))
        if form <= 2:
            b = self.fexpr(depth - 1, coord, exact)
            return _E(f"({a.text} {self.pick(('+', '-', '*'))} {b.text})", promote(a.dtype, b.dtype))
        if form == 3:
            lit = self.pick(("0.5", "3", "-1.5", "2"))
            return _E(f"({a.text} {self.pick(('+', '*', '-'))} {lit})", a.dtype)
        if form == 4:
            fn = self.pick(("abs", "relu", "neg", "maximum", "minimum"))
            if fn in ("maximum", "minimum"):
                b = self.fexpr(depth - 1, coord, exact)
                return _E(f"{fn}({a.text}, {b.text})", promote(a.dtype, b.dtype))
            return _E(f"-({a.text})" if fn == "neg" else f"{fn}({a.text})", a.dtype)
        if form == 5:
            c = self.bexpr(depth - 1, coord)
            b = self.fexpr(depth - 1, coord, exact)
            return _E(f"where({c.text}, {a.text}, {b.text})", promote(a.dtype, b.dtype))
        if form == 6:
            i = self.iexpr(depth - 1, coord)
            return _E(f"({a.text} + {i.text})", promote(a.dtype, i.dtype))
        if form == 7:  # floor division and modulo with negative operands (Python semantics)
            op, lit = self.pick(("//", "%")), self.pick(("0.75", "-0.75", "1.5", "-2.0"))
            return _E(f"({a.text} {op} {lit})", a.dtype)
        if exact:
            return a
        if form == 8:
            fn = self.pick(
                ("sigmoid({a})", "tanh({a})", "sin({a})", "sqrt(abs({a}))", "log(abs({a}) + 1)",
                 "exp(-abs({a}))", "{a} / (abs({a}) + 1)", "fmod({a}, 1.5)")
            )  # fmt: skip
            return _E(fn.format(a=a.text), a.dtype)
        to = self.pick(DIFF_FLOATS)
        return _E(f"cast({a.text}, {to})", DType(to))

    def fleaf(self, coord: dict[int, str], exact: bool) -> _E:
        kind = self.draw(st.integers(0, 9))
        floats = self.visible(coord, "float")
        if kind <= 5 and floats:
            b = self.pick(floats)
            return _E(self.load(b, coord), DType(b.dtype))
        if kind == 6:
            i = self.ileaf(coord)
            to = self.pick(("float32", "float64", "float16"))
            return _E(f"cast({i.text}, {to})", DType(to))
        if kind == 7:
            d = self.pick(sorted(coord))
            return _E(f"(index({coord[d]}) * 0.25)", DType.float32)
        if kind == 8:
            bools = self.visible(coord, "bool")
            if bools:
                return _E(f"cast({self.load(self.pick(bools), coord)}, float32)", DType.float32)
        return _E(self.pick(("0.5", "-1.5", "3.0", "1e-3")), DType.float32)

    def iexpr(self, depth: int, coord: dict[int, str]) -> _E:
        draw = self.draw
        if depth <= 0 or draw(st.integers(0, 3)) == 0:
            return self.ileaf(coord)
        a = self.iexpr(depth - 1, coord)
        form = draw(st.integers(0, 8))
        if form <= 1:
            b = self.iexpr(depth - 1, coord)
            return _E(f"({a.text} {self.pick(('+', '-', '*'))} {b.text})", promote(a.dtype, b.dtype))
        if form == 2:  # wraps: int8 * 37, uint8 - 5, int16 * 1000, int32 * 2147483647
            op, lit = self.pick((("*", 37), ("+", 100), ("-", 5), ("*", -3), ("*", 1000), ("*", 2147483647)))
            return _E(f"({a.text} {op} {lit})", a.dtype)
        if form == 3:  # Python's // and %, negative operands and divisors included
            op, lit = self.pick(("//", "%")), self.pick((2, 3, -3, 5, -2, 7))
            shift = self.pick(("", " - 4", " - 100"))
            return _E(f"(({a.text}{shift}) {op} {lit})", a.dtype)
        if form == 4:
            b = self.iexpr(depth - 1, coord)
            fn = self.pick(("maximum", "minimum", "&", "|"))
            text = f"({a.text} {fn} {b.text})" if fn in "&|" else f"{fn}({a.text}, {b.text})"
            return _E(text, promote(a.dtype, b.dtype))
        if form == 5:
            return _E(self.pick(("~{a}", "-({a})", "abs({a})")).format(a=a.text), a.dtype)
        if form == 6:
            c = self.bexpr(depth - 1, coord)
            b = self.iexpr(depth - 1, coord)
            return _E(f"where({c.text}, {a.text}, {b.text})", promote(a.dtype, b.dtype))
        if form == 7:
            to = self.pick(DIFF_INTS)
            return _E(f"cast({a.text}, {to})", DType(to))
        b = self.bexpr(depth - 1, coord)  # bool arithmetic promotes to the int
        return _E(f"({a.text} + {b.text})", promote(a.dtype, b.dtype))

    def ileaf(self, coord: dict[int, str]) -> _E:
        kind = self.draw(st.integers(0, 9))
        ints = self.visible(coord, "int")
        if kind <= 4 and ints:
            b = self.pick(ints)
            return _E(self.load(b, coord), DType(b.dtype))
        d = self.pick(sorted(coord))
        if kind == 5:
            return _E(f"index({self.bent(coord[d], self.sizes[d])})", DType.int64)
        if kind == 6:  # an int64 value beyond int32 that cancels
            big = self.pick(NEAR_2_31)
            return _E(f"(index({coord[d]} + {big}) - {big})", DType.int64)
        if kind == 7:
            bools = self.visible(coord, "bool")
            if bools:
                to = self.pick(("int8", "uint8", "int32"))
                return _E(f"cast({self.load(self.pick(bools), coord)}, {to})", DType(to))
        if kind == 8:  # a float input times 4 truncates exactly
            exact = [b for b in self.visible(coord, "float") if b.name.startswith("in")]
            if exact:
                to = self.pick(("int8", "int32", "int64"))
                return _E(f"cast({self.load(self.pick(exact), coord)} * 4, {to})", DType(to))
        return _E(self.pick(("3", "-7", "120")), DType.int64)

    def bexpr(self, depth: int, coord: dict[int, str]) -> _E:
        draw = self.draw
        form = draw(st.integers(0, 7)) if depth > 0 else 0
        if form <= 1:
            bools = self.visible(coord, "bool")
            if bools and draw(st.booleans()):
                return _E(self.load(self.pick(bools), coord), DType.bool)
            cmp = self.pick(("<", ">=", "==", "!=", ">"))
            if draw(st.booleans()):
                a, b = self.fexpr(1, coord, exact=True), self.fexpr(1, coord, exact=True)
            else:
                a, b = self.iexpr(1, coord), self.iexpr(1, coord)
            return _E(f"({a.text} {cmp} {b.text})", DType.bool)
        a = self.bexpr(depth - 1, coord)
        if form == 2:
            return _E(f"~{a.text}", DType.bool)
        if form == 3:
            return _E(f"isnan({self.fexpr(depth - 1, coord).text})", DType.bool)
        b = self.bexpr(depth - 1, coord)
        op = self.pick(("&", "|", "+", "*"))  # bool + bool and bool * bool stay bool
        if form == 4:
            c = self.bexpr(depth - 1, coord)
            return _E(f"where({c.text}, {a.text}, {b.text})", DType.bool)
        return _E(f"({a.text} {op} {b.text})", DType.bool)

    def value(self, family: str, depth: int, coord: dict[int, str]) -> _E:
        if family == "float":
            return self.fexpr(depth, coord)
        if family == "int":
            return self.iexpr(depth, coord)
        return self.bexpr(depth, coord)

    # -- loops --------------------------------------------------------------------------------
    def loop_nest(self, dims: list[int], prefix: str = "i") -> tuple[list[list[Any]], dict[int, str]]:
        """Loops over `dims` (each kept, split in two, or merged with the next) in a random order,
        and each dim's coordinate in terms of them."""
        loops: list[list[Any]] = []
        coord: dict[int, str] = {}
        j = 0
        while j < len(dims):
            d = dims[j]
            n = self.sizes[d]
            form = self.draw(st.integers(0, 5))
            factors = [f for f in range(2, n) if n % f == 0]
            if form == 0 and factors:
                f = self.pick(factors)
                loops += [[f"{prefix}{d}a", n // f], [f"{prefix}{d}b", f]]
                coord[d] = f"({f}*{prefix}{d}a + {prefix}{d}b)"
            elif form == 1 and j + 1 < len(dims):
                e = dims[j + 1]
                m = self.sizes[e]
                loops.append([f"j{d}", n * m])
                coord[d], coord[e] = f"(j{d} // {m})", f"(j{d} % {m})"
                j += 1
            else:
                loops.append([f"{prefix}{d}", n])
                coord[d] = f"{prefix}{d}"
            j += 1
        order = self.draw(st.permutations(range(len(loops))))
        return [loops[k] for k in order], coord

    def store_index(self, out: _Buf, coord: dict[int, str]) -> str:
        """The store through the buffer's layout; sometimes rotated along a dim (a bijection)."""
        at = dict(coord)
        rotatable = [d for d in out.dims if self.sizes[d] > 1]
        if rotatable and self.chance(0.15):
            d = self.pick(rotatable)
            at[d] = f"(({at[d]} + {self.pick(NEAR_2_31)}) % {self.sizes[d]})"
        return f"{out.name}[{out.index(at)}]"

    # -- nodes --------------------------------------------------------------------------------
    def pointwise(self, name: str, family: str | None = None, depth: int = 3) -> None:
        family = family or self.pick(("float", "float", "float", "int", "int", "bool"))
        dims = list(range(self.rank))
        loops, coord = self.loop_nest(dims)
        v = self.value(family, depth, coord)
        dtype = self._store_dtype(family)
        out = self.buffer(name, dims, dtype, "intermediate")
        self.nodes.append(
            {"name": f"n_{name}", "loops": loops, "store": self.store_index(out, coord), "value": v.text}
        )
        self.add_written(out)

    def _store_dtype(self, family: str) -> str:
        if family == "float":
            return str(self.pick(DIFF_FLOATS))
        if family == "int":
            return str(self.pick(DIFF_INTS))
        return str(self.pick(("bool", "bool", "int8")))

    def reduction(self, name: str) -> None:
        draw = self.draw
        reduced = sorted(draw(st.sets(st.integers(0, self.rank - 1), min_size=1, max_size=self.rank)))
        kept = [d for d in range(self.rank) if d not in reduced]
        coord = {d: (f"i{d}" if d in kept else f"r{d}") for d in range(self.rank)}
        op = self.pick(("sum", "sum", "max", "min", "argmax", "argmin", "prod", "any"))
        family = self.pick(("float", "float", "int"))
        if op == "any":
            body = self.bexpr(2, coord).text
            out_dtype = str(self.pick(("bool", "int32")))
        elif op in ("argmax", "argmin"):
            e = self.fexpr(1, coord, exact=True) if family == "float" else self.iexpr(1, coord)
            body, out_dtype = e.text, str(self.pick(("int64", "int32")))
        elif family == "int":
            e = self.iexpr(2, coord)
            body = e.text
            out_dtype = str(self.pick(("int64", "int32", "int8")) if op != "prod" else "int64")
        else:
            e = self.fexpr(2, coord)
            body = f"(1 + sigmoid({e.text}) / 4)" if op == "prod" else e.text  # well-conditioned products
            out_dtype = str(self.pick(DIFF_FLOATS))
        rorder = draw(st.permutations(reduced))
        korder = draw(st.permutations(kept)) if kept else []
        out = self.buffer(name, korder, out_dtype, "intermediate")
        loops = {d: f"i{d}" for d in kept}
        self.nodes.append(
            {
                "name": f"n_{name}",
                "loops": [[loops[d], self.sizes[d]] for d in korder],
                "reduce": [[coord[d], self.sizes[d]] for d in rorder],
                "store": self.store_index(out, loops),
                "value": f"{op}({body})",
            }
        )
        self.add_written(out)

    def chain(self, name: str) -> None:
        """10-30 pointwise nodes, each reading the one before and the same shared input, some an
        earlier link as well: one kernel when they all fuse."""
        draw = self.draw
        dims = list(range(self.rank))
        full = [b for b in self.bufs if b.dims == dims]
        family = "int" if draw(st.integers(0, 3)) == 0 else "float"
        pool = [b for b in full if (b.dtype in DIFF_INTS) == (family == "int") and b.dtype != "bool"]
        shared = pool[0] if pool else None
        links: list[_Buf] = []
        for k in range(draw(st.integers(10, 30))):
            loops, coord = self.loop_nest(dims)
            if draw(st.booleans()):
                loops = [[f"i{d}", self.sizes[d]] for d in dims]
                coord = {d: f"i{d}" for d in dims}
            terms = [links[-1].load(coord) if links else self.value(family, 1, coord).text]
            if shared is not None:
                terms.append(shared.load(coord))
            if len(links) > 2 and draw(st.integers(0, 3)) == 0:
                terms.append(self.load(self.pick(links[:-1]), coord))
            if family == "float":
                form = self.pick(("tanh({t})", "({t}) * 0.5", "maximum({t}, -1.0)", "sin({t})"))
                text = form.format(t=" + ".join(terms))
                dtype = str(self.pick(("float32", "float32", "float16", "float64")))
            else:
                text = f"(({' + '.join(terms)}) * 3 - 1)"
                dtype = str(self.pick(DIFF_INTS))
            out = self.buffer(f"{name}_{k}", dims, dtype, "intermediate")
            self.nodes.append(
                {
                    "name": f"n_{name}_{k}",
                    "loops": loops,
                    "store": self.store_index(out, coord),
                    "value": text,
                }
            )
            self.add_written(out)
            links.append(out)

    def library(self, name: str) -> None:
        """mm / bmm / addmm as an extern or a template, on inputs or on computed operands; its
        output (any dense layout) is read by later nodes where its dims are the graph's."""
        draw = self.draw
        ops = ["mm", "addmm"] + (["bmm"] if self.rank >= 3 else [])
        op = self.pick(ops)
        dtype = str(self.pick(("float32", "float32", "float64", "float16", "bfloat16")))
        self.sizes.append(draw(st.integers(1, 5)))
        k = len(self.sizes) - 1
        if op == "bmm":
            bd, md, nd = draw(st.permutations(range(3)))
            a_dims, b_dims, c_dims = [bd, md, k], [bd, k, nd], [bd, md, nd]
        else:
            md = draw(st.integers(0, self.rank - 1))
            if self.rank >= 2:
                nd = self.pick([d for d in range(self.rank) if d != md])
            else:  # a rank-1 graph: N is a dim of its own, the result only an output
                self.sizes.append(draw(st.integers(1, 4)))
                nd = len(self.sizes) - 1
            a_dims, b_dims, c_dims = [md, k], [k, nd], [md, nd]
        operands = [self.operand(f"{name}_a", a_dims, dtype), self.operand(f"{name}_b", b_dims, dtype)]
        if op == "addmm":
            bias_dims = [nd] if draw(st.booleans()) else [md, nd]
            operands.insert(0, self.operand(f"{name}_bias", bias_dims, dtype))
        out = self.buffer(name, c_dims, dtype, "intermediate")
        node: dict[str, Any] = {
            "name": f"n_{name}",
            "kind": "extern",
            "op": op,
            "inputs": operands,
            "output": name,
        }
        if draw(st.booleans()):
            node["kind"] = "template"
            node["choices"] = [
                {"name": f"c{j}", "time_us": draw(st.sampled_from((1.0, 2.5, 2.5, 7.25)))}
                for j in range(draw(st.integers(1, 3)))
            ]
            node["epilogue_fusion"] = draw(st.booleans())
        self.nodes.append(node)
        self.add_written(out, visible=all(d < self.rank for d in c_dims))

    def operand(self, name: str, dims: list[int], dtype: str) -> str:
        """A library input: an input buffer, or a pointwise node's result computed from one."""
        src = self.buffer(f"{name}_in" if self.chance(0.5) else name, dims, dtype, "input")
        if src.name == name:
            return name
        loops, coord = self.loop_nest(dims, prefix="p")
        out = self.buffer(name, dims, dtype, "intermediate")
        value = f"({self.load(src, coord)} * 0.5 + 0.25)"
        self.nodes.append(
            {"name": f"n_{name}", "loops": loops, "store": self.store_index(out, coord), "value": value}
        )
        self.written.append(name)
        return name


@st.composite
def differential_docs(draw: Any) -> dict[str, Any]:
    """A random valid graph for the differential test (docs/format.md as a dict, YAML-dumpable)."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    if all(s == 1 for s in shape):
        shape[-1] = 4
    gen = _Diff(draw, shape)
    for i in range(draw(st.integers(1, 3))):
        dims = list(range(rank))
        if i > 0 and draw(st.booleans()):  # a broadcast input spans a subset of the dims
            dims = sorted(draw(st.sets(st.sampled_from(dims), min_size=1, max_size=rank)))
        dtype = draw(st.sampled_from(DIFF_FLOATS + DIFF_FLOATS + DIFF_INTS + ("bool",)))
        gen.bufs.append(gen.buffer(f"in{i}", dims, dtype, "input"))
    if draw(st.booleans()):
        d = draw(st.integers(0, rank - 1))
        gen.ids = _Buf("ids", [d], [1], 0, draw(st.sampled_from(("int32", "int64"))))
        gen.docs["ids"] = {
            "shape": [shape[d]],
            "stride": [1],
            "offset": 0,
            "dtype": gen.ids.dtype,
            "role": "input",
        }
    steps = draw(st.lists(st.sampled_from(("pw", "pw", "pw", "red", "red", "lib")), min_size=1, max_size=5))
    if draw(st.integers(0, 5)) == 0:  # one chain in a sixth of the graphs keeps the run time down
        steps.insert(draw(st.integers(0, len(steps))), "chain")
    for k, step in enumerate(steps):
        name = f"buf{k}"
        {"pw": gen.pointwise, "red": gen.reduction, "lib": gen.library, "chain": gen.chain}[step](name)
    outputs = {gen.written[-1]} | {w for w in gen.written[:-1] if draw(st.integers(0, 2)) == 0}
    for w in outputs:
        gen.docs[w]["role"] = "output"
    return {"format": "fuseopt-graph/1", "name": "differential", "buffers": gen.docs, "nodes": gen.nodes}
