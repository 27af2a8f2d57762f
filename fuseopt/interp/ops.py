"""The interpreter's rule tables: op name -> torch function (pointwise, reductions, library calls).

One table per kind of op, keyed by the names the expression tree uses. An op missing from a table
is reported by name at run time (`lookup`); tests/test_interp_ops.py keeps the tables in step with
the language's vocabulary (`fuseopt.ir.expr`) and the extern/template ops the builder accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import torch

from fuseopt.interp.errors import InterpError
from fuseopt.ir.dtypes import DType

Tensor = torch.Tensor
UnaryFn = Callable[[Tensor], Tensor]
BinaryFn = Callable[[Tensor, Tensor], Tensor]
# A reduction gets the values with the flattened reduce box as the last dim, and the result dtype.
ReduceFn = Callable[[Tensor, torch.dtype], Tensor]
LibraryFn = Callable[..., Tensor]

TORCH_DTYPE: dict[DType, torch.dtype] = {
    DType.float32: torch.float32,
    DType.float16: torch.float16,
    DType.bfloat16: torch.bfloat16,
    DType.float64: torch.float64,
    DType.int8: torch.int8,
    DType.int16: torch.int16,
    DType.int32: torch.int32,
    DType.int64: torch.int64,
    DType.uint8: torch.uint8,
    DType.bool: torch.bool,
}

UNARY: dict[str, UnaryFn] = {
    "neg": torch.neg,
    "not": torch.bitwise_not,  # logical not on bool, bitwise on ints (as torch's `~`)
    "exp": torch.exp,
    "exp2": torch.exp2,
    "log": torch.log,
    "log2": torch.log2,
    "log1p": torch.log1p,
    "expm1": torch.expm1,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "abs": torch.abs,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "erf": torch.erf,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,  # half to even, as torch
    "trunc": torch.trunc,
    "sign": torch.sign,
    "reciprocal": torch.reciprocal,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
}

BINARY: dict[str, BinaryFn] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "truediv": torch.true_divide,
    "floordiv": torch.floor_divide,  # rounds toward -inf (Python's //), ints and floats
    "mod": torch.remainder,  # sign of the divisor (Python's %)
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "eq": torch.eq,
    "ne": torch.ne,
    "and": torch.bitwise_and,
    "or": torch.bitwise_or,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": torch.pow,
    "atan2": torch.atan2,
    "fmod": torch.fmod,  # sign of the dividend (C's fmod)
}
# Integer division-like ops: a zero divisor is a run-time error (torch raises ZeroDivisionError);
# under a mask the divisor is 1 where the mask is off, so that only the lanes where the enclosing
# conditions hold count.
INT_DIVISIONS = frozenset({"floordiv", "mod", "fmod"})

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int_range(dtype: torch.dtype) -> tuple[int, int]:
    """The values an integer (or bool) storage of `dtype` can hold."""
    if dtype == torch.bool:
        return 0, 1
    info = torch.iinfo(dtype)
    return int(info.min), int(info.max)


def _checked_add(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor | None]:
    r = a + b
    return r, ((a ^ r) & (b ^ r)) < 0  # both operands' signs differ from the (wrapped) sum's


def _checked_sub(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor | None]:
    r = a - b
    return r, ((a ^ b) & (a ^ r)) < 0


def _checked_mul(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor | None]:
    r = a * b
    nonzero = a != 0
    back = torch.floor_divide(r, torch.where(nonzero, a, 1))
    return r, (nonzero & (back != b)) | ((a == -1) & (b == INT64_MIN))


def _products(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    ps = [x * y for x in a for y in b]
    return min(ps), max(ps)


# The exact range of an index operation's result from its operands' ranges (Python integers;
# `//` and `%` are by a positive literal, b = (c, c)).
INDEX_RANGE: dict[str, Callable[[tuple[int, int], tuple[int, int]], tuple[int, int]]] = {
    "add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "sub": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "mul": _products,
    "floordiv": lambda a, b: (a[0] // b[0], a[1] // b[0]),
    "mod": lambda a, b: (a[0] % b[0], a[1] % b[0]) if a[0] // b[0] == a[1] // b[0] else (0, b[0] - 1),
    "minimum": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "maximum": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
}

# Index arithmetic in int64 with overflow flags (None: cannot overflow): the interpreter computes
# an index this way where its operands' ranges do not rule an overflow out (`Evaluator._exact`).
# `//` and `%` in an index are by positive literals.
EXACT_INDEX: dict[str, Callable[[Tensor, Tensor], tuple[Tensor, Tensor | None]]] = {
    "add": _checked_add,
    "sub": _checked_sub,
    "mul": _checked_mul,
    "floordiv": lambda a, b: (torch.floor_divide(a, b), None),
    "mod": lambda a, b: (torch.remainder(a, b), None),
    "minimum": lambda a, b: (torch.minimum(a, b), None),
    "maximum": lambda a, b: (torch.maximum(a, b), None),
}


def _argbest(fn: Callable[..., Tensor]) -> ReduceFn:
    def reduce(v: Tensor, dtype: torch.dtype) -> Tensor:
        # torch's argmax/argmin reject bool; the first-occurrence order is the same on uint8.
        return fn(v.to(torch.uint8) if v.dtype == torch.bool else v, dim=-1)

    return reduce


REDUCE: dict[str, ReduceFn] = {
    "sum": lambda v, dtype: torch.sum(v, dim=-1, dtype=dtype),
    "prod": lambda v, dtype: torch.prod(v, dim=-1, dtype=dtype),
    "max": lambda v, dtype: torch.amax(v, dim=-1),
    "min": lambda v, dtype: torch.amin(v, dim=-1),
    "argmax": _argbest(torch.argmax),  # first occurrence along the flattened reduce box
    "argmin": _argbest(torch.argmin),
    "any": lambda v, dtype: torch.any(v, dim=-1),
}

# Extern/template ops, run by torch on the logical views of the inputs (in `inputs` order).
LIBRARY: dict[str, LibraryFn] = {
    "mm": torch.mm,
    "bmm": torch.bmm,
    "addmm": torch.addmm,  # inputs: [bias, mat1, mat2]
}

_F = TypeVar("_F")


def lookup(table: Mapping[str, _F], op: str, kind: str, *, node: str | None = None, pointer: str = "") -> _F:
    """The table entry for `op`; an op the interpreter does not know is an error naming it (and the
    node, when given)."""
    try:
        return table[op]
    except KeyError:
        known = ", ".join(sorted(table))
        raise InterpError(
            f"the reference interpreter has no {kind} op {op!r} (known: {known})",
            node=node,
            pointer=pointer,
            code="unknown-op",
        ) from None
