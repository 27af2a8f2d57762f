"""Small shared pieces of the Triton backend: its error type, dtype spellings and integer helpers."""

from __future__ import annotations

from collections.abc import Iterable

from fuseopt.errors import Diagnostic, FuseoptError
from fuseopt.ir.dtypes import INT_BOUNDS, DType


class CodegenError(FuseoptError):
    """The plan or graph asks for something the Triton backend cannot emit (exit 2).

    Raised for plans that break the planner contract (a node in two kernels, a fused read at a
    different point than the producer's write, mismatched iteration spaces) and for ops without a
    rule; the message names the kernel, node, buffer or op.
    """

    def __init__(self, message: str, *, code: str = "codegen") -> None:
        super().__init__([Diagnostic(message, code=code)])


TL_DTYPE: dict[DType, str] = {
    DType.float32: "tl.float32",
    DType.float16: "tl.float16",
    DType.bfloat16: "tl.bfloat16",
    DType.float64: "tl.float64",
    DType.int8: "tl.int8",
    DType.int16: "tl.int16",
    DType.int32: "tl.int32",
    DType.int64: "tl.int64",
    DType.uint8: "tl.uint8",
    DType.bool: "tl.int1",
}
TORCH_DTYPE: dict[DType, str] = {d: f"torch.{d.value}" for d in DType}

# Integer ranges, for identities of max/min reductions and for wrapping literals into a dtype.
INT_RANGE = INT_BOUNDS
INT32_MAX = 2**31 - 1


def prod(xs: Iterable[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def wrap_int(v: int, dtype: DType) -> int:
    """Two's-complement wrap of an integer literal into `dtype` (torch's weak-literal semantics)."""
    lo, hi = INT_RANGE[dtype]
    span = hi - lo + 1
    return (v - lo) % span + lo
