"""The `@triton.jit` helpers the rule tables call, emitted into a module only when its kernels use
them (and what they call), in one fixed order so that modules are byte-identical run to run.

Each runs under TRITON_INTERPRET=1, where libdevice does not: NaN-propagating minimum and maximum,
argmax/argmin combines, torch's integer division and remainder, log1p, expm1, tan, tanh, pow,
atan2, rounding, and the grid dependency control of split reductions. log1p, expm1, tan and tanh
call libdevice in a compiled kernel (fewer instructions: the portable tanh costs an exp, a log and
two divisions) and plain `tl` arithmetic, accurate to a few ulp, under the interpreter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Helper:
    source: str
    deps: tuple[str, ...] = ()
    # Branches on INTERPRETED_PREAMBLE's `_INTERPRETED`: libdevice (or native conversion) in a
    # compiled kernel, plain `tl` arithmetic under the interpreter, where libdevice does not run.
    interpreted: bool = False


# Emitted before the helpers when one of them branches on it (module_preamble).
INTERPRETED_PREAMBLE = """\
# TRITON_INTERPRET=1 (read when triton loads) runs kernels on the CPU, where libdevice does not
# run: helpers then compute by hand what a compiled kernel takes from libdevice.
_INTERPRETED = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") == "1")
"""


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
    # The smallest index holding the maximum along axis 1 (int64, from int32 or int64 positions);
    # NaN counts as the largest value.
    nan = v != v
    has_nan = tl.max(nan.to(tl.int8), 1)[:, None] > 0
    best = tl.max(v, 1)[:, None]
    hit = tl.where(has_nan, nan, v == best)
    return tl.min(tl.where(hit, index.to(tl.int64), 9223372036854775807), 1)
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
    return tl.min(tl.where(hit, index.to(tl.int64), 9223372036854775807), 1)
"""
    ),
    "_to_bf16": Helper(
        """\
@triton.jit
def _to_bf16(x):
    # float32 -> bfloat16, rounding to nearest even; NaN and inf preserved. By hand only under
    # the interpreter (triton 3.9's rounds wrongly): on a GPU the bit arithmetic would cost ~12
    # integer ops an element where a compiled kernel converts with one cvt.rn instruction.
    if _INTERPRETED:
        bits = x.to(tl.uint32, bitcast=True)
        bits = bits + (0x7FFF + ((bits >> 16) & 1))
        return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    else:
        return x.to(tl.bfloat16)
""",
        interpreted=True,
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
    "_fmod": Helper(
        """\
@triton.jit
def _fmod(a, b):
    # C's fmod of floats (the dividend's sign: torch.fmod), exact. Compiled, Triton's float % is
    # a - trunc(a / b) * b, which rounds once a / b does (and is NaN for a finite a by an infinite
    # b on triton 3.6): libdevice's fmod instead. The interpreter's % is numpy's exact fmod.
    if _INTERPRETED:
        return a % b
    else:
        return libdevice.fmod(a, b)
""",
        interpreted=True,
    ),
    "_floordiv_float": Helper(
        """\
@triton.jit
def _floordiv_float(a, b):
    # torch's div_floor_floating: exact where floor(a / b) would round.
    mod = _fmod(a, b)
    div = (a - mod) / b
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    q = tl.floor(div)
    q = tl.where(div - q > 0.5, q + 1.0, q)
    return tl.where(b == 0, a / b, q)
""",
        deps=("_fmod",),
    ),
    "_remainder": Helper(
        """\
@triton.jit
def _remainder(a, b):
    # Python/torch remainder of integers by a literal divisor (neither 0 nor -1): the sign of the
    # divisor (Triton's % takes the dividend's).
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
"""
    ),
    "_remainder_float": Helper(
        """\
@triton.jit
def _remainder_float(a, b):
    # Python/torch remainder of floats: the sign of the divisor (fmod takes the dividend's).
    r = _fmod(a, b)
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
""",
        deps=("_fmod",),
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
    if _INTERPRETED:  # Kahan's log1p: exact-ish for tiny x.
        u = 1.0 + x
        y = tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))
        return tl.where(u == float("inf"), u, y)
    else:
        return libdevice.log1p(x)
""",
        interpreted=True,
    ),
    "_expm1": Helper(
        """\
@triton.jit
def _expm1(x):
    if _INTERPRETED:  # Kahan's expm1: (u - 1) * x / log(u) cancels the rounding error of exp.
        u = tl.exp(x)
        y = (u - 1.0) * (x / tl.log(u))
        y = tl.where(u == 1.0, x, y)
        y = tl.where(u - 1.0 == -1.0, -1.0, y)
        return tl.where(u == float("inf"), u, y)
    else:
        return libdevice.expm1(x)
""",
        interpreted=True,
    ),
    "_tan": Helper(
        """\
@triton.jit
def _tan(x):
    if _INTERPRETED:
        return tl.sin(x) / tl.cos(x)
    else:
        return libdevice.tan(x)
""",
        interpreted=True,
    ),
    "_tanh": Helper(
        """\
@triton.jit
def _tanh(x):
    if _INTERPRETED:
        e = _expm1(-2.0 * tl.abs(x))
        t = -e / (2.0 + e)
        return tl.where(x < 0, -t, t)
    else:
        return libdevice.tanh(x)
""",
        ("_expm1",),
        interpreted=True,
    ),
    "_pow": Helper(
        """\
@triton.jit
def _pow(a, b):
    # In float64 so that exp2(b * log2|a|) keeps float32 accuracy; the sign for a < 0 and the
    # special cases follow torch.pow (C's pow): a negative base to a non-integer power is NaN
    # but -inf's is +inf or +0, -1 to an infinite power is 1, and -0.0 keeps its sign.
    af = a.to(tl.float64)
    bf = b.to(tl.float64)
    r = tl.exp2(bf * tl.log2(tl.abs(af)))
    b_int = tl.floor(bf) == bf
    b_odd = b_int & (tl.abs(bf % 2.0) == 1.0)
    neg = (af < 0) | ((af == 0) & (1.0 / af < 0))  # -0.0 too: pow(-0.0, -1) is -inf
    r = tl.where(neg & b_odd, -r, r)
    r = tl.where((af < 0) & ~b_int & (af != float("-inf")), float("nan"), r)
    one = (bf == 0) | (af == 1) | ((af == -1) & (tl.abs(bf) == float("inf")))
    r = tl.where(one, 1.0, r)
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
    # C's atan2 (torch's): the angle of (|x|, |y|), reflected by the signs of x and y, signed
    # zeros included (atan2(-0.0, -1) is -pi); both infinite: an odd multiple of pi/4.
    ay = tl.abs(y)
    ax = tl.abs(x)
    t = _atan(ay / ax)
    t = tl.where((ay == ax) & (ay == float("inf")), 0.7853981633974483, t)
    t = tl.where(ax == 0, tl.where(ay == 0, 0.0, 1.5707963267948966), t)
    x_neg = (x < 0) | ((x == 0) & (1.0 / x < 0))
    y_neg = (y < 0) | ((y == 0) & (1.0 / y < 0))
    t = tl.where(x_neg, 3.141592653589793 - t, t)
    r = tl.where(y_neg, -t, t)
    return tl.where((x != x) | (y != y), x + y, r)
""",
        ("_atan",),
    ),
    "_welford_combine": Helper(
        """\
@triton.jit
def _welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    # Chan's combination of two (mean, sum of squared deviations, count) of disjoint points.
    n = n_a + n_b
    w = tl.where(n == 0.0, 0.0, n_b / n)
    delta = mean_b - mean_a
    return mean_a + delta * w, m2_a + m2_b + delta * delta * n_a * w, n
"""
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
