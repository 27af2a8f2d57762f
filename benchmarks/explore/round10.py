# ruff: noqa: B023, SIM115
"""Round 10 of benchmarks/explore_gpu.py: L2 prefetch-size hints (inline PTX loads) and the bare transposed read (DIAG) for the transposed persistent reductions; fuseopt's looped reduction relaunched with wide tiles."""

import json
import re

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import DRY, sized
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

# MODE: 0 tl.load; 1 ld.global.L2::256B; 2 ld.global.L2::128B; 3 ld.global.nc.L1::no_allocate.L2::256B
MODES = (0,) if DRY else (0, 1, 2, 3)


@triton.jit
def _ld(ptr, MODE: tl.constexpr):
    if MODE == 1:
        return tl.inline_asm_elementwise(
            "ld.global.L2::256B.b32 $0, [$1];",
            "=r,l",
            [ptr.to(tl.int64)],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )
    elif MODE == 2:
        return tl.inline_asm_elementwise(
            "ld.global.L2::128B.b32 $0, [$1];",
            "=r,l",
            [ptr.to(tl.int64)],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )
    elif MODE == 3:
        return tl.inline_asm_elementwise(
            "ld.global.nc.L1::no_allocate.L2::256B.b32 $0, [$1];",
            "=r,l",
            [ptr.to(tl.int64)],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )
    else:
        return tl.load(ptr)


@triton.jit
def sm10_k(x, bias, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, MODE: tl.constexpr):
    # tile [C, XB]: the input's storage order (XB contiguous), reduced along axis 0
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[None, :]
    ri = tl.arange(0, C)[:, None]
    v = _ld(x + (xi + R * ri), MODE) + tl.load(bias + ri)
    m = tl.max(v, 0)[None, :]
    e = tl.exp(v - m)
    s = tl.sum(e, 0)[None, :]
    tl.store(out + (C * xi + ri), e / s)


@triton.jit
def ln10_k(x, w, b, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, MODE: tl.constexpr):
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[None, :]
    ri = tl.arange(0, C)[:, None]
    v = _ld(x + (xi + R * ri), MODE)
    mean = tl.sum(v / C, 0)[None, :]
    d = v - mean
    var = tl.sum(d * d, 0)[None, :] / C
    o = d * tl.rsqrt(var + 1e-5) * tl.load(w + ri) + tl.load(b + ri)
    tl.store(out + (C * xi + ri), o)


@triton.jit
def tread_k(x, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, MODE: tl.constexpr):
    # DIAG: the transposed read alone (each program sums XB columns of the (C, R) storage)
    xo = tl.program_id(0) * XB
    xi = xo + tl.arange(0, XB)[None, :]
    ri = tl.arange(0, C)[:, None]
    v = _ld(x + (xi + R * ri), MODE)
    tl.store(out + xo + tl.arange(0, XB), tl.sum(v, 0))


def _hand(kernel, args, R, C, out, name):
    vs = {}
    for mode in MODES:
        for xb, nw in [(8, 8), (16, 8), (8, 4), (32, 8)]:
            xb = min(xb, R)
            vs[f"{name} {xb}x{C} w{nw} mode{mode}"] = lambda xb=xb, nw=nw, mode=mode: kernel[(R // xb,)](
                *args, out, R, C, xb, mode, num_warps=nw
            )
    return vs


def _diag_reads(x, R, C):
    part = torch.empty(R, device=x.device)
    vs = {}
    for mode in MODES:
        for xb, nw in [(8, 8), (16, 8), (32, 8), (64, 8)]:
            xb = min(xb, R)
            vs[f"DIAG read {xb}x{C} w{nw} mode{mode}"] = lambda xb=xb, nw=nw, mode=mode: tread_k[(R // xb,)](
                x, part, R, C, xb, mode, num_warps=nw
            )
    return vs


def _looped(name, st, sz, last):
    """fuseopt's module with looped reductions (persistent_rnumel=64), relaunched with other tiles."""
    doc, _ = WORKLOADS[name](**sz)
    stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
    src = emit_module(stage.graph, stage.plan, options=CodegenOptions(persistent_rnumel=8 if DRY else 64))
    launch = r"\[\((\d+),\)\]\(((?:[^)]|\n)*?)XBLOCK=\d+, R0_BLOCK=\d+, num_warps=\d+"
    if re.search(launch, src) is None:
        print(f"{name}: no looped launch found", flush=True)
        return {}
    xnumel = sz["rows"]
    vs = {}
    for xb, rb, nw in [
        (64, 16, 2),
        (64, 16, 4),
        (64, 32, 4),
        (128, 16, 4),
        (128, 8, 4),
        (128, 32, 8),
        (256, 8, 8),
    ]:
        xb = min(xb, xnumel)
        new = re.sub(
            launch, rf"[({xnumel // xb},)](\2XBLOCK={xb}, R0_BLOCK={rb}, num_warps={nw}", src, count=1
        )
        mod = load_module(new)
        vs[f"looped {xb}x{rb} w{nw}"] = lambda mod=mod: last.update(mod.call(st))
    return vs


def _variants(name, kernel, args, st, R, C, diag):
    out = torch.empty(R * C, device=st["x"].device)
    last = {}
    vs = {
        label: (lambda fn=fn: (fn(), last.update(out=out)))
        for label, fn in _hand(kernel, args, R, C, out, "persist").items()
    }
    if diag:
        vs.update(_diag_reads(st["x"], R, C))
    vs.update(_looped(name, st, {"rows": R, "cols": C}, last))
    return vs, lambda: last


def sm10_variants(st, R, C):
    return _variants("softmax_bias_t", sm10_k, (st["x"], st["bias"]), st, R, C, diag=True)


def ln10_variants(st, R, C):
    return _variants("layernorm_t", ln10_k, (st["x"], st["w"], st["b"]), st, R, C, diag=False)


VARIANTS = sized({"softmax_bias_t": sm10_variants, "layernorm_t": ln10_variants})
