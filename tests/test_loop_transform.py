"""Loop transformations (`passes/loop_transform.py`): re-factoring maps proven bijections and checked
pointwise, and the index simplification rules."""

from __future__ import annotations

import random

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.errors import CheckFailed
from fuseopt.ir.expr import to_text
from fuseopt.ir.graph import LoopVar
from fuseopt.ir.parser import parse_expr_text
from fuseopt.passes.loop_transform import prove_refactor, refactor_map, simplify
from tests.sweeps import examples


def test_refactor_is_proven_a_bijection() -> None:
    old = (LoopVar("i0", 16), LoopVar("i1", 8192))
    new = (LoopVar("a", 1024), LoopVar("b", 128))
    mapping = refactor_map(old, new)
    assert mapping is not None
    assert to_text(mapping["i0"]) == "a // 64" and to_text(mapping["i1"]) == "128 * (a % 64) + b"
    prove_refactor(old, new, mapping)  # no exception: sympy proves the flat position is kept
    bad = dict(mapping, i1=parse_expr_text("b"))
    with pytest.raises(CheckFailed):
        prove_refactor(old, new, bad)
    # Boundaries that do not form a divisibility chain have no re-factoring.
    assert refactor_map((LoopVar("i", 6), LoopVar("j", 4)), (LoopVar("a", 4), LoopVar("b", 6))) is None


@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
)
@settings(max_examples=examples(60, quick=6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_refactor_maps_agree_with_enumeration(sizes: list[int], data: st.DataObject) -> None:
    """Every re-factoring map sends the row-major position to the same position (checked pointwise)."""
    import math

    total = math.prod(sizes)
    # A coarser factorization of the same box: merge a random run of adjacent loops.
    k = data.draw(st.integers(0, len(sizes) - 1))
    j = data.draw(st.integers(k, len(sizes) - 1))
    new_sizes = [*sizes[:k], math.prod(sizes[k : j + 1]), *sizes[j + 1 :]]
    old = tuple(LoopVar(f"o{i}", s) for i, s in enumerate(sizes))
    new = tuple(LoopVar(f"n{i}", s) for i, s in enumerate(new_sizes))
    mapping = refactor_map(old, new)
    assert mapping is not None
    prove_refactor(old, new, mapping)
    syms = {lv.name: sympy.Symbol(lv.name) for lv in new}
    for flat in range(0, total, max(1, total // 17)):
        digits, rest = {}, flat
        for lv in reversed(new):
            digits[lv.name], rest = rest % lv.size, rest // lv.size
        pos = 0
        for lv in old:
            value = _eval_index(mapping[lv.name], digits)
            assert 0 <= value < lv.size
            pos = pos * lv.size + value
        assert pos == flat
    del syms


def _eval_index(e: object, env: dict[str, int]) -> int:
    from fuseopt.ir.expr import Binary, Const, Var

    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[e.name]
    assert isinstance(e, Binary)
    a, b = _eval_index(e.a, env), _eval_index(e.b, env)
    ops = {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "floordiv": lambda: a // b,
        "mod": lambda: a % b,
        "minimum": lambda: min(a, b),
        "maximum": lambda: max(a, b),
    }
    return ops[e.op]()


@pytest.mark.parametrize(
    ("text", "ranges", "want"),
    [
        ("64*(q0 // 64) + (128*(q0 % 64) + q1) // 128", {"q0": 1024, "q1": 128}, "q0"),
        ("256*q0 + (32*q1 + q2) // 32", {"q0": 8, "q1": 256, "q2": 32}, "256 * q0 + q1"),
        ("(8*a + b) % 8", {"a": 10, "b": 8}, "b"),
        ("x % 235200 // 6720", {"x": 10**6}, "x // 6720 % 35"),
        ("x // 8 % 25 % 5", {"x": 1000}, "x // 8 % 5"),
        ("min(max(x - 1, 0), 999)", {"x": 1000}, "maximum(x - 1, 0)"),  # only the clamp that binds
        ("max(min(x, 998), 0) + min(y, 7)", {"x": 1000, "y": 8}, "minimum(x, 998) + y"),
    ],
)
def test_simplify_rules(text: str, ranges: dict[str, int], want: str) -> None:
    e = parse_expr_text(text)
    got = simplify(e, ranges)
    assert to_text(got) == want
    # And the rewrite is an identity over the box.
    rng = random.Random(0)
    for _ in range(200):
        env = {v: rng.randrange(n) for v, n in ranges.items()}
        assert _eval_index(got, env) == _eval_index(e, env)


def _linear(draw: st.DrawFn, names: list[str]) -> str:
    terms = [f"({draw(st.integers(-300, 300))})*{v}" for v in names]
    return " + ".join([*terms, f"({draw(st.integers(-50, 50))})"])


@st.composite
def _digit_indices(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    """An index as a sum of digits (`c*(L // d)`, `c*(L % m)`) and clamps (`min(L, c)`,
    `max(L, c)`, binding or not) of linear forms over a small box."""
    sizes = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3))
    names = [f"i{k}" for k in range(len(sizes))]
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        inner = _linear(draw, names)
        op = draw(st.sampled_from(["//", "%", "min", "max"]))
        c = draw(st.integers(1, 96 if op in ("//", "%") else 3000)) * draw(st.sampled_from([1, -1]))
        part = f"(({inner}) {op} ({c}))" if op in ("//", "%") else f"{op}({inner}, {c})"
        parts.append(f"{draw(st.integers(1, 64))}*{part}")
    return " + ".join(parts), dict(zip(names, sizes, strict=True))


@given(_digit_indices())
@settings(max_examples=examples(200, quick=40), deadline=None)
def test_simplify_indices_keeps_every_address_and_never_adds_a_division_or_clamp(
    case: tuple[str, dict[str, int]],
) -> None:
    """`simplify_indices` (what code generation prints): the same address at every point of the
    box, no more `//` and `%` than the graph wrote, and a second pass changes nothing."""
    import itertools

    from fuseopt.ir.expr import Load
    from fuseopt.ir.graph import ComputeNode
    from fuseopt.passes.loop_transform import _nonlinear_ops, simplify_indices

    text, sizes = case
    index = parse_expr_text(text)
    loops = tuple(LoopVar(v, n) for v, n in sizes.items())
    node = ComputeNode("n0", "pointwise", loops, (), Load("out", parse_expr_text("0")), Load("x", index))
    got = simplify_indices(node)
    assert isinstance(got.value, Load)
    assert _nonlinear_ops(got.value.index) <= _nonlinear_ops(index)
    for point in itertools.product(*(range(n) for n in sizes.values())):
        env = dict(zip(sizes, point, strict=True))
        assert _eval_index(got.value.index, env) == _eval_index(index, env), env
    assert simplify_indices(got) is got


@pytest.mark.parametrize("sizes", [(4, 6), (3, 8, 5), (16, 12)])
def test_an_index_written_as_its_digits_generates_the_kernel_of_the_index(sizes: tuple[int, ...]) -> None:
    """A graph written by hand may spell a flat index as its digits (`d*(L // d) + L % d`), or
    clamp it into a range it never leaves: it is planned and generated as if it spelled `L` (the
    loops merge, the load is contiguous)."""
    from fuseopt.codegen import emit_module
    from fuseopt.io.load import load_text
    from fuseopt.passes.pipeline import optimize

    names = [f"i{k}" for k in range(len(sizes))]
    strides = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        strides[k] = strides[k + 1] * sizes[k + 1]
    flat = " + ".join(f"{s}*{v}" for s, v in zip(strides, names, strict=True))
    d = sizes[-1]

    def graph(index: str) -> str:
        loops = ", ".join(f'["{v}", {n}]' for v, n in zip(names, sizes, strict=True))
        total = strides[0] * sizes[0]
        return (
            '{"format": "fuseopt-graph/1", "name": "digits", "buffers": {'
            f'"x": {{"shape": [{total}], "dtype": "float32", "role": "input"}}, '
            f'"out": {{"shape": [{total}], "dtype": "float32", "role": "output"}}}}, '
            f'"nodes": [{{"name": "n0", "loops": [{loops}], "store": "out[{flat}]", '
            f'"value": "2 * x[{index}]"}}]}}'
        )

    def kernels(text: str) -> str:
        stage = optimize(load_text(text, "digits.json"))
        return emit_module(stage.graph, stage.plan)

    plain = kernels(graph(flat))
    assert kernels(graph(f"{d}*(({flat}) // {d}) + ({flat}) % {d}")) == plain
    last = strides[0] * sizes[0] - 1
    assert kernels(graph(f"min(max({flat}, 0), {last})")) == plain  # clamps that never bind
