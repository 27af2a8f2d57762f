"""The dtypes of docs/format.md and torch's type-promotion rules over them (a table, not a chain of ifs)."""

from __future__ import annotations

import builtins
from enum import Enum


class DType(str, Enum):
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float64 = "float64"
    int8 = "int8"
    int16 = "int16"
    int32 = "int32"
    int64 = "int64"
    uint8 = "uint8"
    bool = "bool"

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self]

    @property
    def is_float(self) -> builtins.bool:
        return self in FLOATS

    @property
    def is_int(self) -> builtins.bool:
        return self in INTS

    @property
    def is_low_precision(self) -> builtins.bool:
        """fp16/bf16: computed in float32 and rounded on store (as Inductor does)."""
        return self in (DType.float16, DType.bfloat16)


ITEMSIZE: dict[DType, int] = {
    DType.float32: 4,
    DType.float16: 2,
    DType.bfloat16: 2,
    DType.float64: 8,
    DType.int8: 1,
    DType.int16: 2,
    DType.int32: 4,
    DType.int64: 8,
    DType.uint8: 1,
    DType.bool: 1,
}
# The values an integer (or bool) dtype holds; integer arithmetic wraps into them, as in torch.
INT_BOUNDS: dict[DType, tuple[int, int]] = {
    DType.int8: (-(2**7), 2**7 - 1),
    DType.int16: (-(2**15), 2**15 - 1),
    DType.int32: (-(2**31), 2**31 - 1),
    DType.int64: (-(2**63), 2**63 - 1),
    DType.uint8: (0, 2**8 - 1),
    DType.bool: (0, 1),
}


def wrap(v: int, d: DType) -> int:
    """An integer literal as a value of the integer dtype `d`: two's-complement wrap, which is how
    torch converts a Python scalar operand (`int8_tensor // 256` divides by 0)."""
    if d == DType.bool:
        return int(v != 0)
    lo, hi = INT_BOUNDS[d]
    return (v - lo) % (hi - lo + 1) + lo


FLOATS = frozenset({DType.float32, DType.float16, DType.bfloat16, DType.float64})
INTS = frozenset({DType.int8, DType.int16, DType.int32, DType.int64, DType.uint8})
DTYPE_NAMES = frozenset(d.value for d in DType)

# Category order used by torch.result_type: bool < integer < floating.
_CATEGORY = {d: (2 if d in FLOATS else 1 if d in INTS else 0) for d in DType}

# Promotion of two *strong* dtypes of the same category (torch's promoteTypes table, restricted to
# the dtypes of docs/format.md). Keyed by frozenset so that the table is symmetric by construction.
_SAME_CATEGORY: dict[frozenset[DType], DType] = {
    frozenset({DType.float16, DType.bfloat16}): DType.float32,
    frozenset({DType.float16, DType.float32}): DType.float32,
    frozenset({DType.bfloat16, DType.float32}): DType.float32,
    frozenset({DType.float16, DType.float64}): DType.float64,
    frozenset({DType.bfloat16, DType.float64}): DType.float64,
    frozenset({DType.float32, DType.float64}): DType.float64,
    frozenset({DType.int8, DType.uint8}): DType.int16,
    frozenset({DType.int8, DType.int16}): DType.int16,
    frozenset({DType.int8, DType.int32}): DType.int32,
    frozenset({DType.int8, DType.int64}): DType.int64,
    frozenset({DType.uint8, DType.int16}): DType.int16,
    frozenset({DType.uint8, DType.int32}): DType.int32,
    frozenset({DType.uint8, DType.int64}): DType.int64,
    frozenset({DType.int16, DType.int32}): DType.int32,
    frozenset({DType.int16, DType.int64}): DType.int64,
    frozenset({DType.int32, DType.int64}): DType.int64,
}


def promote(a: DType, b: DType, *, a_weak: bool = False, b_weak: bool = False) -> DType:
    """torch.result_type for two operands; a *weak* operand is a Python scalar literal.

    A weak operand only matters when its category is higher than the strong one's: then the result
    is the default dtype of that category (float32 / int64), as in torch.
    """
    if a_weak and not b_weak:
        return b if _CATEGORY[a] <= _CATEGORY[b] else _default_of(a)
    if b_weak and not a_weak:
        return a if _CATEGORY[b] <= _CATEGORY[a] else _default_of(b)
    if a == b:
        return a
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        return a if ca > cb else b
    return _SAME_CATEGORY[frozenset({a, b})]


def _default_of(d: DType) -> DType:
    return DType.float32 if d in FLOATS else DType.int64 if d in INTS else DType.bool


def compute_dtype(d: DType) -> DType:
    """The dtype arithmetic runs in: fp16/bf16 upcast to float32."""
    return DType.float32 if d.is_low_precision else d
