"""Type checking: names, index vs value contexts, and torch's dtype promotion on every node."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from fuseopt.errors import ExprError
from fuseopt.ir.dtypes import DType, promote
from fuseopt.ir.expr import Expr, Load, walk
from fuseopt.ir.parser import parse_expr_text
from fuseopt.ir.typecheck import TypeChecker

BUFS = {
    "f32": DType.float32,
    "f16": DType.float16,
    "bf16": DType.bfloat16,
    "f64": DType.float64,
    "i8": DType.int8,
    "u8": DType.uint8,
    "i32": DType.int32,
    "i64": DType.int64,
    "b": DType.bool,
}
LOOPS = {"i0": 4, "i1": 8, "r0": 3}


def value(text: str, allow_reduce: bool = False) -> Expr:
    return TypeChecker(text, BUFS, LOOPS).value(parse_expr_text(text), allow_reduce=allow_reduce)


def index(text: str) -> Expr:
    return TypeChecker(text, BUFS, LOOPS).index(parse_expr_text(text))


@pytest.mark.parametrize(
    ("text", "dtype"),
    [
        ("f32[i0]", DType.float32),
        ("f16[i0] + 1", DType.float16),  # a literal is weak
        ("f16[i0] + 1.5", DType.float16),
        ("i32[i0] + 1", DType.int32),
        ("i32[i0] + 1.5", DType.float32),  # weak float over a strong int: the default float
        ("i8[i0] + u8[i0]", DType.int16),
        ("f16[i0] + bf16[i0]", DType.float32),
        ("f32[i0] * f64[i0]", DType.float64),
        ("i64[i0] / 2", DType.float32),  # true division of ints is floating
        ("exp(i32[i0])", DType.float32),
        ("exp(f64[i0])", DType.float64),
        ("abs(i8[i0])", DType.int8),
        ("isnan(f32[i0])", DType.bool),
        ("f32[i0] < 1", DType.bool),
        ("b[i0] & (f32[i0] > 0)", DType.bool),
        ("~b[i0]", DType.bool),
        ("i32[i0] & i8[i0]", DType.int32),
        ("where(b[i0], i8[i0], 2.5)", DType.float32),
        ("where(b[i0], f16[i0], f32[i0])", DType.float32),
        ("masked(i0 < 2, f16[i0], 0.0)", DType.float16),
        ("cast(f32[i0], int8)", DType.int8),
        ("index(4*i0 + i1)", DType.int64),
        ("i0 + i1", DType.int64),
        ("maximum(u8[i0], i8[i0])", DType.int16),
        ("f32[i64[i0]]", DType.float32),
        ("f32[i8[i0] + 2*i1]", DType.float32),
        ("true", DType.bool),
        ("1", DType.int64),
        ("1.0", DType.float32),
    ],
)
def test_value_dtypes(text: str, dtype: DType) -> None:
    e = value(text)
    assert e.dtype == dtype
    assert all(n.dtype is not None for n in walk(e)), "every node is typed"


@pytest.mark.parametrize(
    ("text", "dtype"),
    [
        ("sum(f16[i0 + r0])", DType.float16),
        ("sum(i8[i0 + r0])", DType.int64),
        ("sum(b[i0 + r0])", DType.int64),
        ("prod(i32[i0 + r0])", DType.int64),
        ("max(f32[i0 + r0])", DType.float32),
        ("min(u8[i0 + r0])", DType.uint8),
        ("argmax(f32[i0 + r0])", DType.int64),
        ("argmin(f16[i0 + r0])", DType.int64),
        ("any(f32[i0 + r0] > 0)", DType.bool),
    ],
)
def test_reduction_dtypes(text: str, dtype: DType) -> None:
    assert value(text, allow_reduce=True).dtype == dtype


_TORCH = {
    DType.float32: torch.float32,
    DType.float16: torch.float16,
    DType.bfloat16: torch.bfloat16,
    DType.float64: torch.float64,
    DType.int8: torch.int8,
    DType.uint8: torch.uint8,
    DType.int16: torch.int16,
    DType.int32: torch.int32,
    DType.int64: torch.int64,
    DType.bool: torch.bool,
}


@pytest.mark.parametrize("x", list(DType))
@pytest.mark.parametrize("y", list(DType))
def test_promotion_matches_torch(x: DType, y: DType) -> None:
    want = torch.result_type(torch.zeros(1, dtype=_TORCH[x]), torch.zeros(1, dtype=_TORCH[y]))
    assert _TORCH[promote(x, y)] == want
    for weak in (1, 1.5, True):
        want_weak = torch.result_type(torch.zeros(1, dtype=_TORCH[x]), weak)
        weak_dtype = (
            DType.bool if isinstance(weak, bool) else DType.int64 if isinstance(weak, int) else DType.float32
        )
        assert _TORCH[promote(x, weak_dtype, b_weak=True)] == want_weak, (x, weak)


@pytest.mark.parametrize(
    ("text", "message", "offending"),
    [
        ("q[i0]", "unknown buffer 'q'", "q[i0]"),
        ("f32[j]", "unknown variable 'j'", "j"),
        ("f32 + 1", "buffer 'f32' needs an index", "f32"),
        ("f32[f32[i0]]", "indirect index reads f32 of dtype float32", "f32[i0]"),
        ("f32[b[i0]]", "indirect index reads b of dtype bool", "b[i0]"),
        ("f32[i0 / 2]", "'/' is true division", "i0 / 2"),
        ("f32[i0 // i1]", "'//' in an index must be by a positive integer literal", "i1"),
        ("f32[i0 % 0]", "'%' in an index must be by a positive integer literal", "0"),
        ("f32[i0 // -2]", "positive integer literal", "-2"),
        ("f32[1.5]", "integer-valued", "1.5"),
        ("f32[exp(i0)]", "not allowed in an index expression", "exp(i0)"),
        ("f32[i0 < 2]", "not allowed in an index expression", "i0 < 2"),
        ("where(f32[i0], 1, 2)", "a condition must be boolean", "f32[i0]"),
        ("masked(i32[i0], f32[i0], 0.0)", "a condition must be boolean (a comparison), not int32", "i32[i0]"),
        ("~f32[i0]", "'~' needs a bool or integer operand", "~f32[i0]"),
        ("f32[i0] | b[i0]", "'|' needs bool or integer operands", "f32[i0] | b[i0]"),
        ("sum(f32[i0])", "a reduction may only be the whole value", "sum(f32[i0])"),
        ("exp(sum(f32[i0]))", "a reduction may only be the whole value", "sum(f32[i0])"),
    ],
)
def test_errors_name_the_offending_characters(text: str, message: str, offending: str) -> None:
    with pytest.raises(ExprError) as info:
        value(text)
    err = info.value
    assert message in err.message
    assert text[err.span.start : err.span.end] == offending


def test_nested_reduction_is_rejected_even_where_reductions_are_allowed() -> None:
    with pytest.raises(ExprError, match="whole value"):
        value("sum(max(f32[i0 + r0]))", allow_reduce=True)


def test_index_context() -> None:
    e = index("4*i0 + i1 // 2 - min(i1, 3) + i64[i0]")
    assert e.dtype == DType.int64
    assert all(n.dtype == DType.int64 for n in walk(e))


def test_loads_are_collected_inner_first() -> None:
    tc = TypeChecker("", BUFS, LOOPS)
    tc.value(parse_expr_text("f32[i64[i0]] + f16[i1]"))
    assert [ld.buffer for ld in tc.loads] == ["i64", "f32", "f16"]
    assert all(isinstance(ld, Load) and ld.dtype == BUFS[ld.buffer] for ld in tc.loads)


def test_typing_keeps_spans() -> None:
    text = "f32[4*i0 + i1] * 2"
    parsed = parse_expr_text(text)
    typed = value(text)
    assert [n.span for n in walk(parsed)] == [n.span for n in walk(typed)]


# -- what torch rejects: bool arithmetic, literal zero divisors, negative literal exponents ----------
# Operands by how they are written, and what torch sees for them: a bool literal or number is a
# Python scalar (weak), a load a tensor.
_OPERANDS: dict[str, object] = {
    "b[i0]": torch.tensor([True, True]),
    "b[i1]": torch.tensor([True, True]),
    "true": True,
    "2": 2,
    "2.5": 2.5,
    "i8[i0]": torch.tensor([3, -4], dtype=torch.int8),
    "f32[i0]": torch.tensor([1.5, -2.0]),
}


def _tensor(x: object) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.tensor(x)


# Each op as torch runs it; functions that take no Python scalars see a 0-d tensor (which promotes
# like one).
_TORCH_BINARY: dict[str, Callable[[Any, Any], torch.Tensor]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "<": lambda a, b: a < b,
    "pow": lambda a, b: torch.pow(a, b) if isinstance(a, torch.Tensor) else torch.pow(a, _tensor(b)),
    "fmod": lambda a, b: torch.fmod(_tensor(a), b),
    "maximum": lambda a, b: torch.maximum(_tensor(a), _tensor(b)),
    "minimum": lambda a, b: torch.minimum(_tensor(a), _tensor(b)),
    "atan2": lambda a, b: torch.atan2(_tensor(a), _tensor(b)),
}
_PAIRS = [
    ("b[i0]", "b[i1]"), ("b[i0]", "true"), ("b[i0]", "2"), ("b[i0]", "2.5"), ("b[i0]", "i8[i0]"),
    ("b[i0]", "f32[i0]"), ("i8[i0]", "b[i0]"), ("f32[i0]", "b[i0]"), ("true", "b[i0]"), ("2", "b[i0]"),
    ("2.5", "b[i0]"), ("i8[i0]", "true"), ("f32[i0]", "true"),
]  # fmt: skip


def _torch_dtype(fn: Callable[[], torch.Tensor]) -> torch.dtype | None:
    try:
        return fn().dtype
    except (RuntimeError, TypeError):
        return None


def _ours(text: str) -> torch.dtype | None:
    try:
        e = value(text)
    except ExprError:
        return None
    assert e.dtype is not None
    return _TORCH[e.dtype]


@pytest.mark.parametrize("op", sorted(_TORCH_BINARY))
@pytest.mark.parametrize(("a", "b"), _PAIRS)
def test_bool_arithmetic_is_accepted_exactly_where_torch_accepts_it(op: str, a: str, b: str) -> None:
    """Validation accepts what torch computes, with torch's result dtype, and rejects what torch
    raises for, on bools with every kind of other operand (tensor, bool, int or float literal)."""
    text = f"{op}({a}, {b})" if op[0].isalpha() else f"{a} {op} {b}"
    want = _torch_dtype(lambda: _TORCH_BINARY[op](_OPERANDS[a], _OPERANDS[b]))
    assert _ours(text) == want, (text, want)


@pytest.mark.parametrize(
    "op",
    ["neg", "abs", "relu", "floor", "ceil", "round", "trunc", "sign", "exp", "sqrt", "sigmoid",
     "reciprocal", "isnan", "isinf", "not"],
)  # fmt: skip
def test_unary_ops_on_bools_follow_torch(op: str) -> None:
    fn = {"neg": torch.neg, "not": torch.bitwise_not}.get(op) or getattr(torch, op)
    text = "-b[i0]" if op == "neg" else "~b[i0]" if op == "not" else f"{op}(b[i0])"
    assert _ours(text) == _torch_dtype(lambda: fn(torch.tensor([True, False]))), text


@pytest.mark.parametrize("dtype", ["i8", "u8", "i32", "i64", "b"])
@pytest.mark.parametrize("op", ["//", "%", "fmod"])
@pytest.mark.parametrize("divisor", ["0", "false", "256", "-256", "4294967296"])
def test_a_literal_zero_divisor_is_a_located_error_where_torch_raises(
    dtype: str, op: str, divisor: str
) -> None:
    """A literal is converted to the other operand's dtype first (torch's Python scalars): 256 is 0
    as int8 or uint8, not as int32; bool // 2 is int64 and 0 divides nothing there either."""
    text = f"fmod({dtype}[i0], {divisor})" if op == "fmod" else f"{dtype}[i0] {op} {divisor}"
    a = torch.tensor([5, 1], dtype=_TORCH[BUFS[dtype]])
    scalar = False if divisor == "false" else int(divisor)
    torch_raises = _torch_dtype(lambda: _TORCH_BINARY[op](a, scalar) if op == "fmod" else
                                _TORCH_BINARY[op](a, scalar)) is None  # fmt: skip
    ours = _ours(text)
    assert (ours is None) == torch_raises, text
    if ours is None and BUFS[dtype] != DType.bool:
        with pytest.raises(ExprError, match="integer division by zero") as info:
            value(text)
        assert text[info.value.span.start : info.value.span.end] == divisor


@pytest.mark.parametrize("dtype", ["i8", "u8", "i32", "i64"])
@pytest.mark.parametrize("exponent", ["-1", "-3", "2", "0", "200", "-1.0"])
def test_integer_pow_with_a_literal_exponent_follows_torch(dtype: str, exponent: str) -> None:
    a = torch.tensor([3, 1], dtype=_TORCH[BUFS[dtype]])
    lit = float(exponent) if "." in exponent else int(exponent)
    want = _torch_dtype(lambda: torch.pow(a, lit))
    text = f"pow({dtype}[i0], {exponent})"
    assert _ours(text) == want, text
    if want is None:
        with pytest.raises(ExprError) as info:
            value(text)
        assert text[info.value.span.start : info.value.span.end] == exponent


_BAD = Path(__file__).parent / "bad_inputs"
_LOCATED = {
    name: entry
    for name, entry in yaml.safe_load((_BAD / "expected.yaml").read_text()).items()
    if name.startswith(("bool_", "int_")) and "line" in entry[0]
}


@pytest.mark.parametrize("name", sorted(_LOCATED))
def test_validate_and_optimize_agree_on_rejected_arithmetic(name: str, tmp_path: Path) -> None:
    """What torch rejects is a type error of validation, located (pointer, line, column, caret),
    and `optimize` stops at the same diagnostic before writing anything (it used to pass
    validation and fail in code generation, without a location)."""
    from click.testing import CliRunner

    from fuseopt.cli.main import _register, cli

    _register()
    (want,) = _LOCATED[name]
    path = str(_BAD / name)
    report = json.loads(CliRunner().invoke(cli, ["validate", "--format", "json", path]).stdout)
    (err,) = report["results"][0]["errors"]
    assert (err["pointer"], err["line"], err["column"]) == (want["pointer"], want["line"], want["column"])
    assert want["message"] in err["message"] and err["code"] == "type" and "span" in err
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["optimize", path, "-o", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{path}:{want['line']}:{want['column']}: {want['pointer']}: {err['message']}" in result.output
    assert not out.exists()
