"""Type checking: names resolved, index vs value contexts enforced, every node given its dtype.

Dtypes follow torch's promotion (`fuseopt.ir.dtypes.promote`) with literals weak. The result of
each rule is a table entry keyed by op name; an op missing from the tables is a bug, not input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from fuseopt.errors import ExprError
from fuseopt.ir.dtypes import DType, promote
from fuseopt.ir.expr import (
    ARITH_OPS,
    BINARY_FUNCS,
    COMPARE_OPS,
    LOGIC_OPS,
    Binary,
    Cast,
    Const,
    Expr,
    IndexValue,
    Load,
    Masked,
    Reduce,
    Unary,
    Var,
    Where,
)

# Unary functions by result rule: "float" -> floating (ints promote to float32), "same" -> operand
# dtype, "bool" -> bool.
UNARY_RESULT: dict[str, str] = {
    **dict.fromkeys(
        ("exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
         "sigmoid", "erf", "reciprocal"),
        "float",
    ),
    **dict.fromkeys(("abs", "relu", "floor", "ceil", "round", "trunc", "sign", "neg"), "same"),
    **dict.fromkeys(("isnan", "isinf"), "bool"),
    "not": "same",
}  # fmt: skip
BINARY_RESULT: dict[str, str] = {
    **dict.fromkeys(("add", "sub", "mul", "floordiv", "mod", "maximum", "minimum", "pow", "fmod"), "promote"),
    "truediv": "float",
    "atan2": "float",
    **dict.fromkeys(COMPARE_OPS, "bool"),
    **dict.fromkeys(LOGIC_OPS, "promote"),
}
REDUCTION_RESULT: dict[str, str] = {
    "sum": "acc",
    "prod": "acc",
    "max": "same",
    "min": "same",
    "argmax": "int64",
    "argmin": "int64",
    "any": "bool",
}
# Operators allowed inside index expressions (integer arithmetic only).
INDEX_BINARY = frozenset({"add", "sub", "mul", "floordiv", "mod", "minimum", "maximum"})

assert set(BINARY_RESULT) == set(ARITH_OPS) | set(BINARY_FUNCS) | set(COMPARE_OPS) | set(LOGIC_OPS)


def _const_dtype(v: int | float | bool) -> DType:
    if isinstance(v, bool):
        return DType.bool
    return DType.int64 if isinstance(v, int) else DType.float32


class TypeChecker:
    """Checks one expression against a scope: buffer dtypes and the loop variables in scope."""

    def __init__(self, source: str, buffers: Mapping[str, DType], loop_vars: Mapping[str, int]):
        self.source = source
        self.buffers = buffers
        self.loop_vars = loop_vars

    def error(self, msg: str, e: Expr, code: str = "type") -> ExprError:
        return ExprError(msg, self.source, e.span, code=code)

    # -- index context --------------------------------------------------------------------
    def index(self, e: Expr) -> Expr:
        """An integer index expression over loop variables (and indirect loads)."""
        if isinstance(e, Const):
            if not isinstance(e.value, int) or isinstance(e.value, bool):
                raise self.error("index expressions are integer-valued; this literal is not an integer", e)
            return replace(e, dtype=DType.int64)
        if isinstance(e, Var):
            self.check_var(e)
            return replace(e, dtype=DType.int64)
        if isinstance(e, Load):
            ld = self.load(e)
            assert ld.dtype is not None
            if not ld.dtype.is_int:
                raise self.error(
                    f"indirect index reads {e.buffer} of dtype {ld.dtype.value}; it must be an integer dtype",
                    e,
                )
            return replace(ld, dtype=DType.int64)
        if isinstance(e, Unary) and e.op == "neg":
            return replace(e, x=self.index(e.x), dtype=DType.int64)
        if isinstance(e, Binary) and e.op in INDEX_BINARY:
            a, b = self.index(e.a), self.index(e.b)
            if e.op in ("floordiv", "mod") and not (
                isinstance(b, Const) and isinstance(b.value, int) and b.value > 0
            ):
                sym = "//" if e.op == "floordiv" else "%"
                raise self.error(f"'{sym}' in an index must be by a positive integer literal", e.b)
            return replace(e, a=a, b=b, dtype=DType.int64)
        if isinstance(e, Binary) and e.op == "truediv":
            raise self.error("'/' is true division; index expressions use '//' (floor division)", e)
        raise self.error(
            "not allowed in an index expression (integers, loop variables, + - * // % min max, loads)", e
        )

    def check_var(self, e: Var) -> None:
        if e.name not in self.loop_vars:
            if e.name in self.buffers:
                raise self.error(f"buffer {e.name!r} needs an index: {e.name}[...]", e, code="name")
            raise self.error(
                f"unknown variable {e.name!r} (not a loop variable of this node)", e, code="name"
            )

    def load(self, e: Load) -> Load:
        if e.buffer not in self.buffers:
            raise self.error(f"unknown buffer {e.buffer!r}", e, code="name")
        return replace(e, index=self.index(e.index), dtype=self.buffers[e.buffer])

    # -- value context --------------------------------------------------------------------
    def value(self, e: Expr, *, allow_reduce: bool = False) -> Expr:
        typed, _weak = self._value(e, allow_reduce)
        return typed

    def _value(self, e: Expr, allow_reduce: bool) -> tuple[Expr, bool]:
        if isinstance(e, Const):
            return replace(e, dtype=_const_dtype(e.value)), True
        if isinstance(e, Var):
            self.check_var(e)  # a bare loop variable in a value is its int64 index value
            return replace(e, dtype=DType.int64), False
        if isinstance(e, Load):
            return self.load(e), False
        if isinstance(e, IndexValue):
            return replace(e, index=self.index(e.index), dtype=DType.int64), False
        if isinstance(e, Masked):
            cond = self.condition(e.cond)
            body, bw = self._value(e.body, False)
            other, ow = self._value(e.other, False)
            assert body.dtype is not None and other.dtype is not None
            # masked() keeps the body's dtype: `other` is a fill value (Inductor's ops.masked).
            return replace(e, cond=cond, body=body, other=other, dtype=body.dtype), bw
        if isinstance(e, Where):
            cond = self.condition(e.cond)
            a, aw = self._value(e.a, False)
            b, bw = self._value(e.b, False)
            assert a.dtype is not None and b.dtype is not None
            return replace(
                e, cond=cond, a=a, b=b, dtype=promote(a.dtype, b.dtype, a_weak=aw, b_weak=bw)
            ), aw and bw
        if isinstance(e, Cast):
            x, _ = self._value(e.x, False)
            return replace(e, x=x, dtype=e.to), False
        if isinstance(e, Unary):
            x, w = self._value(e.x, False)
            assert x.dtype is not None
            rule = UNARY_RESULT[e.op]
            if e.op == "not" and x.dtype.is_float:
                raise self.error("'~' needs a bool or integer operand", e)
            out = {
                "float": x.dtype if x.dtype.is_float else DType.float32,
                "same": x.dtype,
                "bool": DType.bool,
            }[rule]
            return replace(e, x=x, dtype=out), w and rule == "same"
        if isinstance(e, Binary):
            a, aw = self._value(e.a, False)
            b, bw = self._value(e.b, False)
            assert a.dtype is not None and b.dtype is not None
            p = promote(a.dtype, b.dtype, a_weak=aw, b_weak=bw)
            rule = BINARY_RESULT[e.op]
            if e.op in LOGIC_OPS and p.is_float:
                raise self.error(f"'{'&' if e.op == 'and' else '|'}' needs bool or integer operands", e)
            out = {"promote": p, "float": p if p.is_float else DType.float32, "bool": DType.bool}[rule]
            return replace(e, a=a, b=b, dtype=out), aw and bw and rule == "promote"
        if isinstance(e, Reduce):
            if not allow_reduce:
                raise self.error(
                    "a reduction may only be the whole value of a reduction node", e, code="reduction"
                )
            x, _ = self._value(e.x, False)
            assert x.dtype is not None
            rule = REDUCTION_RESULT[e.op]
            if rule == "acc":
                out = x.dtype if x.dtype.is_float else DType.int64
            elif rule == "same":
                out = x.dtype
            else:
                out = DType(rule)
            return replace(e, x=x, dtype=out), False
        raise self.error(f"unsupported expression {type(e).__name__}", e)

    def condition(self, e: Expr) -> Expr:
        c = self.value(e)
        if c.dtype != DType.bool:
            raise self.error(
                f"a condition must be boolean (a comparison), not {c.dtype.value if c.dtype else '?'}", e
            )
        return c
