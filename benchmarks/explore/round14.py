# ruff: noqa: B023, SIM115
"""Round 14 of benchmarks/explore_gpu.py: more transposed persistent reductions (the input stored transposed, 32768 x 1024 float32) at 8 rows x 8 warps, 16 x 4, 16 x 8 and 32 x 8: a column mean alone, an RMS norm (no per-element transcendental), and layer_norm followed by a sigmoid (one per element). Each is checked against the reference interpreter on the GPU before it is timed; rows are labelled DIAG because they are not layernorm_t's outputs."""

import re

import torch

from benchmarks.explore.harness import DRY, close, relaunched, sized
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs, run_graph
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

CONFIGS = [(8, 8), (16, 4), (16, 8), (32, 8)]


def _graphs(r, c):
    x = f"x[x0 + {r}*r0]"
    head = f"""format: fuseopt-graph/1
buffers:
  x: {{shape: [{r}, {c}], stride: [1, {r}], dtype: float32, role: input}}
  w: {{shape: [{c}], dtype: float32, role: input}}
  b: {{shape: [{c}], dtype: float32, role: input}}
  buf0: {{shape: [{r}], dtype: float32}}
  buf1: {{shape: [{r}], dtype: float32}}
"""
    colmean = f"""format: fuseopt-graph/1
buffers:
  x: {{shape: [{r}, {c}], stride: [1, {r}], dtype: float32, role: input}}
  buf0: {{shape: [{r}], dtype: float32}}
  m: {{shape: [{r}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[x0, {r}]], reduce: [[r0, {c}]], store: "buf0[x0]", value: "sum({x})"}}
  - {{name: n1, loops: [[x0, {r}]], store: "m[x0]", value: "buf0[x0] / {c}"}}
"""
    rms = (
        head.replace(f"  buf1: {{shape: [{r}], dtype: float32}}\n", "")
        + f"""  out: {{shape: [{r}, {c}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[x0, {r}]], reduce: [[r0, {c}]], store: "buf0[x0]", value: "sum({x} * {x})"}}
  - {{name: n1, loops: [[x0, {r}], [x1, {c}]], store: "out[{c}*x0 + x1]", value: "x[x0 + {r}*x1] * rsqrt(buf0[x0] / {c} + 1e-6) * w[x1]"}}
"""
    )
    ln_sig = (
        head
        + f"""  out: {{shape: [{r}, {c}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[x0, {r}]], reduce: [[r0, {c}]], store: "buf0[x0]", value: "sum({x})"}}
  - {{name: n1, loops: [[x0, {r}]], reduce: [[r0, {c}]], store: "buf1[x0]", value: "sum(({x} - buf0[x0] / {c}) * ({x} - buf0[x0] / {c}))"}}
  - {{name: n2, loops: [[x0, {r}], [x1, {c}]], store: "out[{c}*x0 + x1]", value: "sigmoid((x[x0 + {r}*x1] - buf0[x0] / {c}) * rsqrt(buf1[x0] / {c} + 1e-5) * w[x1] + b[x1])"}}
"""
    )
    return {"colmean": colmean, "rmsnorm": rms, "layernorm+sigmoid": ln_sig}


def _variants(st, R, C):
    dev = st["x"].device
    vs = {}
    for gname, text in _graphs(R, C).items():
        g = load_text(f"name: {gname.replace('+', '_')}\n" + text, f"{gname}.yaml")
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=1).items()}
        want = run_graph(g, inputs)
        stage = optimize(g)
        assert len(stage.plan.kernels) == 1
        src = emit_module(stage.graph, stage.plan)
        default = re.search(r"XBLOCK=.*num_warps=\d+", src)
        print(f"{gname}: default launch {default.group(0) if default else None}", flush=True)
        for xb, nw in CONFIGS:
            xb = min(xb, R)
            new = relaunched(src, R, xb, nw)
            mod = load_module(new)
            got = mod.call(inputs)
            for b in g.outputs:
                close(got[b.name], want[b.name])
            vs[f"DIAG {gname} {xb}x{C} w{nw}"] = lambda mod=mod, inputs=inputs: mod.call(inputs)
            del got
        if not DRY:
            torch.cuda.empty_cache()
    return vs, lambda: {}


VARIANTS = sized({"layernorm_t": _variants})
