# ruff: noqa: B023, SIM115
"""Round 7 of benchmarks/explore_gpu.py: each kernel of fuseopt's split reductions alone (DIAG); tsum in one launch, the last program of a tile finishing it."""

import json
import re

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import sized
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module


class _NoLaunch:
    """Stands in for a kernel in a generated module: launches nothing."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


def _parts(name, st, sz):
    """fuseopt's module for the workload with each of its kernels dropped in turn: the time of the
    other kernel alone (DIAG rows: outputs incomplete, not checked)."""

    doc, _ = WORKLOADS[name](**sz)
    stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
    src = emit_module(stage.graph, stage.plan)
    kernels = re.findall(r"^def (triton_\w+)\(", src, flags=re.M)
    vs = {}
    res = {}
    for keep in kernels:
        m = load_module(src)
        for k in kernels:
            if k != keep:
                setattr(m, k, _NoLaunch())
        vs[f"DIAG only {keep}"] = lambda m=m: res.update(m.call(st))
    return vs, lambda: res


@triton.jit
def tsum7_last(
    x,
    y,
    part,
    cnt,
    out,
    R: tl.constexpr,
    C: tl.constexpr,
    XB: tl.constexpr,
    RB: tl.constexpr,
    SPLIT: tl.constexpr,
):
    # split reduction in one launch: each program stores its chunk's partial sums, then counts
    # itself in; the last program of an x tile combines the chunks in a fixed order and resets
    # the counter (deterministic: the combination never depends on which program is last)
    xt = tl.program_id(0)
    xo = xt * XB
    sp = tl.program_id(1)
    CH: tl.constexpr = C // SPLIT
    xi = xo + tl.arange(0, XB)[:, None]
    rb = tl.arange(0, RB)[None, :]
    acc = tl.zeros([XB, RB], tl.float32)
    for r0 in range(sp * CH, sp * CH + CH, RB):
        ri = r0 + rb
        acc += tl.load(x + (xi * C + ri)) * 2.0 + tl.load(y + (xi + R * ri))
    tl.store(part + sp * R + xo + tl.arange(0, XB), tl.sum(acc, 1))
    n = tl.atomic_add(cnt + xt, 1, sem="acq_rel")
    if n == SPLIT - 1:
        v = tl.load(
            part + tl.arange(0, SPLIT)[:, None] * R + xo + tl.arange(0, XB)[None, :], cache_modifier=".cg"
        )
        tl.store(out + xo + tl.arange(0, XB), tl.sum(v, 0))
        tl.atomic_xchg(cnt + xt, 0)


def tsum7_variants(st, R, C):
    vs, outs = _parts("tsum", st, {"rows": R, "cols": C})
    x, y = st["x"], st["y"]
    out = torch.empty(R, device=x.device)
    for xb, rb, split, w in [(32, 128, 16, 8), (32, 128, 8, 8), (64, 64, 16, 8)]:
        xb, rb = min(xb, R), min(rb, C // split)
        if C % (split * rb) or R % xb:
            continue
        part = torch.empty(split * R, device=x.device)
        cnt = torch.zeros(R // xb, dtype=torch.int32, device=x.device)
        vs[f"last-finishes split{split} {xb}x{rb} w{w}"] = (
            lambda xb=xb, rb=rb, split=split, w=w, part=part, cnt=cnt: tsum7_last[(R // xb, split)](
                x, y, part, cnt, out, R, C, xb, rb, split, num_warps=w
            )
        )
    return vs, lambda: {"out": out}


def tlm7_variants(st, R, C, P):
    return _parts("three_layouts_mean", st, {"rows": R, "cols": C, "pad": P - C})


VARIANTS = sized(
    {
        "tsum": tsum7_variants,
        "three_layouts_mean": tlm7_variants,
    }
)
