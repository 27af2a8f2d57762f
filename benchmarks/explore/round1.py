# ruff: noqa: B023, SIM115
"""Round 1 of benchmarks/explore_gpu.py: tiles, split counts and warps for every workload; flat, 2D and row-wise pooling."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import sized


@triton.jit
def apbt_k(
    x, y, out, R: tl.constexpr, C: tl.constexpr, YB: tl.constexpr, XB: tl.constexpr, ORDER: tl.constexpr
):
    pid = tl.program_id(0)
    if ORDER == 0:  # x tiles fastest
        yo = (pid // (C // XB)) * YB
        xo = (pid % (C // XB)) * XB
    elif ORDER == 1:  # y tiles fastest
        yo = (pid % (R // YB)) * YB
        xo = (pid // (R // YB)) * XB
    else:  # 2D grid
        xo = tl.program_id(0) * XB
        yo = tl.program_id(1) * YB
    yi = yo + tl.arange(0, YB)[:, None]
    xi = xo + tl.arange(0, XB)[None, :]
    a = tl.load(x + (yi * C + xi))
    b = tl.load(y + (yi + R * xi))
    tl.store(out + (yi * C + xi), 2.0 * a + 3.0 * b)


@triton.jit
def apbt_t(x, y, out, R: tl.constexpr, C: tl.constexpr, YB: tl.constexpr, XB: tl.constexpr):
    # y loaded as an [XB, YB] tile (contiguous along its last dim) then transposed
    pid = tl.program_id(0)
    yo = (pid // (C // XB)) * YB
    xo = (pid % (C // XB)) * XB
    yi = yo + tl.arange(0, YB)[:, None]
    xi = xo + tl.arange(0, XB)[None, :]
    a = tl.load(x + (yi * C + xi))
    bt = tl.load(y + ((yo + tl.arange(0, YB))[None, :] + R * (xo + tl.arange(0, XB))[:, None]))
    tl.store(out + (yi * C + xi), 2.0 * a + 3.0 * tl.trans(bt))


def apbt_variants(st, R, C):
    x, y = st["x"], st["y"]
    out = torch.empty_like(x)
    vs = {}
    for yb, xb, w, order in [
        (64, 128, 4, 0),
        (64, 128, 4, 1),
        (64, 128, 4, 2),
        (128, 64, 4, 0),
        (32, 128, 4, 0),
        (64, 64, 4, 0),
        (128, 128, 8, 0),
        (32, 32, 4, 0),
        (64, 256, 8, 0),
    ]:
        yb, xb = min(yb, R), min(xb, C)
        grid = (C // xb, R // yb) if order == 2 else ((R // yb) * (C // xb),)
        vs[f"hand {yb}x{xb} w{w} order{order}"] = lambda yb=yb, xb=xb, w=w, order=order, grid=grid: apbt_k[
            grid
        ](x, y, out, R, C, yb, xb, order, num_warps=w)
    for yb, xb, w in [(64, 128, 4), (128, 64, 4)]:
        yb, xb = min(yb, R), min(xb, C)
        vs[f"hand-trans {yb}x{xb} w{w}"] = lambda yb=yb, xb=xb, w=w: apbt_t[((R // yb) * (C // xb),)](
            x, y, out, R, C, yb, xb, num_warps=w
        )
    return vs, lambda: {"out": out}


@triton.jit
def tsum_split(
    x, y, part, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, RB: tl.constexpr, SPLIT: tl.constexpr
):
    xo = tl.program_id(0) * XB
    sp = tl.program_id(1)
    CH: tl.constexpr = C // SPLIT
    xi = xo + tl.arange(0, XB)[:, None]
    rb = tl.arange(0, RB)[None, :]
    acc = tl.zeros([XB, RB], tl.float32)
    for r0 in range(sp * CH, sp * CH + CH, RB):
        ri = r0 + rb
        a = tl.load(x + (xi * C + ri))
        b = tl.load(y + (xi + R * ri))
        acc += a * 2.0 + b
    s = tl.sum(acc, 1)
    tl.store(part + sp * R + xo + tl.arange(0, XB), s)


@triton.jit
def sum_parts(part, out, N: tl.constexpr, SPLIT: tl.constexpr, XB: tl.constexpr, SCALE: tl.constexpr):
    xi = tl.program_id(0) * XB + tl.arange(0, XB)[None, :]
    si = tl.arange(0, SPLIT)[:, None]
    v = tl.load(part + si * N + xi)
    tl.store(out + xi, tl.sum(v, 0)[None, :] * SCALE)


def tsum_variants(st, R, C):
    x, y = st["x"], st["y"]
    out = torch.empty(R, device=x.device)
    vs = {}
    for xb, rb, split, w in [
        (32, 128, 8, 8),
        (64, 64, 8, 8),
        (32, 128, 16, 8),
        (64, 64, 16, 8),
        (32, 64, 8, 4),
        (64, 128, 8, 8),
        (32, 128, 4, 8),
        (16, 256, 8, 8),
        (32, 128, 1, 8),
        (64, 64, 1, 8),
    ]:
        xb, rb = min(xb, R), min(rb, C // split) if C // split >= 1 else 1
        if C % (split * rb) or R % xb:
            continue
        part = torch.empty(split * R, device=x.device)

        def run(xb=xb, rb=rb, split=split, w=w, part=part):
            tsum_split[(R // xb, split)](x, y, part, R, C, xb, rb, split, num_warps=w)
            sum_parts[(R // min(64, R),)](part, out, R, split, min(64, R), 1.0, num_warps=2)

        vs[f"split{split} {xb}x{rb} w{w}"] = run
    return vs, lambda: {"out": out}


@triton.jit
def tlm_split(
    a,
    b,
    c,
    s,
    part,
    R: tl.constexpr,
    C: tl.constexpr,
    P: tl.constexpr,
    XB: tl.constexpr,
    RB: tl.constexpr,
    SPLIT: tl.constexpr,
):
    # s[r, x] = sigmoid(a[r*C + x]) * b[r + R*x] + c[3 + P*r + x]; partial column sums
    xo = tl.program_id(0) * XB
    sp = tl.program_id(1)
    CH: tl.constexpr = R // SPLIT
    xi = xo + tl.arange(0, XB)[None, :]
    rb = tl.arange(0, RB)[:, None]
    acc = tl.zeros([RB, XB], tl.float32)
    for r0 in range(sp * CH, sp * CH + CH, RB):
        ri = r0 + rb
        av = tl.load(a + (ri * C + xi))
        bv = tl.load(b + (ri + R * xi))
        cv = tl.load(c + (3 + P * ri + xi))
        sv = tl.sigmoid(av) * bv + cv
        tl.store(s + (ri * C + xi), sv)
        acc += sv
    tl.store(part + sp * C + xo + tl.arange(0, XB), tl.sum(acc, 0))


def tlm_variants(st, R, C, P):
    a, b, c = st["a"], st["b"], st["c"]
    s = torch.empty(R * C, device=a.device)
    mean = torch.empty(C, device=a.device)
    vs = {}
    for xb, rb, split, w in [
        (64, 64, 8, 8),
        (64, 32, 8, 4),
        (32, 128, 8, 8),
        (64, 64, 16, 8),
        (128, 32, 8, 8),
        (64, 64, 4, 8),
        (32, 64, 16, 4),
        (64, 64, 1, 8),
    ]:
        xb, rb = min(xb, C), min(rb, R // split)
        if R % (split * rb) or C % xb:
            continue
        part = torch.empty(split * C, device=a.device)

        def run(xb=xb, rb=rb, split=split, w=w, part=part):
            tlm_split[(C // xb, split)](a, b, c, s, part, R, C, P, xb, rb, split, num_warps=w)
            sum_parts[(C // min(64, C),)](part, mean, C, split, min(64, C), 1.0 / R, num_warps=2)

        vs[f"split{split} {rb}x{xb} w{w}"] = run
    return vs, lambda: {"s": s, "mean": mean}


@triton.jit
def ln_k(x, w, b, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, TRANS: tl.constexpr):
    xo = tl.program_id(0) * XB
    if TRANS:  # tile [C, XB]
        xi = xo + tl.arange(0, XB)[None, :]
        ri = tl.arange(0, C)[:, None]
        v = tl.load(x + (xi + R * ri))
        mean = tl.sum(v, 0)[None, :] / C
        d = v - mean
        var = tl.sum(d * d, 0)[None, :] / C
        o = d * tl.rsqrt(var + 1e-5) * tl.load(w + ri) + tl.load(b + ri)
        tl.store(out + (C * xi + ri), o)
    else:
        xi = xo + tl.arange(0, XB)[:, None]
        ri = tl.arange(0, C)[None, :]
        v = tl.load(x + (xi + R * ri))
        mean = tl.sum(v, 1)[:, None] / C
        d = v - mean
        var = tl.sum(d * d, 1)[:, None] / C
        o = d * tl.rsqrt(var + 1e-5) * tl.load(w + ri) + tl.load(b + ri)
        tl.store(out + (C * xi + ri), o)


def ln_variants(st, R, C):
    x, w, b = st["x"], st["w"], st["b"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw, tr in [
        (16, 8, 0),
        (16, 8, 1),
        (8, 8, 0),
        (8, 4, 0),
        (32, 8, 0),
        (32, 16, 0),
        (16, 16, 0),
        (4, 4, 0),
        (8, 8, 1),
        (32, 16, 1),
    ]:
        xb = min(xb, R)
        vs[f"persist {xb}x{C} w{nw} trans{tr}"] = lambda xb=xb, nw=nw, tr=tr: ln_k[(R // xb,)](
            x, w, b, out, R, C, xb, tr, num_warps=nw
        )
    return vs, lambda: {"out": out}


@triton.jit
def _nanmax(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def sm_k(x, bias, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, MAXMODE: tl.constexpr):
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[:, None]
    ri = tl.arange(0, C)[None, :]
    v = tl.load(x + (xi + R * ri)) + tl.load(bias + ri)
    if MAXMODE == 0:
        m = tl.max(v, 1)[:, None]
    elif MAXMODE == 1:
        m = tl.reduce(v, 1, _nanmax)[:, None]
    else:
        has_nan = tl.max((v != v).to(tl.int8), 1) > 0
        m = tl.where(has_nan, float("nan"), tl.max(v, 1))[:, None]
    e = tl.exp(v - m)
    ssum = tl.sum(e, 1)[:, None]
    tl.store(out + (C * xi + ri), e / ssum)


def sm_variants(st, R, C):
    x, bias = st["x"], st["bias"]
    out = torch.empty(R * C, device=x.device)
    vs = {}
    for xb, nw, mm in [
        (8, 8, 0),
        (8, 8, 1),
        (8, 8, 2),
        (16, 8, 1),
        (4, 4, 1),
        (16, 16, 1),
        (4, 8, 1),
        (32, 16, 1),
    ]:
        xb = min(xb, R)
        vs[f"persist {xb}x{C} w{nw} max{mm}"] = lambda xb=xb, nw=nw, mm=mm: sm_k[(R // xb,)](
            x, bias, out, R, C, xb, mm, num_warps=nw
        )
    return vs, lambda: {"out": out}


@triton.jit
def pool_flat(x, out, N: tl.constexpr, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, XB: tl.constexpr):
    idx = tl.program_id(0) * XB + tl.arange(0, XB)
    mask = idx < N * C * H * W
    w = (idx // C) % W
    h = (idx // (C * W)) % H
    acc = tl.zeros([XB], tl.float32)
    for dh in tl.static_range(3):
        for dw in tl.static_range(3):
            hh = h + dh - 1
            ww = w + dw - 1
            m = mask & (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)
            acc += tl.load(x + idx + ((dh - 1) * W * C + (dw - 1) * C), m, other=0.0).to(tl.float32)
    o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
    tl.store(out + idx, o.to(tl.bfloat16), mask)


@triton.jit
def pool_2d(
    x,
    out,
    C: tl.constexpr,
    H: tl.constexpr,
    W: tl.constexpr,
    YB: tl.constexpr,
    XB: tl.constexpr,
    NY: tl.constexpr,
):
    pid = tl.program_id(0)
    yo = (pid // (C // XB)) * YB
    xo = (pid % (C // XB)) * XB
    yi = yo + tl.arange(0, YB)[:, None]
    ci = xo + tl.arange(0, XB)[None, :]
    ym = yi < NY
    w = yi % W
    h = (yi // W) % H
    base = yi * C + ci
    acc = tl.zeros([YB, XB], tl.float32)
    for dh in tl.static_range(3):
        for dw in tl.static_range(3):
            hh = h + dh - 1
            ww = w + dw - 1
            m = ym & (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)
            acc += tl.load(x + base + ((dh - 1) * W * C + (dw - 1) * C), m, other=0.0).to(tl.float32)
    o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
    tl.store(out + base, o.to(tl.bfloat16), ym)


@triton.jit
def pool_rows(x, out, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, WB: tl.constexpr, XB: tl.constexpr):
    # one program: one (n, h) row of W positions x XB channels; separable 3 + 3 sums
    pid = tl.program_id(0)
    row = pid // (C // XB)
    co = (pid % (C // XB)) * XB
    wi = tl.arange(0, WB)[:, None]
    h = row % H + wi * 0
    ci = co + tl.arange(0, XB)[None, :]
    base = row * W * C + ci
    wm = wi < W
    acc = tl.zeros([WB, XB], tl.float32)
    for dw in tl.static_range(3):
        ww = wi + dw - 1
        m = (ww >= 0) & (ww < W)
        col = tl.zeros([WB, XB], tl.float32)
        for dh in tl.static_range(3):
            hh = h + dh - 1
            ok = (hh >= 0) & (hh < H)
            col += tl.load(x + base + (dh - 1) * W * C + ww * C, m & ok, other=0.0).to(tl.float32)
        acc += col
    o = tl.maximum(acc.to(tl.bfloat16).to(tl.float32) / 9.0, 0.0)
    tl.store(out + base + wi * C, o.to(tl.bfloat16), wm)


def pool_variants(st, N, C, H, W):
    x = st["x"]
    out = torch.empty_like(x)
    total = N * C * H * W
    NY = N * H * W
    vs = {}
    for xb, nw in [(1024, 4), (512, 4), (2048, 8), (1024, 8)]:
        vs[f"flat {xb} w{nw}"] = lambda xb=xb, nw=nw: pool_flat[(triton.cdiv(total, xb),)](
            x, out, N, C, H, W, xb, num_warps=nw
        )
    for yb, xb, nw in [(64, 64, 4), (32, 64, 4), (128, 64, 8), (16, 64, 4), (32, 64, 2), (64, 32, 4)]:
        xb = min(xb, C)
        if C % xb:
            continue
        vs[f"2d {yb}x{xb} w{nw}"] = lambda yb=yb, xb=xb, nw=nw: pool_2d[(triton.cdiv(NY, yb) * (C // xb),)](
            x, out, C, H, W, yb, xb, NY, num_warps=nw
        )
    for xb, nw in [(64, 4), (32, 4), (64, 8)]:
        xb = min(xb, C)
        if C % xb:
            continue
        wb = triton.next_power_of_2(W)
        vs[f"rows {wb}x{xb} w{nw}"] = lambda xb=xb, nw=nw, wb=wb: pool_rows[(N * H * (C // xb),)](
            x, out, C, H, W, wb, xb, num_warps=nw
        )
    return vs, lambda: {"out": out}


VARIANTS = sized(
    {
        "apbt": apbt_variants,
        "tsum": tsum_variants,
        "three_layouts_mean": tlm_variants,
        "layernorm_t": ln_variants,
        "softmax_bias_t": sm_variants,
        "avgpool_cl": pool_variants,
    }
)
