"""What the capture changes in Inductor for its compile: operations FORMAT's loops cannot express
are left to Inductor's own fallback, a call of the ATen operator, which becomes a library call
(sorts, scans and bucketize by hiding the backend features; scatters and the operators of
`LOOP_OPS_AS_CALLS` by their fallback lowering); and in a capture with reductions not unrolled,
a max pool's window offsets are not unrolled either (`pool_offsets_by_the_threshold`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def library_fallbacks() -> Iterator[None]:
    """Inductor lowers `sort`, scans (`cumsum`, `cumprod`, ...) and `bucketize` to loops with
    `ops.sort`/`ops.scan`/`ops.bucketize` when the backend has the SORT/SCAN/BUCKETIZE feature
    (Triton has them all); FORMAT's loops have none of them, so for the capture the features are
    off and Inductor calls the ATen operator instead (its own fallback), which becomes a library
    call. So do the scatters (`scatter_ops`) and the pointwise operators whose loop op FORMAT
    lacks (`LOOP_OPS_AS_CALLS`)."""
    from torch._inductor import lowering
    from torch._inductor.codegen.common import BackendFeature
    from torch._inductor.fx_passes import reinplace
    from torch._inductor.graph import GraphLowering

    original = GraphLowering.has_feature
    hidden = (BackendFeature.SCAN, BackendFeature.SORT, BackendFeature.BUCKETIZE)

    def has_feature(self: Any, device: Any, feature: Any) -> bool:
        return False if feature in hidden else bool(original(self, device, feature))

    scatters = {op: lowering.lowerings[op] for op in scatter_ops() + call_ops() if op in lowering.lowerings}
    fallbacks = {op: lowering.fallback_handler(op, add_to_fallback_set=False) for op in scatters}
    GraphLowering.has_feature = has_feature  # type: ignore[method-assign]
    lowering.lowerings.update(fallbacks)
    # and the post-grad pass that makes an index_put into a fresh tensor in place keeps it functional
    inplaced = {op: reinplace.inplaceable_ops.pop(op) for op in scatters if op in reinplace.inplaceable_ops}
    try:
        yield
    finally:
        GraphLowering.has_feature = original  # type: ignore[method-assign]
        lowering.lowerings.update(scatters)
        reinplace.inplaceable_ops.update(inplaced)


@contextmanager
def pool_offsets_by_the_threshold() -> Iterator[None]:
    """Inductor computes a max pool's indices (`max_pool2d(..., return_indices=True)`) from the
    window offsets of `prims._low_memory_max_pool_with_offsets`, whose lowering unrolls windows of
    up to 25 points whatever `unroll_reductions_threshold` says: as one expression the offset of a
    2 x 2 window is past the format's limits. In a capture with reductions not unrolled, that
    lowering takes the threshold too: the offset is an argmax node over the window."""
    import torch
    from torch._inductor import lowering

    op = getattr(torch.ops.prims, "_low_memory_max_pool_with_offsets", None)
    keys = [k for k in (op, getattr(op, "default", None)) if k is not None and k in lowering.lowerings]
    if not keys or not hasattr(lowering, "_max_pool_with_offsets"):
        yield
        return

    def by_the_threshold(
        x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool = False
    ) -> Any:
        # Inductor's own lowering of the op, less its `config.patch(unroll_reductions_threshold=25)`
        n_dim = len(kernel_size)
        kernel_size, stride, padding, dilation, _ = lowering.max_pool_checks(
            x, kernel_size, stride, padding, dilation, n_dim, assert_fallback=False
        )
        result, offsets = lowering._max_pool_with_offsets(
            x, kernel_size, stride, padding, dilation, ceil_mode, n_dim=n_dim
        )
        return result, lowering.to_dtype(offsets, torch.int8)

    saved = {k: lowering.lowerings[k] for k in keys}
    lowering.lowerings.update({k: by_the_threshold for k in keys})
    try:
        yield
    finally:
        lowering.lowerings.update(saved)


# ATen operators that Inductor lowers to a loop op FORMAT has no equivalent of (`ops.erfinv`,
# `ops.asin`, ...): for the capture they are library calls of the operator itself (Inductor's own
# fallback), so a program using them is captured, with the call in its own kernel.
LOOP_OPS_AS_CALLS = (
    "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "erfinv", "lgamma", "digamma",
    "polygamma", "igamma", "igammac", "i0", "special_i0e", "special_i1", "special_erfcx", "special_ndtri",
    "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
    "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
    "special_modified_bessel_k1", "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
    "special_i1e", "special_gammainc", "special_gammaincc", "frexp", "log10", "copysign", "hypot", "nextafter",
    "signbit", "gcd", "ldexp",
)  # fmt: skip


def call_ops() -> list[Any]:
    import torch

    packets = [getattr(torch.ops.aten, name) for name in LOOP_OPS_AS_CALLS]
    return [
        getattr(p, o) for p in packets for o in p.overloads() if not o.endswith("out") and "_" not in o[:1]
    ]


def scatter_ops() -> list[Any]:
    """The functional scatters (`index_put`, `scatter`, `scatter_add`, `scatter_reduce`: also what
    `index_add` and MoE routing decompose to). Inductor writes them into a copy in place (a
    mutation, with atomic adds for accumulation); FORMAT's loops only gather, so for the capture
    Inductor calls the ATen operator, a functional library call."""
    import torch

    aten = torch.ops.aten
    return [aten.index_put.default, aten._unsafe_index_put.default, aten.scatter.src, aten.scatter.value,
            aten.scatter_add.default, aten.scatter_reduce.two]  # fmt: skip
