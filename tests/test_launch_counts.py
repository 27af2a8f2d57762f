"""`codegen.launch_counts`: what a launch reads and writes, counted from the kernel IR. Whether
rows start aligned (`rows_aligned`, which lets a split reduction cut r into uneven chunks) is
checked against the launch's points by brute force (every index evaluated where the launch is
small, a sample of its points where it is not) on the golden kernels, slices of every alignment
and random graphs."""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import HealthCheck, given, settings

from fuseopt.codegen.launch_counts import rows_aligned
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, Placement, build_schedule, digits_of
from fuseopt.codegen.strategies import SplitPartial, split
from fuseopt.codegen.tile_shapes import choose_tiling
from fuseopt.io.load import load_text
from fuseopt.ir.expr import Binary, Const, Expr, Unary, Var, walk
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from tests.strategies import doc_graph, graph_docs
from tests.sweeps import examples
from tests.update_golden import kernel_graphs, planned

VECTOR = CodegenOptions().gpu.max_vector_bytes


class _NotAffine(Exception):
    pass


def _eval(e: Expr, env: Mapping[str, int]) -> int:
    """An integer index at one point: sums, products, floor division and modulo of loop variables."""
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Const) and type(e.value) is int:
        return e.value
    if isinstance(e, Unary) and e.op == "neg":
        return -_eval(e.x, env)
    if isinstance(e, Binary) and e.op in _OPS:
        return _OPS[e.op](_eval(e.a, env), _eval(e.b, env))
    raise _NotAffine(e)


_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
}


def _points(p: Placement, fixed: Mapping[str, int], rnd: random.Random) -> Iterator[dict[str, int]]:
    """Every point of the node's loops that `fixed` leaves free, or 256 of them (corners first)."""
    free = [(lv.name, lv.size) for lv in (*p.node.loops, *p.node.reduce) if lv.name not in fixed]
    total = 1
    for _, n in free:
        total *= n
    if total <= 4096:
        for values in itertools.product(*(range(n) for _, n in free)):
            yield {**fixed, **dict(zip((v for v, _ in free), values, strict=True))}
        return
    yield {**fixed, **{v: 0 for v, _ in free}}
    yield {**fixed, **{v: n - 1 for v, n in free}}
    for _ in range(254):
        yield {**fixed, **{v: rnd.randrange(n) for v, n in free}}


def _reductions(graph: Graph) -> Iterator[tuple[Graph, ComputeLaunch]]:
    """(the planned graph, a reduction launch of it), as `fuseopt optimize` plans `graph`."""
    stage = optimize(graph)
    for launch in build_schedule(stage.graph, stage.plan).launches:
        if isinstance(launch, ComputeLaunch) and launch.stores and launch.kind != "pointwise":
            yield stage.graph, launch


def check_rows_aligned_is_sound(graph: Graph, launch: ComputeLaunch) -> bool:
    """Where `rows_aligned` says so, every global read one step along r moves by one element
    starts each row of x (r at 0) on a vector boundary, and every read is affine. Returns what
    it said."""
    if not rows_aligned(graph, launch, VECTOR):
        return False
    sizes = {a.name: a.numel for a in launch.axes}
    produced = launch.producer()
    rnd = random.Random(0)
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        digits = digits_of(p, sizes)
        along_r = [v for v, d in digits.items() if d is not None and d.base == "r0_index"]
        fastest = [v for v in along_r if digits[v].div == 1 and p.node.var_sizes[v] > 1]  # type: ignore[union-attr]
        for ld in p.node.reads():
            if ld.buffer in produced:
                continue
            item = graph.buffer(ld.buffer).dtype.itemsize
            for env in _points(p, dict.fromkeys(along_r, 0), rnd):
                start = _eval(ld.index, env)  # raises for a read that is not affine
                unit = any(_eval(ld.index, {**env, v: 1}) - start == 1 for v in fastest)
                if unit:
                    assert start * item % VECTOR == 0, (ld.buffer, env, start)
    return True


def _slice(offset: int, stride: int, dtype: str, rows: int = 8, cols: int = 4000) -> Graph:
    """Row sums of `x[:, offset:offset + cols]` of an [rows, stride] tensor: every row starts at
    `offset + stride * row` elements."""
    text = f"""
format: fuseopt-graph/1
name: slice_sum
buffers:
  x: {{shape: [{rows}, {stride}], dtype: {dtype}, role: input}}
  out: {{shape: [{rows}], dtype: float32, role: output}}
nodes:
  - name: n0
    loops: [[x0, {rows}]]
    reduce: [[r0, {cols}]]
    store: out[x0]
    value: sum(x[{offset} + {stride}*x0 + r0])
"""
    return load_text(text, "slice.yaml")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("offset", range(9))
@pytest.mark.parametrize("stride", [4096, 4097, 4104])
def test_a_slices_rows_are_aligned_only_where_every_row_starts_on_a_vector(
    dtype: str, offset: int, stride: int
) -> None:
    """x[:, k:] of a row-major tensor: each row starts at (k + stride * row) elements, aligned iff
    both are whole vectors; an uneven split (chunks that do not divide r) needs that."""
    item = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
    graph = _slice(offset, stride, dtype)
    ((graph, launch),) = _reductions(graph)
    want = offset * item % VECTOR == 0 and stride * item % VECTOR == 0
    assert rows_aligned(graph, launch, VECTOR) is want
    assert check_rows_aligned_is_sound(graph, launch) is want
    o = CodegenOptions(split_programs=64, strategy="split")
    planned_split = split.applies(graph, launch, o)
    if planned_split is not None:
        s = planned_split.strategy
        assert isinstance(s, SplitPartial)
        assert want or s.chunk * s.chunks == 4000  # chunks that do not divide r: aligned rows only


@pytest.mark.parametrize("path", kernel_graphs(), ids=os.path.basename)
def test_rows_aligned_on_the_golden_kernels(path: str) -> None:
    """Every reduction of every golden kernel graph: where rows count as aligned, they are."""
    for graph, launch in _reductions(planned(path).graph):
        check_rows_aligned_is_sound(graph, launch)


@settings(
    max_examples=examples(100, quick=10),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(graph_docs())
def test_rows_aligned_on_random_graphs(doc: dict[str, object]) -> None:
    for graph, launch in _reductions(doc_graph(doc)):
        check_rows_aligned_is_sound(graph, launch)


def _quotients(e: Expr, env: Mapping[str, int]) -> list[int]:
    """The quotient of every `//` and `%` by a literal in `e` at one point (where they wrap)."""
    out = []
    for sub in walk(e):
        if isinstance(sub, Binary) and sub.op in ("floordiv", "mod") and isinstance(sub.b, Const):
            out.append(_eval(sub.a, env) // int(sub.b.value))
    return out


@pytest.mark.parametrize(
    "text",
    [
        "(8029*x0 + r) % 12544",  # a chunk of a channel's points read across images
        "12544*x1 + (8029*x0 + r) % 12544 + 401408*(((8029*x0 + r) // 12544) % 16)",
        "(12544*x0 + r) // 12544 + 3*r",
        "(6*x0 + 2*r) % 6 + x0 // 3",
        "7 + 5*x0 - r",
        "((x0 + r) // 4) % 3 * 10 + (x0 + r) % 4",
    ],
)
def test_run_steps_are_the_steps_between_wraps(text: str) -> None:
    """At every point of a small box, one step of a variable moves the index by `run_steps`'s
    step for it unless some `//` or `%` of the index wraps on the way."""
    from fuseopt.codegen.launch_counts import run_steps
    from fuseopt.ir.parser import parse_expr_text

    e = parse_expr_text(text)
    steps = run_steps(e)
    assert steps is not None
    checked = 0
    for x0, x1, r in itertools.product(range(5), range(3), range(0, 20000, 97)):
        env = {"x0": x0, "x1": x1, "r": r}
        for v in ("x0", "r"):
            moved = {**env, v: env[v] + 1}
            if _quotients(e, env) == _quotients(e, moved):
                assert _eval(e, moved) - _eval(e, env) == steps.get(v, 0), (v, env)
                checked += 1
    assert checked > 500


def test_run_steps_unknown_where_an_operator_hides_the_step() -> None:
    from fuseopt.codegen.launch_counts import run_steps
    from fuseopt.ir.parser import parse_expr_text

    for text in ("min(x0 + r, 100)", "(x0 + r) // y", "x0 * r"):
        assert run_steps(parse_expr_text(text)) is None, text


def test_a_reduction_read_across_wraps_counts_as_contiguous_along_r() -> None:
    """A BatchNorm's statistics as Inductor splits them on a GPU: each row reads a chunk of a
    channel's points, `(8029*x0 + r) % 12544` images apart, contiguous along r between wraps.
    Counted along r, not left out (its three [800] results, contiguous along x, would then
    decide: a tile of 8 rows, 100 programs, 2.5x torch.compile's time on an H100)."""
    from fuseopt.codegen.launch_counts import contiguous_bytes
    from fuseopt.io.load import load_graph

    path = os.path.join(os.path.dirname(__file__), "fixtures", "bn_train_f16_captured_h100.json")
    (graph, launch), *_ = _reductions(load_graph(path))
    assert launch.axes[0].numel == 800 and launch.axes[1].numel == 8029
    along, _ = contiguous_bytes(graph, launch)
    assert along["r0_index"] > 100 * along["xindex"], along
    tiling = choose_tiling(graph, launch, CodegenOptions())
    assert tiling.config.block("XBLOCK") == 1, tiling.config  # 800 programs, a row each
