"""Op -> Triton rule tables (one entry per op name) and the `@triton.jit` helpers they call.

Only `tl` functions that exist in triton 3.6 and later (and run under TRITON_INTERPRET=1) are used:
libdevice is not available in the interpreter, so log1p, expm1, tanh, round, atan2, pow, ... are
small helpers written with tl.exp/tl.log/tl.floor (accurate to a few ulp, enough for
`torch.testing.assert_close` tolerances). An op missing from a table is a `CodegenError` naming it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fuseopt.codegen.common import CodegenError
from fuseopt.ir.dtypes import DType


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

BINARY_RULES: dict[str, OpRule] = {
    "add": _same("{a} + {b}", bool_="{a} | {b}"),
    "sub": _same("{a} - {b}"),
    "mul": _same("{a} * {b}", bool_="{a} & {b}"),
    "truediv": OpRule("{a} / {b}", None, None),
    # Integer divisors known only at run time: a zero divisor (torch raises; the reference fails
    # first) and -1 (INT_MIN // -1 overflows) never reach a hardware division (see the helpers).
    "floordiv": OpRule("_floordiv_float({a}, {b})", "_int_floordiv({a}, {b})", None),
    "mod": OpRule("_remainder({a}, {b})", "_int_remainder({a}, {b})", None),
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
    # Triton's % is C's fmod (sign of the dividend) for ints and floats alike: torch.fmod.
    "fmod": OpRule("{a} % {b}", "_int_fmod({a}, {b})", None),
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


def divisor_reciprocal(divisor: float, dtype: DType) -> float | None:
    """The constant that a division by `divisor` in `dtype` arithmetic becomes a multiplication by,
    or None to keep the division.

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
    exact = abs(math.frexp(d)[0]) == 0.5
    return recip if exact or dtype == DType.float32 else None


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


REDUCTION_RULES: dict[str, ReductionRule] = {
    "sum": ReductionRule("{a} + {b}", _same("tl.sum({v}, 1)"), "zero"),
    "prod": ReductionRule("{a} * {b}", _same("tl.reduce({v}, 1, _prod_combine)"), "one"),
    "max": ReductionRule(
        "_maximum({a}, {b})", OpRule("tl.reduce({v}, 1, _max_propagate)", "tl.max({v}, 1)", None), "lowest"
    ),
    "min": ReductionRule(
        "_minimum({a}, {b})", OpRule("tl.reduce({v}, 1, _min_propagate)", "tl.min({v}, 1)", None), "highest"
    ),
    "argmax": ReductionRule("_argmax_combine", _same("_argmax_final({v}, {i})"), "lowest", True),
    "argmin": ReductionRule("_argmin_combine", _same("_argmin_final({v}, {i})"), "highest", True),
    "any": ReductionRule("{a} | {b}", _same("tl.max({v}, 1)"), "zero"),
}

# Extern/template ops: torch calls on the logical (as_strided) views of the input buffers.
LIBRARY_RULES: dict[str, str] = {
    "mm": "torch.mm({0}, {1})",
    "bmm": "torch.bmm({0}, {1})",
    "addmm": "torch.addmm({0}, {1}, {2})",
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


@dataclass(frozen=True)
class Helper:
    source: str
    deps: tuple[str, ...] = ()


# Emitted (only when used) in this order, so modules are byte-identical run to run.
HELPERS: dict[str, Helper] = {
    "_maximum": Helper(
        """\
@triton.jit
def _maximum(a, b):
    # torch.maximum propagates NaN; tl.maximum may not.
    return tl.where((a > b) | (a != a), a, b)
"""
    ),
    "_minimum": Helper(
        """\
@triton.jit
def _minimum(a, b):
    return tl.where((a < b) | (a != a), a, b)
"""
    ),
    "_prod_combine": Helper(
        """\
@triton.jit
def _prod_combine(a, b):
    return a * b
"""
    ),
    "_argmax_combine": Helper(
        """\
@triton.jit
def _argmax_combine(a, a_index, b, b_index):
    # First occurrence of the maximum; NaN counts as the largest value (torch.argmax).
    a_nan = a != a
    b_nan = b != b
    first = a_index < b_index
    take_a = (a > b) | (a_nan & (b == b)) | (((a == b) | (a_nan & b_nan)) & first)
    return tl.where(take_a, a, b), tl.where(take_a, a_index, b_index)
"""
    ),
    "_argmin_combine": Helper(
        """\
@triton.jit
def _argmin_combine(a, a_index, b, b_index):
    a_nan = a != a
    b_nan = b != b
    first = a_index < b_index
    take_a = (a < b) | (a_nan & (b == b)) | (((a == b) | (a_nan & b_nan)) & first)
    return tl.where(take_a, a, b), tl.where(take_a, a_index, b_index)
"""
    ),
    "_max_propagate": Helper(
        """\
@triton.jit
def _max_propagate(a, b):
    # NaN wins (torch.max): one max.NaN instruction, where tl.max's combine drops NaN.
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
"""
    ),
    "_min_propagate": Helper(
        """\
@triton.jit
def _min_propagate(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
"""
    ),
    "_argmax_final": Helper(
        """\
@triton.jit
def _argmax_final(v, index):
    # The smallest index holding the maximum along axis 1; NaN counts as the largest value.
    nan = v != v
    has_nan = tl.max(nan.to(tl.int8), 1)[:, None] > 0
    best = tl.max(v, 1)[:, None]
    hit = tl.where(has_nan, nan, v == best)
    return tl.min(tl.where(hit, index, 9223372036854775807), 1)
"""
    ),
    "_argmin_final": Helper(
        """\
@triton.jit
def _argmin_final(v, index):
    nan = v != v
    has_nan = tl.max(nan.to(tl.int8), 1)[:, None] > 0
    best = tl.min(v, 1)[:, None]
    hit = tl.where(has_nan, nan, v == best)
    return tl.min(tl.where(hit, index, 9223372036854775807), 1)
"""
    ),
    "_to_bf16": Helper(
        """\
# Triton's interpreter (TRITON_INTERPRET=1, read when triton loads) rounds float32 -> bfloat16
# wrongly (triton 3.9); compiled kernels convert natively (one cvt.rn instruction).
_INTERPRETED = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") == "1")


@triton.jit
def _to_bf16(x):
    # float32 -> bfloat16, rounding to nearest even; NaN and inf preserved. By hand only under
    # the interpreter: on a GPU the bit arithmetic cost ~12 integer ops an element.
    if _INTERPRETED:
        bits = x.to(tl.uint32, bitcast=True)
        bits = bits + (0x7FFF + ((bits >> 16) & 1))
        return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    else:
        return x.to(tl.bfloat16)
"""
    ),
    "_floordiv_int": Helper(
        """\
@triton.jit
def _floordiv_int(a, b):
    # Triton's // truncates toward zero; torch and the graph format floor.
    q = a // b
    return tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)
"""
    ),
    "_int_floordiv": Helper(
        """\
@triton.jit
def _int_floordiv(a, b):
    # torch's floor division of integers by a divisor known at run time. Triton's // truncates
    # toward zero. A zero divisor (torch raises ZeroDivisionError, and so does the reference)
    # divides by 1 here, and -1 negates (INT_MIN // -1 wraps to INT_MIN, as in torch), so that
    # no lane runs a division the hardware leaves undefined.
    a, b = tl.broadcast(a, b)
    if b.dtype.is_int_signed():
        minus_one = b == -1
        d = tl.where((b == 0) | minus_one, tl.full(b.shape, 1, b.dtype), b)
        q = a // d
        q = tl.where(((a % d) != 0) & ((a < 0) != (d < 0)), q - 1, q)
        return tl.where(minus_one, -a, q)
    else:
        return a // tl.where(b == 0, tl.full(b.shape, 1, b.dtype), b)
"""
    ),
    "_int_remainder": Helper(
        """\
@triton.jit
def _int_remainder(a, b):
    # Python/torch remainder of integers (the divisor's sign) by a divisor known at run time; a
    # zero divisor reads as 1 and -1 gives 0 (INT_MIN % -1 would overflow), see _int_floordiv.
    a, b = tl.broadcast(a, b)
    if b.dtype.is_int_signed():
        d = tl.where((b == 0) | (b == -1), tl.full(b.shape, 1, b.dtype), b)
        r = a % d
        return tl.where((r != 0) & ((r < 0) != (d < 0)), r + d, r)
    else:
        return a % tl.where(b == 0, tl.full(b.shape, 1, b.dtype), b)
"""
    ),
    "_int_fmod": Helper(
        """\
@triton.jit
def _int_fmod(a, b):
    # C's remainder (the dividend's sign: Triton's %) by a divisor known at run time; a zero
    # divisor reads as 1 and -1 gives 0, see _int_floordiv.
    a, b = tl.broadcast(a, b)
    if b.dtype.is_int_signed():
        return a % tl.where((b == 0) | (b == -1), tl.full(b.shape, 1, b.dtype), b)
    else:
        return a % tl.where(b == 0, tl.full(b.shape, 1, b.dtype), b)
"""
    ),
    "_floordiv_float": Helper(
        """\
@triton.jit
def _floordiv_float(a, b):
    # torch's div_floor_floating: exact where floor(a / b) would round.
    mod = a % b
    div = (a - mod) / b
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    q = tl.floor(div)
    q = tl.where(div - q > 0.5, q + 1.0, q)
    return tl.where(b == 0, a / b, q)
"""
    ),
    "_remainder": Helper(
        """\
@triton.jit
def _remainder(a, b):
    # Python/torch remainder: the sign of the divisor (Triton's % takes the dividend's).
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
"""
    ),
    "_gdc_wait": Helper(
        """\
@triton.jit
def _gdc_wait(PDL: tl.constexpr):
    # Launched with programmatic dependent launch (PDL), this kernel may start while the kernel
    # before it still runs: wait here, before the first load, until that kernel's writes are
    # visible. PDL is False where the GPU has no grid dependency control (and in the interpreter).
    if PDL:
        tl.extra.cuda.gdc_wait()
"""
    ),
    "_gdc_launch_dependents": Helper(
        """\
@triton.jit
def _gdc_launch_dependents(PDL: tl.constexpr):
    # This program has issued its last store: the kernel launched after it with PDL may start.
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()
"""
    ),
    "_relu": Helper(
        """\
@triton.jit
def _relu(x):
    return tl.where(x < 0, tl.zeros_like(x), x)
"""
    ),
    "_sign": Helper(
        """\
@triton.jit
def _sign(x):
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)
"""
    ),
    "_trunc": Helper(
        """\
@triton.jit
def _trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))
"""
    ),
    "_round": Helper(
        """\
@triton.jit
def _round(x):
    # Round half to even (torch.round); inf and nan pass through.
    r = tl.floor(x)
    d = x - r
    odd = (r - 2.0 * tl.floor(r * 0.5)) == 1.0
    out = tl.where((d > 0.5) | ((d == 0.5) & odd), r + 1.0, r)
    return tl.where(d == d, out, x)
"""
    ),
    "_log1p": Helper(
        """\
@triton.jit
def _log1p(x):
    # Kahan's log1p: exact-ish for tiny x without libdevice.
    u = 1.0 + x
    y = tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))
    return tl.where(u == float("inf"), u, y)
"""
    ),
    "_expm1": Helper(
        """\
@triton.jit
def _expm1(x):
    # Kahan's expm1: (u - 1) * x / log(u) cancels the rounding error of exp.
    u = tl.exp(x)
    y = (u - 1.0) * (x / tl.log(u))
    y = tl.where(u == 1.0, x, y)
    y = tl.where(u - 1.0 == -1.0, -1.0, y)
    return tl.where(u == float("inf"), u, y)
"""
    ),
    "_tan": Helper(
        """\
@triton.jit
def _tan(x):
    return tl.sin(x) / tl.cos(x)
"""
    ),
    "_tanh": Helper(
        """\
@triton.jit
def _tanh(x):
    e = _expm1(-2.0 * tl.abs(x))
    t = -e / (2.0 + e)
    return tl.where(x < 0, -t, t)
""",
        ("_expm1",),
    ),
    "_pow": Helper(
        """\
@triton.jit
def _pow(a, b):
    # In float64 so that exp2(b * log2|a|) keeps float32 accuracy; the sign for a < 0 and the
    # special cases follow torch.pow.
    af = a.to(tl.float64)
    bf = b.to(tl.float64)
    r = tl.exp2(bf * tl.log2(tl.abs(af)))
    b_int = tl.floor(bf) == bf
    b_odd = b_int & (tl.abs(bf % 2.0) == 1.0)
    r = tl.where(af < 0, tl.where(b_int, tl.where(b_odd, -r, r), float("nan")), r)
    r = tl.where((bf == 0) | (af == 1), 1.0, r)
    return r.to(a.dtype)
"""
    ),
    "_ipow": Helper(
        """\
@triton.jit
def _ipow(a, b):
    # Integer power by squaring, wrapping like torch's integer pow. A negative exponent (signed
    # dtypes) gives 0, except for the bases 1 (1) and -1 (-1 for an odd exponent, else 1), as
    # torch computes it.
    a, b = tl.broadcast(a, b)
    one = tl.zeros_like(a) + 1
    r = one
    base = a
    e = b
    for _ in range(64):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    if b.dtype.is_int_signed():
        unit = tl.where(a == 1, one, tl.where(a == -1, tl.where((b & 1) != 0, -one, one), one - one))
        r = tl.where(b < 0, unit, r)
    return r
"""
    ),
    "_atan": Helper(
        """\
@triton.jit
def _atan(x):
    # Cephes atan: reduce |x| to [0, 0.66], then a rational approximation.
    ax = tl.abs(x)
    big = ax > 2.414213562373095
    mid = ax > 0.66
    z = tl.where(big, -1.0 / ax, tl.where(mid, (ax - 1.0) / (ax + 1.0), ax))
    y0 = tl.where(big, 1.5707963267948966, tl.where(mid, 0.7853981633974483, 0.0))
    zz = z * z
    p = -8.750608600031904e-1 * zz - 1.615753718733365e1
    p = (p * zz - 7.500855792314705e1) * zz - 1.228866684490136e2
    p = p * zz - 6.485021904942025e1
    q = (zz + 2.485846490142306e1) * zz + 1.650270098316988e2
    q = ((q * zz + 4.328810604912903e2) * zz + 4.853903996359137e2) * zz + 1.945506571482614e2
    r = y0 + (z + z * zz * p / q)
    return tl.where(x < 0, -r, r)
"""
    ),
    "_atan2": Helper(
        """\
@triton.jit
def _atan2(y, x):
    a = _atan(y / x)
    r = tl.where(x > 0, a, tl.where(y >= 0, a + 3.141592653589793, a - 3.141592653589793))
    on_axis = tl.where(y > 0, 1.5707963267948966, tl.where(y < 0, -1.5707963267948966, 0.0))
    r = tl.where(x == 0, on_axis, r)
    return tl.where(y != y, y, r)
""",
        ("_atan",),
    ),
}

_HELPER_CALL = re.compile(r"(?<![A-Za-z0-9_.])(_[a-z][a-z0-9_]*)\b")


def helpers_used(text: str) -> list[str]:
    """Helper names referenced in `text` (calls, or combine functions passed to tl.reduce)."""
    return [m for m in dict.fromkeys(_HELPER_CALL.findall(text)) if m in HELPERS]


def helper_closure(names: list[str]) -> list[str]:
    """The helpers in `names` and everything they call, in the fixed order of HELPERS."""
    need: dict[str, None] = {}
    stack = list(names)
    while stack:
        n = stack.pop()
        if n in need:
            continue
        need[n] = None
        stack.extend(HELPERS[n].deps)
    return [n for n in HELPERS if n in need]
