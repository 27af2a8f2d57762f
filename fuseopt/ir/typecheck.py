"""Type checking: names resolved, index vs value contexts enforced, every node given its dtype.

Dtypes follow torch's promotion (`fuseopt.ir.dtypes.promote`) with literals weak. The result of
each rule is a table entry keyed by op name; an op missing from the tables is a bug, not input.
What torch rejects for dtypes or literals alone (arithmetic on bools, an integer division by a
literal zero, an integer power to a negative literal) is a located type error here, so that
validation and every later stage agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from fuseopt.errors import ExprError
from fuseopt.ir.dtypes import INT_BOUNDS, DType, promote, wrap
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
    to_text,
    walk,
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
# Ops torch rejects on bool values. "operand": a bool operand, tensor or literal (`-b`, `b - c`,
# `x - true`; torch: negation and subtraction never take a bool; abs, relu and rounding are not
# implemented for it); "promoted": operands that promote to bool (`b // c`; a bool with an integer
# or float operand computes in that dtype, `b // 2` is int64). `sign`, `~`, `+`, `*`, comparisons,
# min/max and the float functions take bools.
BOOL_REJECTED: dict[str, str] = {
    **dict.fromkeys(("neg", "sub", "abs", "relu", "floor", "ceil", "round", "trunc"), "operand"),
    **dict.fromkeys(("floordiv", "mod", "fmod", "pow"), "promoted"),
}
# Integer quotients: a literal divisor that is 0 in the operands' dtype is an error torch raises at
# the call, and the checker knows the literal, so it is a validation error (a divisor that is 0 at
# run time: the reference raises, see docs/format.md); pow's literal exponents likewise.
INT_DIVISIONS = frozenset({"floordiv", "mod", "fmod"})
_SYMBOL = {"neg": "unary '-'", "sub": "'-'", "floordiv": "'//'", "mod": "'%'"}

# Operators allowed inside index expressions (integer arithmetic only).
INDEX_BINARY = frozenset({"add", "sub", "mul", "floordiv", "mod", "minimum", "maximum"})

assert set(BINARY_RESULT) == set(ARITH_OPS) | set(BINARY_FUNCS) | set(COMPARE_OPS) | set(LOGIC_OPS)


class _TypedIndex:
    """The typed tree of a parsed index without loads, and the names of its variables (found
    when it is first reused). It holds the parsed tree, so that no other object takes its id."""

    __slots__ = ("parsed", "typed", "names")

    def __init__(self, parsed: Expr, typed: Expr) -> None:
        self.parsed = parsed
        self.typed = typed
        self.names: tuple[str, ...] | None = None


# By the id of the parsed tree (`TypeChecker.load_index`); bounded.
_TYPED_INDICES: dict[int, _TypedIndex] = {}
_TYPED_INDICES_MAX = 4096


def _const_dtype(v: int | float | bool) -> DType:
    if isinstance(v, bool):
        return DType.bool
    return DType.int64 if isinstance(v, int) else DType.float32


_I64 = DType.int64


class TypeChecker:
    """Checks one expression against a scope: buffer dtypes and the loop variables in scope.

    Returns a new tree with `dtype` set on every node (trees are frozen; nodes are rebuilt with
    their constructors rather than `dataclasses.replace`, which is several times slower and this
    runs on every node of every expression of a graph).
    """

    def __init__(self, source: str, buffers: Mapping[str, DType], loop_vars: Mapping[str, int]):
        self.source = source
        self.buffers = buffers
        self.loop_vars = loop_vars
        # Every typed load checked so far, inner (indirect) loads before the load they index.
        self.loads: list[Load] = []

    def error(self, msg: str, e: Expr, code: str = "type") -> ExprError:
        return ExprError(msg, self.source, e.span, code=code)

    # -- index context --------------------------------------------------------------------
    def index(self, e: Expr) -> Expr:
        """An integer index expression over loop variables (and indirect loads)."""
        if type(e) is Var:
            if e.name not in self.loop_vars:
                self.check_var(e)
            return Var(e.name, span=e.span, dtype=_I64)
        if type(e) is Binary:
            if e.op in INDEX_BINARY:
                a, b = self.index(e.a), self.index(e.b)
                if e.op in ("floordiv", "mod") and not (
                    isinstance(b, Const) and type(b.value) is int and b.value > 0
                ):
                    sym = "//" if e.op == "floordiv" else "%"
                    raise self.error(f"'{sym}' in an index must be by a positive integer literal", e.b)
                return Binary(e.op, a, b, span=e.span, dtype=_I64)
            if e.op == "truediv":
                raise self.error("'/' is true division; index expressions use '//' (floor division)", e)
        elif type(e) is Const:
            if type(e.value) is not int:
                raise self.error("index expressions are integer-valued; this literal is not an integer", e)
            return Const(e.value, span=e.span, dtype=_I64)
        elif type(e) is Load:
            ld = self.load(e)
            assert ld.dtype is not None
            if not ld.dtype.is_int:
                raise self.error(
                    f"indirect index reads {e.buffer} of dtype {ld.dtype.value}; it must be an integer dtype",
                    e,
                )
            return Load(ld.buffer, ld.index, span=ld.span, dtype=_I64)
        elif type(e) is Unary and e.op == "neg":
            return Unary("neg", self.index(e.x), span=e.span, dtype=_I64)
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
        dtype = self.buffers.get(e.buffer)
        if dtype is None:
            raise self.error(f"unknown buffer {e.buffer!r}", e, code="name")
        typed = Load(e.buffer, self.load_index(e.index), span=e.span, dtype=dtype)
        self.loads.append(typed)
        return typed

    def load_index(self, e: Expr) -> Expr:
        """`index(e)`, shared: the parser shares the index trees of equal texts at equal offsets
        (`_Parser.bracketed`), and the typed tree of one without loads depends on nothing else but
        whether its variables are in scope (if one is not, `index` raises as before)."""
        hit = _TYPED_INDICES.get(id(e))
        if hit is not None and hit.parsed is e:
            if hit.names is None:  # met a second time: worth knowing its variables
                hit.names = tuple({n.name for n in walk(e) if isinstance(n, Var)})
            if all(name in self.loop_vars for name in hit.names):
                return hit.typed
        n_loads = len(self.loads)
        typed = self.index(e)
        if len(self.loads) == n_loads:  # no indirect load inside
            if len(_TYPED_INDICES) >= _TYPED_INDICES_MAX:
                _TYPED_INDICES.clear()
            _TYPED_INDICES[id(e)] = _TypedIndex(e, typed)
        return typed

    # -- value context --------------------------------------------------------------------
    def value(self, e: Expr, *, allow_reduce: bool = False) -> Expr:
        typed, _weak = self._value(e, allow_reduce)
        return typed

    def _value(self, e: Expr, allow_reduce: bool) -> tuple[Expr, bool]:
        """(typed tree, weak): weak = a Python-scalar-like literal for promotion (torch rules)."""
        if type(e) is Load:
            return self.load(e), False
        if type(e) is Binary:
            a, aw = self._value(e.a, False)
            b, bw = self._value(e.b, False)
            assert a.dtype is not None and b.dtype is not None
            p = promote(a.dtype, b.dtype, a_weak=aw, b_weak=bw)
            rule = BINARY_RESULT[e.op]
            if e.op in LOGIC_OPS and p.is_float:
                raise self.error(f"'{'&' if e.op == 'and' else '|'}' needs bool or integer operands", e)
            if e.op in BOOL_REJECTED:
                self.check_bool_binary(e, a, b, aw, p)
            if type(b) is Const and p in INT_BOUNDS:
                self.check_int_literal(e, b, p)
            out = (
                p
                if rule == "promote"
                else DType.bool
                if rule == "bool"
                else p
                if p.is_float
                else DType.float32
            )
            return Binary(e.op, a, b, span=e.span, dtype=out), aw and bw and rule == "promote"
        if type(e) is Const:
            return Const(e.value, span=e.span, dtype=_const_dtype(e.value)), True
        if type(e) is Var:
            self.check_var(e)  # a bare loop variable in a value is its int64 index value
            return Var(e.name, span=e.span, dtype=_I64), False
        if type(e) is Unary:
            x, w = self._value(e.x, False)
            assert x.dtype is not None
            rule = UNARY_RESULT[e.op]
            if e.op == "not" and x.dtype.is_float:
                raise self.error("'~' needs a bool or integer operand", e)
            if x.dtype == DType.bool and e.op in BOOL_REJECTED:
                raise self.error(self.bool_message(e.op), e)
            if rule == "float":
                out = x.dtype if x.dtype.is_float else DType.float32
            else:
                out = x.dtype if rule == "same" else DType.bool
            return Unary(e.op, x, span=e.span, dtype=out), w and rule == "same"
        if type(e) is IndexValue:
            return IndexValue(self.index(e.index), span=e.span, dtype=_I64), False
        if type(e) is Masked:
            cond = self.condition(e.cond)
            body, bw = self._value(e.body, False)
            other, _ow = self._value(e.other, False)
            assert body.dtype is not None and other.dtype is not None
            # masked() keeps the body's dtype: `other` is a fill value (Inductor's ops.masked).
            return Masked(cond, body, other, span=e.span, dtype=body.dtype), bw
        if type(e) is Where:
            cond = self.condition(e.cond)
            a, aw = self._value(e.a, False)
            b, bw = self._value(e.b, False)
            assert a.dtype is not None and b.dtype is not None
            out = promote(a.dtype, b.dtype, a_weak=aw, b_weak=bw)
            return Where(cond, a, b, span=e.span, dtype=out), aw and bw
        if type(e) is Cast:
            x, _ = self._value(e.x, False)
            return Cast(x, e.to, span=e.span, dtype=e.to), False
        if type(e) is Reduce:
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
            return Reduce(e.op, x, span=e.span, dtype=out), False
        raise self.error(f"unsupported expression {type(e).__name__}", e)

    # -- what torch rejects ----------------------------------------------------------------------
    def bool_message(self, op: str) -> str:
        what = _SYMBOL.get(op, op)
        hint = {
            "neg": "; use '~' to invert a mask",
            "sub": "; use '~' to invert a mask, or cast() the operands to an integer dtype",
        }.get(op, "; cast() the operand to an integer dtype first")
        return f"{what} is not defined on bool values (torch rejects it){hint}"

    def check_bool_binary(self, e: Binary, a: Expr, b: Expr, a_weak: bool, p: DType) -> None:
        if BOOL_REJECTED[e.op] == "operand":
            bad = DType.bool in (a.dtype, b.dtype)
        else:
            bad = p == DType.bool
            if e.op == "pow" and bad and isinstance(b, Const) and not a_weak:
                bad = False  # pow(b, true) is b, pow(b, false) is 1: torch's scalar exponents
        if bad:
            raise self.error(self.bool_message(e.op), e)

    def check_int_literal(self, e: Binary, b: Const, p: DType) -> None:
        """Integer ops that torch rejects for the value of a literal second operand."""
        if p == DType.bool or type(b.value) not in (int, bool):
            return
        v = int(b.value)
        if e.op in INT_DIVISIONS and wrap(v, p) == 0:
            sym = {"floordiv": "'//'", "mod": "'%'", "fmod": "fmod()"}[e.op]
            as_p = "" if v == 0 else f", which is 0 as {p.value} (literals take the other operand's dtype)"
            raise self.error(
                f"integer division by zero: {sym} by the literal {to_text(b)}{as_p}; torch raises "
                "ZeroDivisionError",
                b,
            )
        if e.op == "pow" and type(b.value) is int:
            hi = INT_BOUNDS[p][1]
            if v < 0:
                raise self.error(
                    f"pow() of {p.value} values to the negative literal {v}: torch raises 'Integers to "
                    "negative integer powers are not allowed' (write a float exponent for a float result)",
                    b,
                )
            if v > hi:
                raise self.error(f"pow() exponent {v} does not fit {p.value} (torch rejects it)", b)

    def condition(self, e: Expr) -> Expr:
        c = self.value(e)
        if c.dtype != DType.bool:
            raise self.error(
                f"a condition must be boolean (a comparison), not {c.dtype.value if c.dtype else '?'}", e
            )
        return c
