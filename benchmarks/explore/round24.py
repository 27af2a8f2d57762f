# ruff: noqa: B023
"""Round 24 of benchmarks/explore_gpu.py: where the pooling window's time goes, and streaming
hints on the softmax cluster.

avgpool_cl: the sliding window (round 3's `pool_band`) loads each new row three times, at w-1, w
and w+1 (the two shifted loads overlap the centre load but for 2 x 192 elements). Issued together,
the shifted loads may miss in L1 while the centre's lines are still in flight and go to L2 each:
three reads of every input line from L2. Variants: the shifted loads of a row issued one row
later, when its centre load has landed (`delayed`, the output one row behind); the same with the
centre kept in L1 by `evict_last` (`delayed-keep`); and, unchecked, the window with no shifted
loads at all (`DIAG centre only`: the time the horizontal neighbours cost).

softmax_bias_t: the cluster launch (CLUSTERS = True) with the output stored as a stream
(`cache_modifier=".cs"`) and the transposed input loaded `evict_first`, each alone and together."""

import json

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import DRY, sized
from benchmarks.explore.round3 import pool_band
from benchmarks.explore.round19 import _timed
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module


@triton.jit
def _centre(img, h, j, jm, H: tl.constexpr, RL: tl.constexpr, KEEP: tl.constexpr):
    ok = (h + j * 0 >= 0) & (h + j * 0 < H)
    if KEEP:
        return tl.load(img + h * RL + j, jm & ok, other=0.0, eviction_policy="evict_last")
    return tl.load(img + h * RL + j, jm & ok, other=0.0)


@triton.jit
def _sides(img, h, j, ml, mr, C: tl.constexpr, H: tl.constexpr, RL: tl.constexpr):
    ok = (h + j * 0 >= 0) & (h + j * 0 < H)
    row = img + h * RL
    lft = tl.load(row + j - C, ml & ok, other=0.0).to(tl.float32)
    rgt = tl.load(row + j + C, mr & ok, other=0.0).to(tl.float32)
    return lft + rgt


@triton.jit
def pool24_delayed(
    x,
    out,
    C: tl.constexpr,
    H: tl.constexpr,
    W: tl.constexpr,
    JB: tl.constexpr,
    BAND: tl.constexpr,
    KEEP: tl.constexpr,
):
    # row h's horizontal sum = its centre (loaded one iteration earlier) + its two shifted loads
    # (issued now, when the centre's lines are in L1); iteration k loads row h+2's centre and
    # row h+1's sides, and writes row h
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
    cp = _centre(img, h0 - 1, j, jm, H, RL, KEEP).to(tl.float32)
    cc = _centre(img, h0, j, jm, H, RL, KEEP).to(tl.float32)
    cn = _centre(img, h0 + 1, j, jm, H, RL, KEEP).to(tl.float32)
    prev = cp + _sides(img, h0 - 1, j, ml, mr, C, H, RL)
    cur = cc + _sides(img, h0, j, ml, mr, C, H, RL)
    for k in range(BAND):
        h = h0 + k
        ahead = _centre(img, h + 2, j, jm & (k + 1 + zero < BAND), H, RL, KEEP).to(tl.float32)
        nxt = cn + _sides(img, h + 1, j, ml, mr, C, H, RL)
        acc = prev + cur + nxt
        o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
        tl.store(oimg + h * RL + j, o.to(tl.bfloat16), jm & ((h + zero) < H))
        prev = cur
        cur = nxt
        cn = ahead


@triton.jit
def pool24_centre_only(
    x, out, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, JB: tl.constexpr, BAND: tl.constexpr
):
    # not the workload: the vertical 3-sum of centre loads only (no horizontal neighbours)
    RL: tl.constexpr = W * C
    n = tl.program_id(1)
    h0 = tl.program_id(2) * BAND
    j = tl.program_id(0) * JB + tl.arange(0, JB)
    jm = j < RL
    img = x + n * H * RL
    oimg = out + n * H * RL
    zero = j * 0
    prev = _centre(img, h0 - 1, j, jm, H, RL, False).to(tl.float32)
    cur = _centre(img, h0, j, jm, H, RL, False).to(tl.float32)
    for k in range(BAND):
        h = h0 + k
        nxt = _centre(img, h + 1, j, jm, H, RL, False).to(tl.float32)
        acc = prev + cur + nxt
        o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
        tl.store(oimg + h * RL + j, o.to(tl.bfloat16), jm & ((h + zero) < H))
        prev = cur
        cur = nxt


def pool24_variants(st, N, C, H, W):
    x = st["x"]
    out = torch.empty_like(x)
    vs = {}
    for jb, nw, band in [(1024, 4, 5), (1024, 4, 7), (512, 2, 7), (2048, 8, 7), (2048, 4, 5)]:
        band = min(band, H)
        if H % band:
            continue
        grid = (triton.cdiv(W * C, jb), N, H // band)
        vs[f"band {jb} w{nw} b{band}"] = lambda jb=jb, nw=nw, band=band, grid=grid: pool_band[grid](
            x, out, C, H, W, jb, band, num_warps=nw
        )
        for keep in (False, True):
            vs[f"delayed{'-keep' if keep else ''} {jb} w{nw} b{band}"] = (
                lambda jb=jb, nw=nw, band=band, grid=grid, keep=keep: pool24_delayed[grid](
                    x, out, C, H, W, jb, band, keep, num_warps=nw
                )
            )
        if jb == 1024:
            vs[f"DIAG centre only {jb} w{nw} b{band}"] = lambda jb=jb, nw=nw, band=band, grid=grid: (
                pool24_centre_only[grid](x, out, C, H, W, jb, band, num_warps=nw)
            )
    return vs, lambda: {"out": out}


HINTS = {
    "store .cs": [("tl.store(out_ptr + (1024 * xindex + r0_index), tmp7)", 'cache_modifier=".cs"')],
    "load evict_first": [("tl.load(x_ptr + (xindex + 32768 * r0_index))", 'eviction_policy="evict_first"')],
}
HINTS["both"] = HINTS["store .cs"] + HINTS["load evict_first"]


def _hinted(src, edits):
    for call, hint in edits:
        assert src.count(call) == 1, call
        src = src.replace(call, call[:-1] + f", {hint})")
    return src


def softmax24(st, sz):
    doc, _ = WORKLOADS["softmax_bias_t"](**sz)
    stage = optimize(load_text(json.dumps(doc), "softmax_bias_t.json"))
    src = emit_module(stage.graph, stage.plan).replace("\nCLUSTERS = None\n", "\nCLUSTERS = True\n")
    vs, last = {}, {}
    vs["cluster as emitted"] = _timed(load_module(src), st, "softmax as emitted", last)
    for label, edits in HINTS.items():
        if DRY:  # small sizes: the hinted calls carry them
            edits = [
                (c.replace("32768", str(sz["rows"])).replace("1024", str(sz["cols"])), h) for c, h in edits
            ]
        vs[f"cluster {label}"] = _timed(load_module(_hinted(src, edits)), st, f"softmax {label}", last)
    if not DRY:
        torch.cuda.empty_cache()
    return vs, lambda: last


VARIANTS = {**sized({"avgpool_cl": pool24_variants}), "softmax_bias_t": softmax24}
