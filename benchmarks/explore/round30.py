# ruff: noqa: B023
"""Round 30 of benchmarks/explore_gpu.py: where `evict_first` loads pay. Round 29: marking every
load evict_first sped up tsum (a reduction that only reads: 81% -> 83.6% of copy) and slowed
every kernel that also writes per-point outputs (apbt, three_layouts_mean, layernorm_t,
softmax_bias_t, avgpool_cl). Here other kernels that store nothing but reduction results, as
fuseopt emits them, with and without the hint on every load: a persistent row sum, a
transposed persistent column sum, a split column mean, tsum unsplit (looped), a row max of
bfloat16, and a row sum with a bias broadcast along x (its bias load keeps no hint). Each edit is
checked against the reference interpreter first; timed twice alternating (DIAG rows: graphs of
this round, not the workloads). Run before fuseopt emitted the hint itself: since then "as
emitted" carries it wherever the kernel only reads."""

import re

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.interp import make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module

LOAD = re.compile(r"tl\.load\(((?:[^()]|\([^()]*\))*?)(, eviction_policy=\"evict_(?:last|first)\")?\)")

GRAPH = """
format: fuseopt-graph/1
name: {name}
buffers:
  x:   {{shape: [{n}], dtype: {dt}, role: input}}
  b:   {{shape: [{bn}], dtype: float32, role: input}}
  out: {{shape: [{o}], dtype: float32, role: output}}
nodes:
  - {{name: s, loops: [[i, {o}]], reduce: [[r, {rn}]], store: "out[i]", value: "{value}"}}
"""


def _graphs():
    big = 8 if DRY else 1
    R, C = 32768 // big // 64 if DRY else 32768, 1024 // (16 if DRY else 1)
    T = 4096 // (64 if DRY else 1)
    return {
        "row sum 32768x1024": dict(n=R * C, o=R, rn=C, bn=1, dt="float32", value=f"sum(x[{C}*i + r])"),
        "column sum 1024x32768 (transposed)": dict(
            n=R * C, o=R, rn=C, bn=1, dt="float32", value=f"sum(x[i + {R}*r])"
        ),
        "column mean 4096x8192 -> 8192": dict(
            n=T * 2 * T, o=2 * T, rn=T, bn=1, dt="float32", value=f"sum(x[i + {2 * T}*r] / {T}.0)"
        ),
        "row max bf16 32768x1024": dict(n=R * C, o=R, rn=C, bn=1, dt="bfloat16", value=f"max(x[{C}*i + r])"),
        "row sum + bias[r] 32768x1024": dict(
            n=R * C, o=R, rn=C, bn=C, dt="float32", value=f"sum(x[{C}*i + r] * b[r])"
        ),
    }


def _variants(st, sz):
    vs = {}
    dev = next(iter(st.values())).device
    cases = [
        (label, GRAPH.format(name=f"g{k}", **kw), None) for k, (label, kw) in enumerate(_graphs().items())
    ]
    T = 4096 // (64 if DRY else 1)
    cases.append(
        (
            "tsum unsplit (looped)",
            GRAPH.format(
                name="tsum_unsplit",
                n=T * 2 * T,
                o=T,
                rn=2 * T,
                bn=1,
                dt="float32",
                value=f"sum(x[{2 * T}*i + r])",
            ),
            CodegenOptions(split_programs=0),
        )
    )
    for label, text, opts in cases:
        g = load_text(text, "round30.yaml")
        stage = optimize(g)
        src = emit_module(stage.graph, stage.plan, options=opts)
        src = src.replace("\nCLUSTERS = None\n", "\nCLUSTERS = True\n")
        new = LOAD.sub(
            lambda m: (
                m.group(0)
                if "b_ptr" in m.group(1)
                else f'tl.load({m.group(1)}, eviction_policy="evict_first")'
            ),
            src,
        )
        compare_with_reference(stage.graph, stage.plan, source=new)
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
        mods = {"as emitted": load_module(src), "evict_first": load_module(new)}
        for rep in (1, 2):
            for how, mod in mods.items():
                vs[f"DIAG {label}: {how} ({rep})"] = _timed(mod, inputs, f"{label} {how} {rep}")
    if not DRY:
        torch.cuda.empty_cache()
    return vs, lambda: {}


VARIANTS = {"tsum": _variants}
