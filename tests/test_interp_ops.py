"""Every entry of the interpreter's op tables against torch (pointwise ops, both int and float)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fuseopt.interp import InterpError, logical_view, run_graph
from fuseopt.interp.ops import BINARY, EXACT_INDEX, INT64_MAX, INT64_MIN, LIBRARY, REDUCE, UNARY, lookup
from fuseopt.ir.build import LIBRARY_OPS
from fuseopt.ir.expr import (
    ARITH_OPS,
    BINARY_FUNCS,
    COMPARE_OPS,
    INFIX_SYMBOL,
    LOGIC_OPS,
    REDUCTIONS,
    UNARY_FUNCS,
)
from fuseopt.ir.graph import Graph
from tests.torch_programs import inputs_from, make_graph

Tensor = torch.Tensor
SPECIALS = [
    0.0,
    -0.0,
    0.5,
    1.5,
    2.5,
    -0.5,
    -1.5,
    -2.5,
    3.0,
    -7.25,
    1e-3,
    100.0,
    math.inf,
    -math.inf,
    math.nan,
]


def _float_input(n: int = 64) -> Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.cat([torch.tensor(SPECIALS), torch.randn(n - len(SPECIALS), generator=g) * 3])


def _unary_graph(op: str, in_dtype: str, out_dtype: str, n: int) -> Graph:
    return make_graph(
        {
            "a": {"shape": [n], "dtype": in_dtype, "role": "input"},
            "out": {"shape": [n], "dtype": out_dtype, "role": "output"},
        },
        [{"name": "n0", "loops": [["i0", n]], "store": "out[i0]", "value": f"{op}(a[i0])"}],
    )


def _run1(graph: Graph, **inputs: Tensor) -> Tensor:
    storages = run_graph(graph, inputs_from(graph, **inputs))
    return logical_view(graph, "out", storages["out"])


FLOAT_RESULT = ("isnan", "isinf")


@pytest.mark.parametrize("op", UNARY_FUNCS)
def test_unary_float(op: str) -> None:
    x = _float_input()
    out_dtype = "bool" if op in FLOAT_RESULT else "float32"
    got = _run1(_unary_graph(op, "float32", out_dtype, x.numel()), a=x)
    torch.testing.assert_close(got, getattr(torch, op)(x), equal_nan=True)


INT_SAME = ("abs", "relu", "floor", "ceil", "round", "trunc", "sign")


@pytest.mark.parametrize("op", INT_SAME)
def test_unary_int_keeps_dtype(op: str) -> None:
    x = torch.tensor([-5, -1, 0, 1, 2, 7, 2**31 - 1, -(2**31) + 1], dtype=torch.int32)
    got = _run1(_unary_graph(op, "int32", "int32", x.numel()), a=x)
    assert torch.equal(got, getattr(torch, op)(x))


@pytest.mark.parametrize("op", ["exp", "sqrt", "sigmoid", "reciprocal", "erf"])
def test_unary_float_op_on_int_gives_float32(op: str) -> None:
    x = torch.tensor([0, 1, 2, 3, 9], dtype=torch.int32)
    got = _run1(_unary_graph(op, "int32", "float32", x.numel()), a=x)
    torch.testing.assert_close(got, getattr(torch, op)(x))


def test_neg_and_not() -> None:
    x = torch.tensor([-3, 0, 5], dtype=torch.int64)
    g = make_graph(
        {"a": {"shape": [3], "dtype": "int64", "role": "input"}, "b": {"shape": [3], "dtype": "bool", "role": "input"},
         "out": {"shape": [3], "dtype": "int64", "role": "output"}, "nb": {"shape": [3], "dtype": "bool", "role": "output"}},
        [{"name": "n0", "loops": [["i0", 3]], "store": "out[i0]", "value": "-a[i0] + ~a[i0]"},
         {"name": "n1", "loops": [["i0", 3]], "store": "nb[i0]", "value": "~b[i0]"}],
    )  # fmt: skip
    b = torch.tensor([True, False, True])
    st = run_graph(g, inputs_from(g, a=x, b=b))
    assert torch.equal(st["out"], -x + ~x)
    assert torch.equal(st["nb"], ~b)


# Independent spellings of each binary op (Python operators on tensors follow torch).
EXPECTED: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": lambda a, b: a**b,
    "atan2": torch.atan2,
    "fmod": torch.fmod,
}
assert set(EXPECTED) == set(BINARY)


def _binary_text(op: str, a: str, b: str) -> str:
    return f"{op}({a}, {b})" if op in BINARY_FUNCS else f"{a} {INFIX_SYMBOL[op]} {b}"


def _binary_run(op: str, a: Tensor, b: Tensor, in_dtype: str, out_dtype: str) -> Tensor:
    n = a.numel()
    g = make_graph(
        {"a": {"shape": [n], "dtype": in_dtype, "role": "input"}, "b": {"shape": [n], "dtype": in_dtype, "role": "input"},
         "out": {"shape": [n], "dtype": out_dtype, "role": "output"}},
        [{"name": "n0", "loops": [["i0", n]], "store": "out[i0]", "value": _binary_text(op, "a[i0]", "b[i0]")}],
    )  # fmt: skip
    return _run1(g, a=a, b=b)


COMPARES = ("lt", "le", "gt", "ge", "eq", "ne")


@pytest.mark.parametrize("op", sorted(set(BINARY) - {"and", "or"}))
def test_binary_float(op: str) -> None:
    a = _float_input()
    b = torch.roll(_float_input(), 5) + 0.25
    got = _binary_run(op, a, b, "float32", "bool" if op in COMPARES else "float32")
    torch.testing.assert_close(got, EXPECTED[op](a, b), equal_nan=True)


@pytest.mark.parametrize("op", sorted(set(BINARY) - {"truediv", "atan2", "pow"}))
def test_binary_int(op: str) -> None:
    a = torch.tensor([-7, -7, 7, 7, 0, 5, -1, 12, 2**31 - 1], dtype=torch.int32)
    b = torch.tensor([2, -2, 2, -2, 3, 5, 4, -5, 2], dtype=torch.int32)
    got = _binary_run(op, a, b, "int32", "bool" if op in COMPARES else "int32")
    assert torch.equal(got, EXPECTED[op](a, b)), (got, EXPECTED[op](a, b))


def test_int_floor_semantics() -> None:
    a = torch.tensor([-7, 7, -7, 7], dtype=torch.int64)
    b = torch.tensor([2, 2, -2, -2], dtype=torch.int64)
    assert _binary_run("floordiv", a, b, "int64", "int64").tolist() == [-4, 3, 3, -4]
    assert _binary_run("mod", a, b, "int64", "int64").tolist() == [1, 1, -1, -1]
    assert _binary_run("fmod", a, b, "int64", "int64").tolist() == [-1, 1, -1, 1]


def test_int_true_division_and_pow() -> None:
    a = torch.tensor([7, -7, 1, 0], dtype=torch.int32)
    b = torch.tensor([2, 2, 3, 5], dtype=torch.int32)
    got = _binary_run("truediv", a, b, "int32", "float32")
    torch.testing.assert_close(got, a / b)
    assert got.tolist()[:2] == [3.5, -3.5]
    assert torch.equal(_binary_run("pow", a, b, "int32", "int32"), a**b)
    torch.testing.assert_close(_binary_run("atan2", a, b, "int32", "float32"), torch.atan2(a, b))


@pytest.mark.parametrize("op", ["and", "or"])
def test_logic_on_bool(op: str) -> None:
    a = torch.tensor([True, True, False, False])
    b = torch.tensor([True, False, True, False])
    assert torch.equal(_binary_run(op, a, b, "bool", "bool"), EXPECTED[op](a, b))


def test_tables_cover_the_language() -> None:
    assert set(UNARY) == set(UNARY_FUNCS) | {"neg", "not"}
    assert set(BINARY) == set(ARITH_OPS) | set(COMPARE_OPS) | set(LOGIC_OPS) | set(BINARY_FUNCS)
    assert set(REDUCE) == set(REDUCTIONS)
    assert set(LIBRARY) == set(LIBRARY_OPS)


def test_tables_name_unknown_ops() -> None:
    for table, kind in ((UNARY, "unary"), (BINARY, "binary"), (REDUCE, "reduction"), (LIBRARY, "extern")):
        with pytest.raises(
            InterpError, match=f"node 'n3': the reference interpreter has no {kind} op 'frob'"
        ):
            lookup(table, "frob", kind, node="n3")


def test_an_op_missing_from_the_table_is_named_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    g = _unary_graph("erf", "float32", "float32", 4)
    monkeypatch.delitem(UNARY, "erf")
    with pytest.raises(InterpError, match="node 'n0': .*no unary op 'erf'"):
        run_graph(g)


# -- exact index arithmetic ------------------------------------------------------------------------
_INT64 = st.integers(INT64_MIN, INT64_MAX)
_NEAR = st.sampled_from(
    [INT64_MIN, INT64_MIN + 1, -(2**62), -3, -1, 0, 1, 2, 3, 2**31, 2**62, INT64_MAX - 1, INT64_MAX]
)
_PY: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "minimum": min,
    "maximum": max,
}


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(sorted(_PY)), st.lists(st.tuples(_INT64 | _NEAR, _INT64 | _NEAR), min_size=1, max_size=16)
)
def test_exact_index_ops_flag_exactly_the_overflowing_lanes(op: str, pairs: list[tuple[int, int]]) -> None:
    """The interpreter's checked index arithmetic: the wrapped result where it fits, and a flag
    on exactly the lanes whose true (Python) result leaves int64."""
    a = torch.tensor([p[0] for p in pairs], dtype=torch.int64)
    b = torch.tensor([p[1] for p in pairs], dtype=torch.int64)
    r, bad = EXACT_INDEX[op](a, b)
    exact = [_PY[op](x, y) for x, y in pairs]
    want_bad = [not INT64_MIN <= v <= INT64_MAX for v in exact]
    assert (bad.tolist() if bad is not None else [False] * len(pairs)) == want_bad
    assert [v for v, f in zip(r.tolist(), want_bad, strict=True) if not f] == [
        v for v in exact if INT64_MIN <= v <= INT64_MAX
    ]


def test_exact_index_table_covers_the_index_operators() -> None:
    from fuseopt.ir.typecheck import INDEX_BINARY

    assert set(EXACT_INDEX) == set(INDEX_BINARY)
