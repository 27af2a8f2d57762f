# ruff: noqa: B023, SIM115
"""Round 3 of benchmarks/explore_gpu.py: eviction hints and streaming stores for the persistent reductions, banded sliding-window pooling."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import sized
from benchmarks.explore.round1 import pool_2d


@triton.jit
def sm3_k(x, bias, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, EV: tl.constexpr):
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[:, None]
    ri = tl.arange(0, C)[None, :]
    if EV == 1:
        v = tl.load(x + (xi + R * ri), eviction_policy="evict_first") + tl.load(
            bias + ri, eviction_policy="evict_last"
        )
    elif EV == 2:
        v = tl.load(x + (xi + R * ri), cache_modifier=".cg") + tl.load(bias + ri)
    else:
        v = tl.load(x + (xi + R * ri)) + tl.load(bias + ri)
    m = tl.max(v, 1)[:, None]
    e = tl.exp2((v - m) * 1.4426950408889634)
    ssum = tl.sum(e, 1)[:, None]
    if EV == 3:
        tl.store(out + (C * xi + ri), e * (1.0 / ssum), cache_modifier=".cs")
    elif EV == 4:
        tl.store(out + (C * xi + ri), e * (1.0 / ssum), eviction_policy="evict_first")
    else:
        tl.store(out + (C * xi + ri), e * (1.0 / ssum))


def sm3_variants(st, R, C):
    x, bias = st["x"], st["bias"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw, ev in [
        (8, 8, 0),
        (8, 8, 1),
        (8, 8, 2),
        (8, 8, 3),
        (8, 8, 4),
        (16, 8, 1),
        (16, 8, 3),
        (8, 16, 0),
        (4, 8, 3),
        (16, 16, 3),
    ]:
        xb = min(xb, R)
        vs[f"persist {xb}x{C} w{nw} ev{ev}"] = lambda xb=xb, nw=nw, ev=ev: sm3_k[(R // xb,)](
            x, bias, out, R, C, xb, ev, num_warps=nw
        )
    return vs, lambda: {"out": out}


@triton.jit
def ln3_k(x, w, b, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, EV: tl.constexpr):
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[:, None]
    ri = tl.arange(0, C)[None, :]
    if EV == 1:
        v = tl.load(x + (xi + R * ri), eviction_policy="evict_first")
    elif EV == 2:
        v = tl.load(x + (xi + R * ri), cache_modifier=".cg")
    else:
        v = tl.load(x + (xi + R * ri))
    mean = tl.sum(v, 1)[:, None] / C
    d = v - mean
    var = tl.sum(d * d, 1)[:, None] / C
    o = d * tl.rsqrt(var + 1e-5) * tl.load(w + ri) + tl.load(b + ri)
    if EV == 3:
        tl.store(out + (C * xi + ri), o, cache_modifier=".cs")
    else:
        tl.store(out + (C * xi + ri), o)


def ln3_variants(st, R, C):
    x, w, b = st["x"], st["w"], st["b"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw, ev in [(16, 8, 0), (16, 8, 1), (16, 8, 2), (16, 8, 3), (32, 8, 0), (32, 8, 3)]:
        xb = min(xb, R)
        vs[f"persist {xb}x{C} w{nw} ev{ev}"] = lambda xb=xb, nw=nw, ev=ev: ln3_k[(R // xb,)](
            x, w, b, out, R, C, xb, ev, num_warps=nw
        )
    return vs, lambda: {"out": out}


@triton.jit
def pool_band(
    x, out, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, JB: tl.constexpr, BAND: tl.constexpr
):
    RL: tl.constexpr = W * C
    n = tl.program_id(1)
    h0 = tl.program_id(2) * BAND
    j = tl.program_id(0) * JB + tl.arange(0, JB)
    jm = j < RL
    w = j // C
    ml = jm & (w >= 1)
    mr = jm & (w < W - 1)
    img = x + n * H * RL
    oimg = out + n * H * RL
    zero = j * 0
    hp = h0 - 1
    okp = (hp + zero) >= 0
    rowp = img + hp * RL
    prev = (
        tl.load(rowp + j, jm & okp, other=0.0).to(tl.float32)
        + tl.load(rowp + j - C, ml & okp, other=0.0).to(tl.float32)
        + tl.load(rowp + j + C, mr & okp, other=0.0).to(tl.float32)
    )
    rowc = img + h0 * RL
    cur = (
        tl.load(rowc + j, jm, other=0.0).to(tl.float32)
        + tl.load(rowc + j - C, ml, other=0.0).to(tl.float32)
        + tl.load(rowc + j + C, mr, other=0.0).to(tl.float32)
    )
    for k in range(BAND):
        h = h0 + k
        hm = (h + 1 + zero) < H
        row = img + (h + 1) * RL
        nxt = (
            tl.load(row + j, jm & hm, other=0.0).to(tl.float32)
            + tl.load(row + j - C, ml & hm, other=0.0).to(tl.float32)
            + tl.load(row + j + C, mr & hm, other=0.0).to(tl.float32)
        )
        acc = prev + cur + nxt
        o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
        tl.store(oimg + h * RL + j, o.to(tl.bfloat16), jm & ((h + zero) < H))
        prev = cur
        cur = nxt


def pool3_variants(st, N, C, H, W):
    x = st["x"]
    out = torch.empty_like(x)
    vs = {}
    for jb, nw, band in [
        (1024, 4, 7),
        (1024, 4, 5),
        (512, 4, 7),
        (2048, 8, 7),
        (1024, 4, 35),
        (512, 2, 5),
        (1024, 8, 7),
        (256, 2, 7),
    ]:
        band = min(band, H)
        if H % band:
            continue
        vs[f"band {jb} w{nw} b{band}"] = lambda jb=jb, nw=nw, band=band: pool_band[
            (triton.cdiv(W * C, jb), N, H // band)
        ](x, out, C, H, W, jb, band, num_warps=nw)
    for yb, xb, nw in [(32, 64, 4), (16, 64, 4)]:
        NY = N * H * W
        xb = min(xb, C)
        vs[f"2d {yb}x{xb} w{nw}"] = lambda yb=yb, xb=xb, nw=nw, NY=NY: pool_2d[
            (triton.cdiv(NY, yb) * (C // xb),)
        ](x, out, C, H, W, yb, xb, NY, num_warps=nw)
    return vs, lambda: {"out": out}


VARIANTS = sized(
    {
        "softmax_bias_t": sm3_variants,
        "layernorm_t": ln3_variants,
        "avgpool_cl": pool3_variants,
    }
)
