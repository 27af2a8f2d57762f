# ruff: noqa: B023, SIM115
"""Round 2 of benchmarks/explore_gpu.py: a 2D grid and eviction hints (apbt), two accumulators and split counts (tsum, three_layouts_mean), a sliding window over whole images (avgpool_cl), exp2 and a reciprocal (softmax)."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import sized
from benchmarks.explore.round1 import _nanmax, ln_k, pool_2d, pool_flat, sum_parts, tlm_split, tsum_split


@triton.jit
def apbt_e(x, y, out, R: tl.constexpr, C: tl.constexpr, YB: tl.constexpr, XB: tl.constexpr, EV: tl.constexpr):
    xo = tl.program_id(0) * XB
    yo = tl.program_id(1) * YB
    yi = yo + tl.arange(0, YB)[:, None]
    xi = xo + tl.arange(0, XB)[None, :]
    if EV == 1:
        a = tl.load(x + (yi * C + xi), eviction_policy="evict_last")
        b = tl.load(y + (yi + R * xi), eviction_policy="evict_last")
    elif EV == 2:
        a = tl.load(x + (yi * C + xi), eviction_policy="evict_first")
        b = tl.load(y + (yi + R * xi), eviction_policy="evict_first")
    else:
        a = tl.load(x + (yi * C + xi))
        b = tl.load(y + (yi + R * xi))
    tl.store(out + (yi * C + xi), 2.0 * a + 3.0 * b)


def apbt2_variants(st, R, C):
    x, y = st["x"], st["y"]
    out = torch.empty_like(x)
    vs = {}
    for yb, xb, w, ev in [
        (64, 128, 4, 0),
        (64, 128, 4, 1),
        (64, 128, 4, 2),
        (64, 64, 4, 0),
        (64, 64, 4, 1),
        (32, 128, 4, 0),
        (128, 64, 4, 0),
        (32, 64, 4, 0),
        (32, 32, 4, 1),
        (16, 256, 4, 0),
        (64, 128, 8, 0),
        (32, 64, 2, 0),
    ]:
        yb, xb = min(yb, R), min(xb, C)
        vs[f"grid2d {yb}x{xb} w{w} ev{ev}"] = lambda yb=yb, xb=xb, w=w, ev=ev: apbt_e[(C // xb, R // yb)](
            x, y, out, R, C, yb, xb, ev, num_warps=w
        )
    return vs, lambda: {"out": out}


@triton.jit
def tsum2(
    x, y, part, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, RB: tl.constexpr, SPLIT: tl.constexpr
):
    xo = tl.program_id(0) * XB
    sp = tl.program_id(1)
    CH: tl.constexpr = C // SPLIT
    xi = xo + tl.arange(0, XB)[:, None]
    rb = tl.arange(0, RB)[None, :]
    acc_a = tl.zeros([XB, RB], tl.float32)
    acc_b = tl.zeros([XB, RB], tl.float32)
    for r0 in range(sp * CH, sp * CH + CH, RB):
        ri = r0 + rb
        acc_a += tl.load(x + (xi * C + ri)) * 2.0
        acc_b += tl.load(y + (xi + R * ri))
    s = tl.sum(acc_a, 1) + tl.sum(acc_b, 1)
    tl.store(part + sp * R + xo + tl.arange(0, XB), s)


def tsum2_variants(st, R, C):
    x, y = st["x"], st["y"]
    out = torch.empty(R, device=x.device)
    vs = {}
    for kern, tag in ((tsum2, "2acc"), (tsum_split, "1acc")):
        for xb, rb, split, w, ns in [
            (32, 128, 8, 8, 3),
            (32, 128, 1, 8, 3),
            (64, 64, 8, 8, 3),
            (32, 128, 16, 8, 3),
            (32, 128, 8, 8, 1),
            (32, 128, 8, 8, 2),
            (32, 128, 8, 8, 4),
            (64, 128, 4, 8, 3),
            (32, 64, 16, 4, 3),
            (128, 32, 8, 8, 3),
        ]:
            if tag == "1acc" and ns == 3:
                continue
            xb, rb = min(xb, R), min(rb, C // split)
            if C % (split * rb) or R % xb:
                continue
            part = torch.empty(split * R, device=x.device)

            def run(xb=xb, rb=rb, split=split, w=w, part=part, ns=ns, kern=kern):
                kern[(R // xb, split)](x, y, part, R, C, xb, rb, split, num_warps=w, num_stages=ns)
                sum_parts[(R // min(64, R),)](part, out, R, split, min(64, R), 1.0, num_warps=2)

            vs[f"{tag} split{split} {xb}x{rb} w{w} s{ns}"] = run
    return vs, lambda: {"out": out}


@triton.jit
def pool_slide(x, out, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, JB: tl.constexpr):
    # one program: image n, a chunk of JB positions of the flattened (w, c) row; walks h with a
    # rolling window of three horizontal 3-sums (each input row loaded once, shifted twice)
    RL: tl.constexpr = W * C
    n = tl.program_id(1)
    j = tl.program_id(0) * JB + tl.arange(0, JB)
    jm = j < RL
    w = j // C
    ml = jm & (w >= 1)
    mr = jm & (w < W - 1)
    img = x + n * H * RL
    oimg = out + n * H * RL
    prev = tl.zeros([JB], tl.float32)
    cur = (
        tl.load(img + j, jm, other=0.0).to(tl.float32)
        + tl.load(img + j - C, ml, other=0.0).to(tl.float32)
        + tl.load(img + j + C, mr, other=0.0).to(tl.float32)
    )
    for h in range(H):
        hm = h + 1 < H
        row = img + (h + 1) * RL
        nxt = (
            tl.load(row + j, jm & hm, other=0.0).to(tl.float32)
            + tl.load(row + j - C, ml & hm, other=0.0).to(tl.float32)
            + tl.load(row + j + C, mr & hm, other=0.0).to(tl.float32)
        )
        acc = prev + cur + nxt
        o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
        tl.store(oimg + h * RL + j, o.to(tl.bfloat16), jm)
        prev = cur
        cur = nxt


def pool2_variants(st, N, C, H, W):
    x = st["x"]
    out = torch.empty_like(x)
    total = N * C * H * W
    NY = N * H * W
    vs = {}
    for jb, nw, ns in [
        (1024, 4, 3),
        (512, 4, 3),
        (2048, 8, 3),
        (1024, 8, 3),
        (512, 2, 3),
        (1024, 4, 1),
        (256, 2, 3),
    ]:
        vs[f"slide {jb} w{nw} s{ns}"] = lambda jb=jb, nw=nw, ns=ns: pool_slide[(triton.cdiv(W * C, jb), N)](
            x, out, C, H, W, jb, num_warps=nw, num_stages=ns
        )
    for xb, nw in [(4096, 8), (2048, 4), (1024, 2)]:
        vs[f"flat {xb} w{nw}"] = lambda xb=xb, nw=nw: pool_flat[(triton.cdiv(total, xb),)](
            x, out, N, C, H, W, xb, num_warps=nw
        )
    for yb, xb, nw in [
        (16, 64, 4),
        (8, 64, 4),
        (16, 64, 2),
        (32, 64, 8),
        (8, 64, 2),
        (16, 64, 8),
        (4, 64, 2),
    ]:
        xb = min(xb, C)
        vs[f"2d {yb}x{xb} w{nw}"] = lambda yb=yb, xb=xb, nw=nw: pool_2d[(triton.cdiv(NY, yb) * (C // xb),)](
            x, out, C, H, W, yb, xb, NY, num_warps=nw
        )
    return vs, lambda: {"out": out}


@triton.jit
def sm2_k(x, bias, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, MODE: tl.constexpr):
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[:, None]
    ri = tl.arange(0, C)[None, :]
    v = tl.load(x + (xi + R * ri)) + tl.load(bias + ri)
    m = tl.reduce(v, 1, _nanmax)[:, None]
    if MODE == 2:
        e = tl.exp2((v - m) * 1.4426950408889634)
    else:
        e = tl.exp(v - m)
    ssum = tl.sum(e, 1)[:, None]
    if MODE == 0:
        tl.store(out + (C * xi + ri), e / ssum)
    else:
        tl.store(out + (C * xi + ri), e * (1.0 / ssum))


def sm2_variants(st, R, C):
    x, bias = st["x"], st["bias"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw, mode in [
        (8, 8, 0),
        (8, 8, 1),
        (8, 8, 2),
        (16, 8, 1),
        (4, 4, 1),
        (16, 16, 1),
        (4, 8, 1),
        (8, 4, 1),
        (2, 4, 1),
        (32, 8, 1),
    ]:
        xb = min(xb, R)
        vs[f"persist {xb}x{C} w{nw} mode{mode}"] = lambda xb=xb, nw=nw, mode=mode: sm2_k[(R // xb,)](
            x, bias, out, R, C, xb, mode, num_warps=nw
        )
    return vs, lambda: {"out": out}


def ln2_variants(st, R, C):
    x, w, b = st["x"], st["w"], st["b"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw in [(16, 8), (32, 8), (16, 4), (32, 4), (64, 16), (8, 2)]:
        xb = min(xb, R)
        vs[f"persist {xb}x{C} w{nw}"] = lambda xb=xb, nw=nw: ln_k[(R // xb,)](
            x, w, b, out, R, C, xb, 0, num_warps=nw
        )
    return vs, lambda: {"out": out}


def tlm2_variants(st, R, C, P):
    a, b, c = st["a"], st["b"], st["c"]
    s = torch.empty(R * C, device=a.device)
    mean = torch.empty(C, device=a.device)
    vs = {}
    for xb, rb, split, w, ns in [
        (32, 64, 16, 4, 3),
        (32, 64, 16, 4, 1),
        (32, 64, 16, 4, 2),
        (64, 32, 16, 4, 3),
        (64, 64, 8, 8, 1),
        (32, 32, 16, 4, 3),
        (64, 32, 32, 4, 3),
        (32, 64, 32, 4, 3),
        (64, 64, 4, 8, 2),
        (128, 32, 8, 4, 3),
    ]:
        xb, rb = min(xb, C), min(rb, R // split)
        if rb == 0 or R % (split * rb) or C % xb:
            continue
        part = torch.empty(split * C, device=a.device)

        def run(xb=xb, rb=rb, split=split, w=w, part=part, ns=ns):
            tlm_split[(C // xb, split)](a, b, c, s, part, R, C, P, xb, rb, split, num_warps=w, num_stages=ns)
            sum_parts[(C // min(64, C),)](part, mean, C, split, min(64, C), 1.0 / R, num_warps=2)

        vs[f"split{split} {rb}x{xb} w{w} s{ns}"] = run
    return vs, lambda: {"s": s, "mean": mean}


VARIANTS = sized(
    {
        "apbt": apbt2_variants,
        "tsum": tsum2_variants,
        "avgpool_cl": pool2_variants,
        "softmax_bias_t": sm2_variants,
        "layernorm_t": ln2_variants,
        "three_layouts_mean": tlm2_variants,
    }
)
