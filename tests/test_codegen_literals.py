"""Expressions whose parts are literals: the emitter folds them (a literal stays a weak Python
number, a comparison of two literals a constant condition, `index` of literals a constant), and
a folded part still has to be a value of the right dtype and shape where it meets a tensor (the
class of `(0 * 0).to(...)`, which Triton cannot compile). Random expressions over literals, loop
variables and loads, as a pointwise node and inside a reduction, run under the Triton interpreter
against the reference, with a reduction unrolled, held whole and looped."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from fuseopt.codegen.options import CodegenOptions
from fuseopt.errors import InputError
from fuseopt.interp import InterpError
from fuseopt.io.load import load_text
from tests.strategies import check, unfused_plan
from tests.sweeps import examples

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

LITERALS = ("0", "1", "2", "-3", "7", "0.5", "-1.25", "true", "false", "inf", "nan")
# Correctly rounded operations only: the reference (torch) and the interpreter (numpy) then agree
# to the bit, which comparisons, `floor` and casts to integers need. A function a libm rounds its
# own way (exp: 1 ulp apart at 1.8e6) would turn into a different integer after `cast(..., int8)`.
UNARY = ("abs", "sqrt", "floor", "sign", "isnan", "reciprocal", "-")
BINARY = ("+", "-", "*", "/", "//", "%", "<", "==", "&", "maximum", "minimum", "min", "max")
N = 6  # points of the pointwise loop and of the reduction


LOADS = {
    "x": "float32",
    "k": "int32",
    "h": "float16",
    "b": "bfloat16",
    "c": "int8",
    "u": "uint8",
    "z": "bool",
}
REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "any")
DTYPES = ("float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool")


@st.composite
def expressions(draw: st.DrawFn, var: str, depth: int = 0) -> str:
    """An expression of literals, `var`, `index(...)` of literals and `var`, and loads."""
    leaf = depth >= 3 or draw(st.integers(0, 3)) == 0
    if leaf:
        loads = [f"{name}[{var}]" for name in LOADS]
        return draw(
            st.sampled_from([*LITERALS, var, *loads, f"index({var} * 2 + 1)", "index(3 * 2)", "index(0 * 0)"])
        )
    kind = draw(st.sampled_from(("unary", "binary", "binary", "where", "masked", "cast")))
    a = draw(expressions(var, depth + 1))
    if kind == "unary":
        op = draw(st.sampled_from(UNARY))
        return f"-({a})" if op == "-" else f"{op}({a})"
    b = draw(expressions(var, depth + 1))
    if kind == "binary":
        op = draw(st.sampled_from(BINARY))
        return f"{op}({a}, {b})" if op.isalpha() else f"({a}) {op} ({b})"
    if kind == "where":
        return f"where(({a}) > ({b}), {a}, {draw(expressions(var, depth + 1))})"
    if kind == "masked":
        cond = draw(st.sampled_from((f"{var} < 3", "1 < 3", "3 < 1", f"({a}) > 0")))
        fill = draw(st.sampled_from(("0", "0.0", "-1", "inf", "0.5", "0.1", "1e10", "nan")))
        return f"masked({cond}, {a}, {fill})"
    return f"cast({a}, {draw(st.sampled_from(DTYPES))})"


def _result(op: str | None, dtype: str) -> str:
    """The dtype of `op(cast(e, dtype))` (None: the pointwise `cast(e, dtype)`), as torch types it."""
    if op in ("argmax", "argmin"):
        return "int64"
    if op == "any":
        return "bool"
    if op in ("sum", "prod") and not dtype.startswith(("float", "bfloat")):
        return "int64"
    return dtype


def _graph(value: str, op: str | None, dtype: str = "float32") -> str:
    """A node storing `op(cast(value, dtype))` over N points of r0 (`cast(value, dtype)` at each
    of N points where `op` is None) into `out`, beside inputs of every dtype."""
    loops = f"loops: [[i0, {N}]], reduce: [[r0, {N}]]" if op else f"loops: [[i0, {N}]]"
    body = f"{op}(cast({value}, {dtype}))" if op else f"cast({value}, {dtype})"
    inputs = "".join(f"  {name}: {{shape: [{N}], dtype: {dt}, role: input}}\n" for name, dt in LOADS.items())
    return (
        "format: fuseopt-graph/1\nname: literals\nbuffers:\n"
        + inputs
        + f"  out: {{shape: [{N}], dtype: {_result(op, dtype)}, role: output}}\n"
        f"nodes:\n  - {{name: n0, {loops}, store: 'out[i0]', value: '{body}'}}\n"
    )


@settings(
    max_examples=examples(300, quick=40),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_literal_expressions_match_the_reference(data: st.DataObject) -> None:
    op = data.draw(st.sampled_from((None, None, *REDUCTIONS)))
    value = data.draw(expressions("r0" if op else "i0"))
    try:
        graph = load_text(_graph(value, op, data.draw(st.sampled_from(DTYPES))), "literals.yaml")
    except InputError:  # a type error torch would raise too (`-true`, `x // 0`, ...)
        reject()
    plan = unfused_plan(graph)
    try:
        check(graph, plan)
    except InterpError:  # the reference refuses the point (`0 // abs(0)`: torch raises too)
        reject()
    if op:  # the reduction unrolled into a pointwise tile, held whole, and looped
        for name in ("unrolled", "persistent_row", "looped_row"):
            check(graph, plan, CodegenOptions(strategy=name))


@pytest.mark.parametrize(
    "value",
    [
        "masked(i0 < 3, x[i0] > 0, 0.5)",  # a fill of 0.5 is true, not 0
        "masked(i0 < 3, k[i0], inf)",  # not defined by torch: converted at run time
        "masked(i0 < 3, k[i0], nan)",
        "masked(i0 < 3, k[i0], 1e30)",
        "masked(i0 < 3, cast(k[i0], int8), 300.0)",
        "masked(i0 < 3, cast(k[i0], int8), 300)",  # an integer literal wraps
        "masked(i0 < 3, k[i0], -2.7)",  # truncated toward zero
    ],
)
def test_a_float_fill_of_an_integer_or_bool_value(value: str) -> None:
    """masked(c, e, other) keeps e's dtype: a float `other` is converted as torch converts it."""
    graph = load_text(_graph(value, None), "fill.yaml")
    check(graph, unfused_plan(graph))


@pytest.mark.parametrize(
    "value",
    [
        "where(u[i0] > masked(i0 < 3, 0, -1), u[i0], 0)",  # -1 is 255 as uint8: never greater
        "c[i0] < masked(i0 < 3, 200, -1)",  # 200 is -56 as int8
    ],
)
def test_a_masked_literal_is_weak_like_its_body(value: str) -> None:
    """masked(c, literal, literal) takes the other operand's dtype, as a literal does."""
    graph = load_text(_graph(value, None, "int64"), "weak.yaml")
    check(graph, unfused_plan(graph))
