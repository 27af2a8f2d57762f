# ruff: noqa: B023, SIM115
"""Round 6 of benchmarks/explore_gpu.py: TMA (tensor-descriptor) loads for the transposed persistent reductions."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import DEV, sized


@triton.jit
def sm6_k(xd, bias, out, C: tl.constexpr, XB: tl.constexpr, RB: tl.constexpr):
    # TMA: four [RB, XB] boxes of xt's storage ([C, R], rows contiguous) per program, the
    # program's XB rows of the softmax as columns; stores along each output row (C contiguous)
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[None, :]
    r = tl.arange(0, RB)[:, None]
    v0 = xd.load([0, xo]) + tl.load(bias + r)
    v1 = xd.load([RB, xo]) + tl.load(bias + RB + r)
    v2 = xd.load([2 * RB, xo]) + tl.load(bias + 2 * RB + r)
    v3 = xd.load([3 * RB, xo]) + tl.load(bias + 3 * RB + r)
    m = tl.maximum(tl.maximum(tl.max(v0, 0), tl.max(v1, 0)), tl.maximum(tl.max(v2, 0), tl.max(v3, 0)))[
        None, :
    ]
    e0 = tl.exp(v0 - m)
    e1 = tl.exp(v1 - m)
    e2 = tl.exp(v2 - m)
    e3 = tl.exp(v3 - m)
    ssum = (tl.sum(e0, 0) + tl.sum(e1, 0) + tl.sum(e2, 0) + tl.sum(e3, 0))[None, :]
    tl.store(out + xi * C + r, e0 / ssum)
    tl.store(out + xi * C + RB + r, e1 / ssum)
    tl.store(out + xi * C + 2 * RB + r, e2 / ssum)
    tl.store(out + xi * C + 3 * RB + r, e3 / ssum)


@triton.jit
def ln6_k(xd, w, b, out, C: tl.constexpr, XB: tl.constexpr, RB: tl.constexpr):
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[None, :]
    r = tl.arange(0, RB)[:, None]
    v0 = xd.load([0, xo])
    v1 = xd.load([RB, xo])
    v2 = xd.load([2 * RB, xo])
    v3 = xd.load([3 * RB, xo])
    mean = ((tl.sum(v0, 0) + tl.sum(v1, 0) + tl.sum(v2, 0) + tl.sum(v3, 0)) / C)[None, :]
    d0 = v0 - mean
    d1 = v1 - mean
    d2 = v2 - mean
    d3 = v3 - mean
    var = (tl.sum(d0 * d0, 0) + tl.sum(d1 * d1, 0) + tl.sum(d2 * d2, 0) + tl.sum(d3 * d3, 0)) / C
    rstd = tl.rsqrt(var + 1e-5)[None, :]
    tl.store(out + xi * C + r, d0 * rstd * tl.load(w + r) + tl.load(b + r))
    tl.store(out + xi * C + RB + r, d1 * rstd * tl.load(w + RB + r) + tl.load(b + RB + r))
    tl.store(out + xi * C + 2 * RB + r, d2 * rstd * tl.load(w + 2 * RB + r) + tl.load(b + 2 * RB + r))
    tl.store(out + xi * C + 3 * RB + r, d3 * rstd * tl.load(w + 3 * RB + r) + tl.load(b + 3 * RB + r))


def _tma_alloc():
    def alloc(size, align, stream):
        return torch.empty(size, dtype=torch.int8, device=DEV)

    triton.set_allocator(alloc)


def sm6_variants(st, R, C):
    from triton.tools.tensor_descriptor import TensorDescriptor

    _tma_alloc()
    x, bias = st["x"], st["bias"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    rb = C // 4
    for xb, nw in [(16, 8), (16, 4), (8, 4), (32, 8), (8, 8), (32, 16)]:
        xb = min(xb, R)
        xd = TensorDescriptor.from_tensor(x.view(C, R), [rb, xb])
        vs[f"tma {xb}x{C} w{nw}"] = lambda xb=xb, nw=nw, xd=xd: sm6_k[(R // xb,)](
            xd, bias, out, C, xb, rb, num_warps=nw
        )
    return vs, lambda: {"out": out}


def ln6_variants(st, R, C):
    from triton.tools.tensor_descriptor import TensorDescriptor

    _tma_alloc()
    x, w, b = st["x"], st["w"], st["b"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    rb = C // 4
    for xb, nw in [(16, 8), (16, 4), (8, 4), (32, 8), (8, 8), (32, 16)]:
        xb = min(xb, R)
        xd = TensorDescriptor.from_tensor(x.view(C, R), [rb, xb])
        vs[f"tma {xb}x{C} w{nw}"] = lambda xb=xb, nw=nw, xd=xd: ln6_k[(R // xb,)](
            xd, w, b, out, C, xb, rb, num_warps=nw
        )
    return vs, lambda: {"out": out}


VARIANTS = sized(
    {
        "softmax_bias_t": sm6_variants,
        "layernorm_t": ln6_variants,
    }
)
