"""Op -> Triton rule tables (one entry per op name); the `@triton.jit` helpers they call are in
`codegen.helpers`.

Only `tl` functions that exist in triton 3.6 and later (and run under TRITON_INTERPRET=1) are used:
libdevice is not available in the interpreter, so log1p, expm1, tanh, round, atan2, pow, ... are
small helpers written with tl.exp/tl.log/tl.floor (accurate to a few ulp, enough for
`torch.testing.assert_close` tolerances). An op missing from a table is a `CodegenError` naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fuseopt.codegen.common import CodegenError
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Cast, Expr, Unary


@dataclass(frozen=True)
class OpRule:
    """The Triton spelling of an op by the category of the dtype it runs in; None: undefined there.

    Templates use `{x}` (unary) or `{a}`/`{b}` (binary); a template that is exactly `{x}` is the
    identity (no instruction is emitted).
    """

    float: str | None
    int: str | None
    bool: str | None

    def template(self, dtype: DType) -> str | None:
        if dtype.is_float:
            return self.float
        if dtype == DType.bool:
            return self.bool
        return self.int


def _same(t: str, *, bool_: str | None = None) -> OpRule:
    return OpRule(t, t, bool_)


UNARY_RULES: dict[str, OpRule] = {
    "exp": OpRule("tl.exp({x})", None, None),
    "exp2": OpRule("tl.exp2({x})", None, None),
    "log": OpRule("tl.log({x})", None, None),
    "log2": OpRule("tl.log2({x})", None, None),
    "log1p": OpRule("_log1p({x})", None, None),
    "expm1": OpRule("_expm1({x})", None, None),
    "sqrt": OpRule("tl.sqrt({x})", None, None),
    "rsqrt": OpRule("tl.rsqrt({x})", None, None),
    "abs": OpRule("tl.abs({x})", "tl.abs({x})", "{x}"),
    "sin": OpRule("tl.sin({x})", None, None),
    "cos": OpRule("tl.cos({x})", None, None),
    "tan": OpRule("_tan({x})", None, None),
    "tanh": OpRule("_tanh({x})", None, None),
    "sigmoid": OpRule("tl.sigmoid({x})", None, None),
    "erf": OpRule("tl.erf({x})", None, None),
    "reciprocal": OpRule("1.0 / {x}", None, None),
    "relu": OpRule("_relu({x})", "_relu({x})", "{x}"),
    "floor": OpRule("tl.floor({x})", "{x}", "{x}"),
    "ceil": OpRule("tl.ceil({x})", "{x}", "{x}"),
    "round": OpRule("_round({x})", "{x}", "{x}"),
    "trunc": OpRule("_trunc({x})", "{x}", "{x}"),
    "sign": OpRule("_sign({x})", "_sign({x})", "{x}"),
    "isnan": _same("{x} != {x}", bool_="{x} != {x}"),
    "isinf": OpRule('tl.abs({x}) == float("inf")', "{x} != {x}", "{x} != {x}"),
    "neg": OpRule("-{x}", "-{x}", None),
    "not": OpRule(None, "~{x}", "{x} == 0"),
}

ROUNDINGS = frozenset({"floor", "ceil", "trunc", "round"})


def rounds_to_integer(e: Expr) -> bool:
    """Whether `e` rounds its operand to an integer (floor, ceil, trunc, round, a cast to an
    integer type). A quotient there is divided correctly rounded (`tl.div_rn`, a reciprocal only
    if exact), as torch's is: one within an ulp or two (Triton's float32 `/`, a product by the
    divisor's reciprocal) lands below an exact integer quotient and rounds to the integer below
    (`floor(-700000.0 / 7.0)` is -100000; `x * float32(1/7)` gives -100001). Inductor divides with
    `div_rn` in floor division likewise."""
    return isinstance(e, Unary) and e.op in ROUNDINGS or isinstance(e, Cast) and not e.to.is_float


BINARY_RULES: dict[str, OpRule] = {
    "add": _same("{a} + {b}", bool_="{a} | {b}"),
    "sub": _same("{a} - {b}"),
    "mul": _same("{a} * {b}", bool_="{a} & {b}"),
    "truediv": OpRule("{a} / {b}", None, None),
    # Integer divisors known only at run time: a zero divisor (torch raises; the reference fails
    # first) and -1 (INT_MIN // -1 overflows) never reach a hardware division (see the helpers).
    "floordiv": OpRule("_floordiv_float({a}, {b})", "_int_floordiv({a}, {b})", None),
    "mod": OpRule("_remainder_float({a}, {b})", "_int_remainder({a}, {b})", None),
    "lt": _same("{a} < {b}", bool_="{a} < {b}"),
    "le": _same("{a} <= {b}", bool_="{a} <= {b}"),
    "gt": _same("{a} > {b}", bool_="{a} > {b}"),
    "ge": _same("{a} >= {b}", bool_="{a} >= {b}"),
    "eq": _same("{a} == {b}", bool_="{a} == {b}"),
    "ne": _same("{a} != {b}", bool_="{a} != {b}"),
    "and": OpRule(None, "{a} & {b}", "{a} & {b}"),
    "or": OpRule(None, "{a} | {b}", "{a} | {b}"),
    "maximum": OpRule("_maximum({a}, {b})", "tl.maximum({a}, {b})", "{a} | {b}"),
    "minimum": OpRule("_minimum({a}, {b})", "tl.minimum({a}, {b})", "{a} & {b}"),
    "pow": OpRule("_pow({a}, {b})", "_ipow({a}, {b})", None),
    "atan2": OpRule("_atan2({a}, {b})", None, None),
    # C's fmod (sign of the dividend): torch.fmod. Triton's % for ints; exact for floats by _fmod.
    "fmod": OpRule("_fmod({a}, {b})", "_int_fmod({a}, {b})", None),
}

# Integer //, % and fmod by a literal divisor that is neither 0 (validation rejects it) nor -1 in
# the operands' dtype: Triton's truncating operators corrected to torch's floor where the signs
# call for it, without the guards a run-time divisor needs.
INT_DIV_BY_LITERAL: dict[str, str] = {
    "floordiv": "_floordiv_int({a}, {b})",
    "mod": "_remainder({a}, {b})",
    "fmod": "{a} % {b}",
}

# pow with a literal exponent: exact and fast spellings (torch computes these exactly too).
POW_BY_CONST: dict[float, str] = {
    0.0: "1",
    1.0: "{a}",
    2.0: "{a} * {a}",
    3.0: "{a} * {a} * {a}",
    0.5: "tl.sqrt({a})",
    -0.5: "tl.rsqrt({a})",
    -1.0: "1.0 / {a}",
    -2.0: "1.0 / ({a} * {a})",
}


def divisor_reciprocal(divisor: float, dtype: DType, exact: bool = False) -> float | None:
    """The constant that a division by `divisor` in `dtype` arithmetic becomes a multiplication by,
    or None to keep the division; with `exact`, only a reciprocal that gives the correctly rounded
    quotient (a power of two's).

    Triton's float32 `/` is `div.full.f32`: up to 2 ulp from the correctly rounded quotient, with
    a special-function reciprocal an element. A multiplication by float32(1/divisor) is within
    1.5 ulp of quotients in the normal range (the reciprocal's rounding and the product's), and
    one FMA-pipe instruction; Inductor
    makes the same replacement on GPUs (`div_prim`). A power of two's reciprocal is exact, so the
    product equals the correctly rounded quotient in any float dtype (float64 too, where Triton's
    division is correctly rounded and other divisors keep it). Reciprocals outside the normal range
    (huge divisors), zero, inf and NaN keep the division.
    """
    if dtype not in (DType.float32, DType.float64) or not math.isfinite(divisor) or divisor == 0.0:
        return None
    import numpy as np  # here, not at the top: the rest of code generation does without numpy

    if dtype == DType.float32:
        with np.errstate(all="ignore"):
            d = float(np.float32(divisor))  # the divisor as float32 arithmetic sees it
            recip = float(np.float32(1.0) / np.float32(d))
        tiny = float(np.finfo(np.float32).tiny)
    else:
        d, recip, tiny = divisor, 1.0 / divisor, float(np.finfo(np.float64).tiny)
    if d == 0.0 or not tiny <= abs(recip) < math.inf:
        return None
    power_of_two = abs(math.frexp(d)[0]) == 0.5
    return recip if power_of_two or (dtype == DType.float32 and not exact) else None


@dataclass(frozen=True)
class ReductionRule:
    """How one reduction accumulates and finishes along the tile's reduction axis (axis 1).

    `combine` merges two partial values elementwise (looped reductions keep one accumulator per
    lane; pair reductions carry (value, index) and name a helper returning both); `final` reduces a
    [XBLOCK, R0_BLOCK] tile of values `{v}` (and indices `{i}`) to [XBLOCK]; `identity` fills masked
    lanes. Finals use native tl.sum/tl.max/tl.min where possible; a float max or min is one
    `tl.reduce` whose combine propagates NaN (one reduction: a NaN flag and tl.max as two are
    slower, explore round 12).
    """

    combine: str
    final: OpRule
    identity: str  # "zero" | "one" | "lowest" | "highest"
    pair: bool = False
    # The final is Triton's tl.sum/tl.max/tl.min, which returns int32 for narrower integers.
    widens: bool = False


REDUCTION_RULES: dict[str, ReductionRule] = {
    "sum": ReductionRule("{a} + {b}", _same("tl.sum({v}, 1)"), "zero", widens=True),
    "prod": ReductionRule("{a} * {b}", _same("tl.reduce({v}, 1, _prod_combine)"), "one"),
    "max": ReductionRule(
        "_maximum({a}, {b})",
        OpRule("tl.reduce({v}, 1, _max_propagate)", "tl.max({v}, 1)", None),
        "lowest",
        widens=True,
    ),
    "min": ReductionRule(
        "_minimum({a}, {b})",
        OpRule("tl.reduce({v}, 1, _min_propagate)", "tl.min({v}, 1)", None),
        "highest",
        widens=True,
    ),
    "argmax": ReductionRule("_argmax_combine", _same("_argmax_final({v}, {i})"), "lowest", True),
    "argmin": ReductionRule("_argmin_combine", _same("_argmin_final({v}, {i})"), "highest", True),
    "any": ReductionRule("{a} | {b}", _same("tl.max({v}, 1)"), "zero", widens=True),
}

# Extern/template ops: the torch function called on the logical (as_strided) views of the input
# buffers, in order.
LIBRARY_RULES: dict[str, str] = {
    "mm": "torch.mm",
    "bmm": "torch.bmm",
    "addmm": "torch.addmm",
}

# Short names of ops, for kernel names (`triton_poi_fused_mul_add_0`).
KERNEL_NAME_OF: dict[str, str] = {
    "truediv": "div",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "not": "bitwise_not",
}


def unary_rule(op: str) -> OpRule:
    try:
        return UNARY_RULES[op]
    except KeyError:
        raise CodegenError(f"no Triton rule for unary op {op!r}", code="op") from None


def binary_rule(op: str) -> OpRule:
    try:
        return BINARY_RULES[op]
    except KeyError:
        raise CodegenError(f"no Triton rule for binary op {op!r}", code="op") from None


def reduction_rule(op: str) -> ReductionRule:
    try:
        return REDUCTION_RULES[op]
    except KeyError:
        raise CodegenError(f"no Triton rule for reduction {op!r}", code="op") from None


def library_rule(op: str) -> str:
    try:
        return LIBRARY_RULES[op]
    except KeyError:
        raise CodegenError(
            f"no torch rule for extern/template op {op!r}; supported: {', '.join(LIBRARY_RULES)}", code="op"
        ) from None
