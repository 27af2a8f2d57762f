# ruff: noqa: B023, SIM115
"""Round 9 of benchmarks/explore_gpu.py: torch's own reductions over tsum's bytes (the read ceiling at this size); pooling windows carrying loads against carrying row sums."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import sized
from benchmarks.explore.round3 import pool_band
from benchmarks.explore.round4 import _hrow


def tsum9_variants(st, R, C):
    """The read ceiling at this size: torch's own reductions over the same bytes (DIAG, unchecked)."""
    x, y = st["x"], st["y"]
    xv, yv = x.view(R, C), y.view(C, R)
    both = torch.cat([x, y])
    return {
        "DIAG torch x.sum(-1) (128 MiB)": lambda: xv.sum(-1),
        "DIAG torch ys.sum(0) (128 MiB)": lambda: yv.sum(0),
        "DIAG torch sum of 256 MiB": lambda: both.sum(),
        "DIAG torch x.sum(-1) + ys.sum(0)": lambda: xv.sum(-1) * 2 + yv.sum(0),
    }, lambda: {}


@triton.jit
def pool9_carry6(
    x, out, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, JB: tl.constexpr, BAND: tl.constexpr
):
    # pool_band, but carrying the six loads of the two previous rows (as fuseopt's window kernel
    # does) instead of two horizontal sums: the cost of carrying loads rather than partial sums
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
    a0, l0, r0 = _hrow(img, h0 - 1, j, jm, ml, mr, C, H, RL)
    a1, l1, r1 = _hrow(img, h0, j, jm, ml, mr, C, H, RL)
    a0 = a0.to(tl.float32)
    l0 = l0.to(tl.float32)
    r0 = r0.to(tl.float32)
    a1 = a1.to(tl.float32)
    l1 = l1.to(tl.float32)
    r1 = r1.to(tl.float32)
    for k in range(BAND):
        h = h0 + k
        a2, l2, r2 = _hrow(img, h + 1, j, jm, ml, mr, C, H, RL)
        a2 = a2.to(tl.float32)
        l2 = l2.to(tl.float32)
        r2 = r2.to(tl.float32)
        acc = l0 + a0 + r0 + l1 + a1 + r1 + l2 + a2 + r2
        o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
        tl.store(oimg + h * RL + j, o.to(tl.bfloat16), jm & ((h + j * 0) < H))
        a0 = a1
        l0 = l1
        r0 = r1
        a1 = a2
        l1 = l2
        r1 = r2


def pool9_variants(st, N, C, H, W):
    x = st["x"]
    out = torch.empty_like(x)
    vs = {}
    for jb, nw, band in [(1024, 4, 7), (1024, 4, 5), (512, 2, 7)]:
        band = min(band, H)
        if H % band:
            continue
        grid = (triton.cdiv(W * C, jb), N, H // band)
        vs[f"band {jb} w{nw} b{band}"] = lambda jb=jb, nw=nw, band=band, grid=grid: pool_band[grid](
            x, out, C, H, W, jb, band, num_warps=nw
        )
        vs[f"carry6 {jb} w{nw} b{band}"] = lambda jb=jb, nw=nw, band=band, grid=grid: pool9_carry6[grid](
            x, out, C, H, W, jb, band, num_warps=nw
        )
    return vs, lambda: {"out": out}


VARIANTS = sized(
    {
        "tsum": tsum9_variants,
        "avgpool_cl": pool9_variants,
    }
)
