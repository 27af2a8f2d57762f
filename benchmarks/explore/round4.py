# ruff: noqa: B023, SIM115
"""Round 4 of benchmarks/explore_gpu.py: grid-stride persistent reductions with the next tile prefetched; tsum's x and y read by separate programs (and each alone: DIAG rows, not checked); sliding-window pooling with prefetch."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import NSM, sized
from benchmarks.explore.round3 import pool_band


@triton.jit
def sm4_k(x, bias, out, R, C: tl.constexpr, XB: tl.constexpr, NPROG, PF: tl.constexpr, NS: tl.constexpr):
    # grid-stride over blocks of XB rows; PF=1: the next block's tile is loaded before this one is
    # computed (register double-buffering), so loads stay in flight during the reductions
    pid = tl.program_id(0)
    ri = tl.arange(0, C)[None, :]
    xr = tl.arange(0, XB)[:, None]
    b = tl.load(bias + ri)
    nblk = R // XB
    if PF == 1:
        v = tl.load(x + (pid * XB + xr + R * ri))
        for blk in range(pid, nblk, NPROG):
            nb = blk + NPROG
            nxt = tl.load(x + (nb * XB + xr + R * ri), mask=(nb + xr * 0) < nblk, other=0.0)
            t = v + b
            m = tl.max(t, 1)[:, None]
            e = tl.exp2((t - m) * 1.4426950408889634)
            ssum = tl.sum(e, 1)[:, None]
            tl.store(out + (C * (blk * XB + xr) + ri), e * (1.0 / ssum))
            v = nxt
    else:
        for blk in tl.range(pid, nblk, NPROG, num_stages=NS):
            t = tl.load(x + (blk * XB + xr + R * ri)) + b
            m = tl.max(t, 1)[:, None]
            e = tl.exp2((t - m) * 1.4426950408889634)
            ssum = tl.sum(e, 1)[:, None]
            tl.store(out + (C * (blk * XB + xr) + ri), e * (1.0 / ssum))


def sm4_variants(st, R, C):
    x, bias = st["x"], st["bias"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw, per_sm, pf, ns in [
        (8, 8, 2, 1, 1),
        (8, 8, 4, 1, 1),
        (8, 4, 4, 1, 1),
        (8, 4, 8, 1, 1),
        (16, 8, 1, 1, 1),
        (16, 8, 2, 1, 1),
        (16, 16, 1, 1, 1),
        (4, 4, 8, 1, 1),
        (8, 8, 2, 0, 1),
        (8, 8, 2, 0, 2),
        (8, 8, 2, 0, 3),
        (16, 8, 2, 0, 2),
    ]:
        xb = min(xb, R)
        nprog = min(R // xb, per_sm * NSM)
        vs[f"grid {xb}x{C} w{nw} p{per_sm} pf{pf} s{ns}"] = lambda xb=xb, nw=nw, nprog=nprog, pf=pf, ns=ns: (
            sm4_k[(nprog,)](x, bias, out, R, C, xb, nprog, pf, ns, num_warps=nw)
        )
    return vs, lambda: {"out": out}


@triton.jit
def ln4_k(x, w, b, out, R, C: tl.constexpr, XB: tl.constexpr, NPROG, PF: tl.constexpr, NS: tl.constexpr):
    pid = tl.program_id(0)
    ri = tl.arange(0, C)[None, :]
    xr = tl.arange(0, XB)[:, None]
    wv = tl.load(w + ri)
    bv = tl.load(b + ri)
    nblk = R // XB
    if PF == 1:
        v = tl.load(x + (pid * XB + xr + R * ri))
        for blk in range(pid, nblk, NPROG):
            nb = blk + NPROG
            nxt = tl.load(x + (nb * XB + xr + R * ri), mask=(nb + xr * 0) < nblk, other=0.0)
            mean = tl.sum(v, 1)[:, None] / C
            d = v - mean
            var = tl.sum(d * d, 1)[:, None] / C
            tl.store(out + (C * (blk * XB + xr) + ri), d * tl.rsqrt(var + 1e-5) * wv + bv)
            v = nxt
    else:
        for blk in tl.range(pid, nblk, NPROG, num_stages=NS):
            v = tl.load(x + (blk * XB + xr + R * ri))
            mean = tl.sum(v, 1)[:, None] / C
            d = v - mean
            var = tl.sum(d * d, 1)[:, None] / C
            tl.store(out + (C * (blk * XB + xr) + ri), d * tl.rsqrt(var + 1e-5) * wv + bv)


def ln4_variants(st, R, C):
    x, w, b = st["x"], st["w"], st["b"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw, per_sm, pf, ns in [
        (8, 8, 2, 1, 1),
        (8, 8, 4, 1, 1),
        (16, 8, 1, 1, 1),
        (16, 8, 2, 1, 1),
        (16, 8, 4, 1, 1),
        (16, 16, 1, 1, 1),
        (32, 16, 1, 1, 1),
        (8, 4, 4, 1, 1),
        (16, 8, 2, 0, 1),
        (16, 8, 2, 0, 2),
        (16, 8, 2, 0, 3),
    ]:
        xb = min(xb, R)
        nprog = min(R // xb, per_sm * NSM)
        vs[f"grid {xb}x{C} w{nw} p{per_sm} pf{pf} s{ns}"] = lambda xb=xb, nw=nw, nprog=nprog, pf=pf, ns=ns: (
            ln4_k[(nprog,)](x, w, b, out, R, C, xb, nprog, pf, ns, num_warps=nw)
        )
    return vs, lambda: {"out": out}


@triton.jit
def _hrow(img, h, j, jm, ml, mr, C: tl.constexpr, H: tl.constexpr, RL: tl.constexpr):
    ok = (h + j * 0 >= 0) & (h + j * 0 < H)
    row = img + h * RL
    a = tl.load(row + j, jm & ok, other=0.0)
    lft = tl.load(row + j - C, ml & ok, other=0.0)
    rgt = tl.load(row + j + C, mr & ok, other=0.0)
    return a, lft, rgt


@triton.jit
def pool4_band(
    x, out, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, JB: tl.constexpr, BAND: tl.constexpr
):
    # sliding window over h with the loads of row h+2 issued before row h is computed
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
    a, lft, rgt = _hrow(img, h0 - 1, j, jm, ml, mr, C, H, RL)
    prev = a.to(tl.float32) + lft.to(tl.float32) + rgt.to(tl.float32)
    a, lft, rgt = _hrow(img, h0, j, jm, ml, mr, C, H, RL)
    cur = a.to(tl.float32) + lft.to(tl.float32) + rgt.to(tl.float32)
    na, nl, nr = _hrow(img, h0 + 1, j, jm, ml, mr, C, H, RL)
    for k in range(BAND):
        h = h0 + k
        fa, fl, fr = _hrow(img, h + 2, j, jm, ml, mr, C, H, RL)
        nxt = na.to(tl.float32) + nl.to(tl.float32) + nr.to(tl.float32)
        acc = prev + cur + nxt
        o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
        tl.store(oimg + h * RL + j, o.to(tl.bfloat16), jm & ((h + j * 0) < H))
        prev = cur
        cur = nxt
        na = fa
        nl = fl
        nr = fr


def pool4_variants(st, N, C, H, W):
    x = st["x"]
    out = torch.empty_like(x)
    vs = {}
    for jb, nw, band in [
        (1024, 4, 7),
        (1024, 4, 5),
        (2048, 4, 7),
        (2048, 8, 7),
        (1024, 4, 35),
        (512, 2, 7),
        (1024, 2, 7),
        (4096, 8, 7),
        (8192, 8, 7),
        (8192, 8, 35),
    ]:
        band = min(band, H)
        if H % band:
            continue
        vs[f"band-pf {jb} w{nw} b{band}"] = lambda jb=jb, nw=nw, band=band: pool4_band[
            (triton.cdiv(W * C, jb), N, H // band)
        ](x, out, C, H, W, jb, band, num_warps=nw)
        vs[f"band {jb} w{nw} b{band}"] = lambda jb=jb, nw=nw, band=band: pool_band[
            (triton.cdiv(W * C, jb), N, H // band)
        ](x, out, C, H, W, jb, band, num_warps=nw)
    return vs, lambda: {"out": out}


@triton.jit
def tsum4_rows(x, part, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, RB: tl.constexpr):
    # x's share: row sums of x, each row read along its storage
    xi = tl.program_id(0) * XB + tl.arange(0, XB)[:, None]
    acc = tl.zeros([XB, RB], tl.float32)
    for r0 in range(0, C, RB):
        acc += tl.load(x + (xi * C + r0 + tl.arange(0, RB)[None, :]))
    tl.store(part + xi.reshape(XB), tl.sum(acc, 1) * 2.0)


@triton.jit
def tsum4_cols(
    y,
    part,
    R: tl.constexpr,
    C: tl.constexpr,
    JB: tl.constexpr,
    IB: tl.constexpr,
    SPLIT: tl.constexpr,
    OFF: tl.constexpr,
):
    # y's share: y.t() summed over its last dim = column sums of y's storage [C, R], read along
    # rows of the storage: program (column block, chunk of storage rows)
    ii = tl.program_id(0) * IB + tl.arange(0, IB)[None, :]
    sp = tl.program_id(1)
    CH: tl.constexpr = C // SPLIT
    acc = tl.zeros([JB, IB], tl.float32)
    for j0 in range(sp * CH, sp * CH + CH, JB):
        acc += tl.load(y + ((j0 + tl.arange(0, JB)[:, None]) * R + ii))
    tl.store(part + OFF + sp * R + ii.reshape(IB), tl.sum(acc, 0))


@triton.jit
def tsum4_both(
    x,
    y,
    part,
    R: tl.constexpr,
    C: tl.constexpr,
    XB: tl.constexpr,
    RB: tl.constexpr,
    JB: tl.constexpr,
    IB: tl.constexpr,
    SPLIT: tl.constexpr,
):
    # one launch, two kinds of program: the first R // XB sum rows of x, the rest columns of y
    pid = tl.program_id(0)
    NX: tl.constexpr = R // XB
    if pid < NX:
        xi = pid * XB + tl.arange(0, XB)[:, None]
        acc = tl.zeros([XB, RB], tl.float32)
        for r0 in range(0, C, RB):
            acc += tl.load(x + (xi * C + r0 + tl.arange(0, RB)[None, :]))
        tl.store(part + xi.reshape(XB), tl.sum(acc, 1) * 2.0)
    else:
        q = pid - NX
        ii = (q % (R // IB)) * IB + tl.arange(0, IB)[None, :]
        sp = q // (R // IB)
        CH: tl.constexpr = C // SPLIT
        acc2 = tl.zeros([JB, IB], tl.float32)
        for j0 in range(sp * CH, sp * CH + CH, JB):
            acc2 += tl.load(y + ((j0 + tl.arange(0, JB)[:, None]) * R + ii))
        tl.store(part + R + sp * R + ii.reshape(IB), tl.sum(acc2, 0))


@triton.jit
def sum_parts_plus(part, out, N: tl.constexpr, SPLIT: tl.constexpr, XB: tl.constexpr):
    xi = tl.program_id(0) * XB + tl.arange(0, XB)[None, :]
    si = tl.arange(0, SPLIT)[:, None]
    v = tl.load(part + N + si * N + xi)
    tl.store(out + xi, tl.sum(v, 0)[None, :] + tl.load(part + xi))


def tsum4_variants(st, R, C):
    x, y = st["x"], st["y"]
    out = torch.empty(R, device=x.device)
    vs = {}
    for xb, rb in [(1, 2048), (2, 1024), (4, 1024), (8, 512)]:
        xb, rb = min(xb, R), min(rb, C)
        part = torch.empty(R, device=x.device)
        vs[f"DIAG x-rows only {xb}x{rb}"] = lambda xb=xb, rb=rb, part=part: tsum4_rows[(R // xb,)](
            x, part, R, C, xb, rb, num_warps=max(1, min(8, xb * rb // 256))
        )
    for jb, ib, split in [
        (8, 512, 64),
        (8, 256, 64),
        (16, 256, 32),
        (4, 1024, 64),
        (8, 1024, 32),
        (16, 128, 64),
    ]:
        jb, ib = min(jb, C), min(ib, R)
        split = max(1, min(split, C // jb))
        if C % (split * jb) or R % ib:
            continue
        part = torch.empty((split + 1) * R, device=x.device)
        vs[f"DIAG y-cols only {jb}x{ib} split{split}"] = lambda jb=jb, ib=ib, split=split, part=part: (
            tsum4_cols[(R // ib, split)](
                y, part, R, C, jb, ib, split, 0, num_warps=max(1, min(8, jb * ib // 256))
            )
        )
    for xb, rb, jb, ib, split in [
        (2, 1024, 8, 512, 64),
        (4, 1024, 8, 512, 64),
        (2, 1024, 8, 256, 64),
        (4, 1024, 16, 256, 32),
        (2, 1024, 4, 1024, 64),
        (8, 512, 8, 512, 32),
    ]:
        xb, rb, jb, ib = min(xb, R), min(rb, C), min(jb, C), min(ib, R)
        split = max(1, min(split, C // jb))
        if C % (split * jb) or R % ib or R % xb:
            continue
        part = torch.empty((split + 1) * R, device=x.device)
        nprog = R // xb + (R // ib) * split

        def run(xb=xb, rb=rb, jb=jb, ib=ib, split=split, part=part, nprog=nprog):
            tsum4_both[(nprog,)](x, y, part, R, C, xb, rb, jb, ib, split, num_warps=8)
            sum_parts_plus[(R // min(64, R),)](part, out, R, split, min(64, R), num_warps=2)

        vs[f"two-kinds x{xb}x{rb} y{jb}x{ib} split{split}"] = run
    return vs, lambda: {"out": out}


VARIANTS = sized(
    {
        "softmax_bias_t": sm4_variants,
        "layernorm_t": ln4_variants,
        "avgpool_cl": pool4_variants,
        "tsum": tsum4_variants,
    }
)
