"""Static index bounds: exact for affine indices, sound for // % min max, and masked loads checked
where their (linear) condition holds -- compared against brute-force enumeration of the box."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.errors import InputError
from fuseopt.interp import run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.bounds import constraints, index_magnitude, interval, linear_form, masked_interval
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, Load, Masked, Reduce, Unary, Var, walk
from fuseopt.ir.graph import ComputeNode
from fuseopt.ir.parser import parse_expr_text
from fuseopt.ir.typecheck import TypeChecker
from fuseopt.passes.pipeline import optimize
from tests.strategies import check


def typed_index(text: str, ranges: Mapping[str, int]) -> Expr:
    return TypeChecker(text, {"ids": DType.int64}, ranges).index(parse_expr_text(text))


def evaluate(e: Expr, env: Mapping[str, int]) -> int:
    if isinstance(e, Const):
        assert isinstance(e.value, int)
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Unary) and e.op == "neg":
        return -evaluate(e.x, env)
    if isinstance(e, Binary):
        x, y = evaluate(e.a, env), evaluate(e.b, env)
        ops = {
            "add": x + y,
            "sub": x - y,
            "mul": x * y,
            "minimum": min(x, y),
            "maximum": max(x, y),
            "lt": x < y,
            "le": x <= y,
            "gt": x > y,
            "ge": x >= y,
            "eq": x == y,
            "ne": x != y,
            "and": bool(x) and bool(y),
            "or": bool(x) or bool(y),
        }
        if e.op == "floordiv":
            return x // y
        if e.op == "mod":
            return x % y
        return int(ops[e.op])
    raise TypeError(e)


def points(ranges: Mapping[str, int]) -> list[dict[str, int]]:
    names = list(ranges)
    return [dict(zip(names, p, strict=True)) for p in itertools.product(*(range(ranges[n]) for n in names))]


def brute(e: Expr, ranges: Mapping[str, int]) -> tuple[int, int]:
    vals = [evaluate(e, p) for p in points(ranges)]
    return min(vals), max(vals)


# -- linear forms ----------------------------------------------------------------------------------
def test_linear_form_of_an_affine_index() -> None:
    f = linear_form(parse_expr_text("2048*i0 + i1 - 3 + 2*(i1 - i0)"))
    assert f.const == -3
    assert f.as_dict() == {Var("i0"): 2046, Var("i1"): 3}


def test_linear_form_cancels_and_keeps_first_appearance_order() -> None:
    f = linear_form(parse_expr_text("j + i - j + 4*k"))
    assert f.coeffs == ((Var("i"), 1), (Var("k"), 4))
    assert linear_form(parse_expr_text("i - i")).coeffs == ()


def test_non_linear_parts_are_atoms_without_dtypes() -> None:
    ranges = {"r0": 9, "h": 35}
    f = linear_form(typed_index("h + r0//3 - 1 + 2*(r0 % 3) + 5*min(h, 3)", ranges))
    atoms = dict(f.coeffs)
    assert atoms[parse_expr_text("r0 // 3")] == 1
    assert atoms[parse_expr_text("r0 % 3")] == 2
    assert atoms[parse_expr_text("min(h, 3)")] == 5
    assert all(a.dtype is None for a, _ in f.coeffs)
    assert f.const == -1


def test_products_of_variables_are_atoms() -> None:
    f = linear_form(parse_expr_text("i*j + 2"))
    assert f.coeffs == ((parse_expr_text("i*j"), 1),) and f.const == 2


# -- exact for affine, sound otherwise (checked by enumeration) ------------------------------------
RANGES = {"i": 4, "j": 3, "k": 5}


def affine_text() -> st.SearchStrategy[str]:
    term = st.tuples(st.integers(-50, 50), st.sampled_from(sorted(RANGES))).map(lambda t: f"({t[0]})*{t[1]}")
    return st.tuples(st.lists(term, min_size=1, max_size=4), st.integers(-100, 100)).map(
        lambda t: " + ".join(t[0]) + f" + ({t[1]})"
    )


@settings(max_examples=200, deadline=None)
@given(affine_text())
def test_affine_interval_is_exact(text: str) -> None:
    e = typed_index(text, RANGES)
    assert interval(e, RANGES) == brute(e, RANGES)


def index_text(depth: int = 3) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(sorted(RANGES)), st.integers(-20, 20).map(lambda v: f"({v})"))

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(inner, st.sampled_from(["//", "%"]), st.integers(1, 7)).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(st.sampled_from(["min", "max"]), inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
            inner.map(lambda s: f"-{s}"),
            inner.map(lambda s: f"max({s}, -{s})"),  # |s|, as a captured abs or reflection pad writes it
        )

    return st.recursive(leaf, extend, max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_text())
def test_interval_is_sound(text: str) -> None:
    e = typed_index(text, RANGES)
    r = interval(e, RANGES)
    assert r is not None
    lo, hi = brute(e, RANGES)
    assert r[0] <= lo and hi <= r[1], (text, r, (lo, hi))


def big_index_text() -> st.SearchStrategy[str]:
    """index_text with literals up to 2**40: intermediates far past int32 (and past int64 in
    products)."""
    leaf = st.one_of(
        st.sampled_from(sorted(RANGES)),
        st.integers(-20, 20).map(lambda v: f"({v})"),
        st.integers(-(2**40), 2**40).map(lambda v: f"({v})"),
    )

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(inner, st.sampled_from(["//", "%"]), st.integers(1, 2**33)).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(st.sampled_from(["min", "max"]), inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
            inner.map(lambda s: f"-{s}"),
            inner.map(lambda s: f"max({s}, -{s})"),  # |s|, as a captured abs or reflection pad writes it
        )

    return st.recursive(leaf, extend, max_leaves=8)


def intermediates(e: Expr, env: Mapping[str, int]) -> list[int]:
    """Every value computing `e` produces at one point: each sub-expression's (the tree), and each
    coefficient, term and running sum of its linear form in the written order and reversed (the
    literals and sums generated code and the interpreter's index sums compute), recursively
    inside its atoms."""
    out = [evaluate(n, env) for n in walk(e)]
    for n in walk(e):
        f = linear_form(n)
        out += [k for _, k in f.coeffs if k not in (1, -1)]  # 1 * a is written `a`: no literal
        terms = [k * evaluate(a, env) for a, k in f.coeffs] + [f.const]
        for order in (terms, terms[::-1]):
            acc = 0
            for t in order:
                acc += t
                out += [t, acc]
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(index_text(), big_index_text()))
def test_index_magnitude_bounds_every_intermediate(text: str) -> None:
    e = typed_index(text, RANGES)
    m = index_magnitude(e, RANGES)
    assert m is not None
    worst = max(abs(v) for p in points(RANGES) for v in intermediates(e, p))
    assert worst <= m, (text, worst, m)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("(k + 2147483645) // 268435456", 2147483649),  # the sum, not the quotient
        ("(2147483647 - k) % 4", 2147483647),  # signs apart: no partial sum past the constant
        ("(i * 2147483648 + j) % 2147483648", 3 * 2**31 + 2),
        ("2 * (k + 3) - 6", 14),
        ("min(4*i, 100) * -3", 100),  # literals are values of the index dtype too
        # a constant factor is what linear_form folds, not just a literal: generated code
        # computes 6 * ((k + 2147483000) // 2) - 6442449000
        ("(3 + 3) * ((k + 2147483000) // 2 - 1073741500)", 6 * 1073741502),
        ("65536 * (65536 * (k // 8))", 2**32),  # the coefficient generated code multiplies by
    ],
)
def test_index_magnitude_examples(text: str, want: int) -> None:
    assert index_magnitude(typed_index(text, RANGES), RANGES) == want


def test_index_magnitude_of_loads_takes_their_range() -> None:
    e = typed_index("ids[i] * 4 + 1", RANGES)
    assert index_magnitude(e, RANGES) is None  # a load is unbounded without its range
    assert index_magnitude(e, RANGES, lambda ld: (-(2**15), 2**15 - 1)) == 4 * 2**15
    assert index_magnitude(e, RANGES, lambda ld: (0, 9)) == 37


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("(i * 2147483649) % 2147483648", (0, 3)),  # coefficients reduced modulo the divisor
        ("(i * 4294967296 + j + 17179869184) // 4294967296", (4, 7)),  # multiples peeled off
        ("(7 - k) % 8", (3, 7)),  # one period: exact, where reducing -1 to 7 would not be
        ("(i * 6 + 2*j) % 3", (0, 2)),
    ],
)
def test_divisions_peel_multiples_of_the_divisor(text: str, want: tuple[int, int]) -> None:
    e = typed_index(text, RANGES)
    assert interval(e, RANGES) == want
    lo, hi = brute(e, RANGES)
    assert want[0] <= lo and hi <= want[1]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("i // 2", (0, 1)),
        ("(4*i + j) // 4", (0, 3)),
        ("(4*i + j) % 4", (0, 2)),  # the multiple of 4 peeled off: j % 4, exact
        ("(j + 4) % 8", (4, 6)),  # one period: exact
        ("min(i + 1, 3)", (1, 3)),
        ("max(i - 1, 0)", (0, 2)),
        ("8*(i // 2) + j % 2", (0, 9)),
        ("max(i - 2, -(i - 2))", (0, 2)),  # |i - 2|: 0 where i - 2 crosses 0, not -2
        ("max(2 - i, i - 2)", (0, 2)),
        # a reflection pad's row: 4 - ||k - 2| - 4|, in the storage's rows
        ("4 - max(max(k - 2, -(k - 2)) - 4, -(max(k - 2, -(k - 2)) - 4))", (0, 2)),
    ],
)
def test_non_affine_examples(text: str, want: tuple[int, int]) -> None:
    assert interval(typed_index(text, RANGES), RANGES) == want


def test_indirect_index_is_unknown_statically() -> None:
    assert interval(typed_index("4*ids[i] + j", RANGES), RANGES) is None


# -- masked loads ----------------------------------------------------------------------------------
# avg_pool2d(3, stride 1, padding 1) over a channels-last [2, 64, 35, 35] input, as Inductor emits it.
N, C, H, W = 2, 64, 35, 35
HH, WW = "h + r0//3 - 1", "w + r0%3 - 1"
POOL_COND = f"({HH} >= 0) & ({HH} < {H}) & ({WW} >= 0) & ({WW} < {W})"
POOL_INDEX = f"c + {C}*({WW}) + {W * C}*({HH}) + {H * W * C}*n"
POOL_RANGES = {"n": N, "h": H, "w": W, "c": C, "r0": 9}
STORAGE = N * C * H * W


def test_avg_pool_window_load_is_exact_under_its_mask() -> None:
    cond = TypeChecker("", {}, POOL_RANGES).condition(parse_expr_text(POOL_COND))
    conds = constraints(cond, POOL_RANGES)
    assert conds is not None and len(conds) == 4
    r = masked_interval(typed_index(POOL_INDEX, POOL_RANGES), conds, POOL_RANGES)
    assert r == (0, STORAGE - 1)
    # Unmasked, the same index leaves the storage on both sides.
    lo, hi = interval(typed_index(POOL_INDEX, POOL_RANGES), POOL_RANGES) or (0, 0)
    assert lo < 0 and hi >= STORAGE


def test_avg_pool_bound_matches_enumeration_on_a_small_image() -> None:
    ranges = {"n": 1, "h": 4, "w": 3, "c": 2, "r0": 9}
    hh, ww = "h + r0//3 - 1", "w + r0%3 - 1"
    cond_t = f"({hh} >= 0) & ({hh} < 4) & ({ww} >= 0) & ({ww} < 3)"
    idx_t = f"c + 2*({ww}) + 6*({hh}) + 24*n"
    cond = TypeChecker("", {}, ranges).condition(parse_expr_text(cond_t))
    idx = typed_index(idx_t, ranges)
    conds = constraints(cond, ranges)
    assert conds is not None
    inside = [evaluate(idx, p) for p in points(ranges) if evaluate(cond, p)]
    assert masked_interval(idx, conds, ranges) == (min(inside), max(inside)) == (0, 23)


POOL_GRAPH = f"""\
format: fuseopt-graph/1
name: pool
buffers:
  x:   {{shape: [{N}, {C}, {H}, {W}], stride: [{H * W * C}, 1, {W * C}, {C}], dtype: float32, role: input}}
  out: {{shape: [{N}, {C}, {H}, {W}], stride: [{H * W * C}, 1, {W * C}, {C}], dtype: float32, role: output}}
nodes:
  - name: pool
    loops: [[n, {N}], [h, {H}], [w, {W}], [c, {C}]]
    reduce: [[r0, 9]]
    store: out[c + {C}*w + {W * C}*h + {H * W * C}*n]
    value: "sum(masked(COND, x[INDEX], 0.0))"
"""


def test_avg_pool_graph_validates() -> None:
    g = load_text(POOL_GRAPH.replace("COND", POOL_COND).replace("INDEX", POOL_INDEX), "pool.yaml")
    node = g.nodes[0]
    assert isinstance(node, ComputeNode) and isinstance(node.value, Reduce)
    assert isinstance(node.value.x, Masked)


def test_masked_load_entirely_outside_is_an_error() -> None:
    text = POOL_GRAPH.replace("COND", POOL_COND).replace("INDEX", f"{POOL_INDEX} + {STORAGE}")
    with pytest.raises(
        InputError, match=f"masked load index of 'x' ranges over \\[{STORAGE}, {2 * STORAGE - 1}\\]"
    ):
        load_text(text, "pool.yaml")


def test_masked_load_under_a_condition_that_never_holds_is_not_checked() -> None:
    """A `cat` read at an offset leaves a branch whose condition holds nowhere in the loops
    (`index(i + 3) < 3`): its load, outside the storage, never runs."""
    text = """format: fuseopt-graph/1
name: t
buffers:
  a: {shape: [3, 4], dtype: float32, role: input}
  b: {shape: [3, 4], dtype: float32, role: input}
  o: {shape: [3, 4], dtype: float32, role: output}
nodes:
  - {name: n, loops: [[i, 3], [j, 4]], store: 'o[4*i + j]',
     value: 'where(index(i + 3) < 3, masked(index(i + 3) < 3, a[4*(i + 3) + j], 0.0), b[4*i + j])'}
"""
    assert load_text(text, "t.yaml").nodes[0].name == "n"
    with pytest.raises(InputError, match="masked load index of 'a' ranges over"):
        load_text(text.replace("index(i + 3) < 3", "index(i + 3) < 4"), "t.yaml")


@pytest.mark.parametrize("cond", ["0 >= 1", "1 < 0", "0 == 2", "2 <= 1", "(index(i) < 2) & (3 > 4)"])
def test_masked_load_under_a_false_comparison_of_constants_is_not_checked(cond: str) -> None:
    """Inductor's concatenation of a slice at a constant position (TimeSformer's class token)
    compares constants: `masked(0 >= 1, b[j - 4], 0.0)`. The load never runs, so it validates and
    the interpreter gives the other branch; where the comparison holds, the load is out of range."""
    text = f"""format: fuseopt-graph/1
name: t
buffers:
  a: {{shape: [3, 4], dtype: float32, role: input}}
  b: {{shape: [3, 4], dtype: float32, role: input}}
  o: {{shape: [3, 4], dtype: float32, role: output}}
nodes:
  - {{name: n, loops: [[i, 3], [j, 4]], store: 'o[4*i + j]',
     value: 'a[4*i + j] + masked({cond}, b[j - 4], 0.5)'}}
"""
    g = load_text(text, "t.yaml")
    a, b = torch.randn(12), torch.randn(12)
    out = run_graph(g, {"a": a, "b": b})["o"]
    torch.testing.assert_close(out, a + 0.5)
    stage = optimize(g)
    check(stage.graph, stage.plan)  # and through generated code
    holds = cond.replace("0 >= 1", "1 >= 0").replace("1 < 0", "0 < 1").replace("0 == 2", "2 == 2")
    holds = holds.replace("2 <= 1", "1 <= 2").replace("3 > 4", "4 > 3")
    with pytest.raises(InputError, match="masked load index of 'b' ranges over"):
        load_text(text.replace(cond, holds), "t.yaml")


def test_masked_load_partly_outside_is_left_to_the_run_time_check() -> None:
    # One row too many under the mask: statically possible only as a loose bound, so it loads and
    # the interpreter's run-time check names the node if it ever happens.
    cond = POOL_COND.replace(f"({HH} < {H})", f"({HH} < {H + 1})")
    g = load_text(POOL_GRAPH.replace("COND", cond).replace("INDEX", POOL_INDEX), "pool.yaml")
    tc = TypeChecker("", {}, POOL_RANGES)
    conds = constraints(tc.condition(parse_expr_text(cond)), POOL_RANGES)
    assert conds is not None
    r = masked_interval(typed_index(POOL_INDEX, POOL_RANGES), conds, POOL_RANGES)
    assert r is not None and r[1] >= STORAGE
    assert g.nodes[0].name == "pool"


def test_non_linear_condition_gives_no_static_constraints() -> None:
    cond = TypeChecker("", {}, RANGES).condition(parse_expr_text("(i * j < 3) | (k > 1)"))
    assert constraints(cond, RANGES) is None


# -- the node check through the loader ------------------------------------------------------------
def _graph(store: str, value: str, loops: str = "[[i0, 8], [i1, 16]]") -> str:
    return (
        "format: fuseopt-graph/1\nname: g\nbuffers:\n"
        "  x: {shape: [8, 16], dtype: float32, role: input}\n"
        "  t: {shape: [16, 8], stride: [1, 16], dtype: float32, role: input}\n"
        "  y: {shape: [8, 16], dtype: float32, role: output}\n"
        f"nodes:\n  - {{name: n, loops: {loops}, store: '{store}', value: '{value}'}}\n"
    )


@pytest.mark.parametrize(
    "value",
    [
        "x[16*i0 + i1]",
        "t[i0 + 8*i1]",  # transposed view of the same storage size
        "x[16*(7 - i0) + 15 - i1]",
        "x[16*min(i0 + 1, 7) + i1]",
        "x[16*max(i0 - 1, 0) + i1 // 2]",
        "x[(16*i0 + i1 + 1) % 128]",
        "masked(i0 + 1 < 8, x[16*(i0 + 1) + i1], 0.0)",
        "masked((i1 - 1 >= 0) & (i0 >= 1), x[16*(i0 - 1) + i1 - 1], 0.0)",
    ],
)
def test_in_bounds_accesses_load(value: str) -> None:
    load_text(_graph("y[16*i0 + i1]", value), "g.yaml")


@pytest.mark.parametrize(
    ("store", "value", "pointer", "want"),
    [
        ("y[16*i0 + i1 + 1]", "x[16*i0 + i1]", "/nodes/0/store", "[1, 128]"),
        ("y[16*i0 + i1]", "x[16*i0 + i1 - 1]", "/nodes/0/value", "[-1, 126]"),
        ("y[16*i0 + i1]", "x[16*min(i0 + 1, 8) + i1]", "/nodes/0/value", "[16, 143]"),
        ("y[16*i0 + i1]", "x[16*(i0 + 1) + i1 % 32]", "/nodes/0/value", "[16, 143]"),
        ("y[16*i0 + i1]", "x[(16*i0 + i1) // 2 + 64]", "/nodes/0/value", "[64, 127]"),
    ],
)
def test_out_of_bounds_is_located(store: str, value: str, pointer: str, want: str) -> None:
    text = _graph(store, value)
    if want == "[64, 127]":  # in bounds: the sound bound of (.)//2 is exact here
        load_text(text, "g.yaml")
        return
    with pytest.raises(InputError) as info:
        load_text(text, "g.yaml")
    (d,) = info.value.diagnostics
    assert d.pointer == pointer and want in d.message
    assert d.span is not None and d.source is not None
    assert isinstance(parse_expr_text(d.source[d.span.start : d.span.end]), Load)
