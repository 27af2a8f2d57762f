# ruff: noqa: B023
"""Round 31 of benchmarks/explore_gpu.py: store hints on the kernels that write a point's value.
Round 29: evict_first loads pay only in kernels that only read. Here the stores of each captured
workload's module (as emitted, loads unchanged) marked `eviction_policy="evict_first"` or
`cache_modifier=".cs"` (streaming), checked against the reference interpreter first, timed twice
alternating with the module as emitted (DIAG rows: the captured graphs)."""

import re

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.programs import captured
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module

STORE = re.compile(r"tl\.store\(((?:[^()]|\([^()]*\))*?)\)")
HINTS = {
    "stores evict_first": ', eviction_policy="evict_first"',
    "stores .cs": ', cache_modifier=".cs"',
}


def _workload(name):
    def build(st, sz):
        g, _ = captured(name, small=DRY)
        stage = optimize(g)
        src = emit_module(stage.graph, stage.plan)
        src = src.replace("\nCLUSTERS = None\n", "\nCLUSTERS = True\n")
        mods = {"as emitted": load_module(src)}
        for label, hint in HINTS.items():
            new, n = STORE.subn(lambda m: f"tl.store({m.group(1)}{hint})", src)
            assert n >= 1
            compare_with_reference(stage.graph, stage.plan, source=new)
            mods[label] = load_module(new)
        dev = next(iter(st.values())).device
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
        vs = {}
        for rep in (1, 2):
            for label, mod in mods.items():
                vs[f"DIAG {label} ({rep})"] = _timed(mod, inputs, f"{name} {label} {rep}")
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {
    name: _workload(name)
    for name in ("apbt", "avgpool_cl", "layernorm_t", "softmax_bias_t", "three_layouts_mean")
}
