# ruff: noqa: B023
"""Round 20 of benchmarks/explore_gpu.py: the captured graphs (benchmarks/programs.py, what
run_gpu.py times) of layernorm_t and softmax_bias_t next to the hand-written ones, each at its
cluster launch (CLUSTERS = True) and at its single-program fallback (False): round 19 measured
the hand-written layernorm_t at 82.8% of copy with the cluster, run_gpu.py the captured one at
80.8-80.9%. Captured rows are DIAG (run_gpu.py checks them against the reference); the
hand-written ones are checked against torch."""

import json

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.programs import captured
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module


def _modules(g, mul=False):
    stage = optimize(g)
    src = emit_module(stage.graph, stage.plan)
    assert src.count("\nCLUSTERS = None\n") == 1
    if mul:  # the per-point division by 1024 as a multiplication by its exact reciprocal
        src = src.replace("tmp0 / 1024.0", "tmp0 * 0.0009765625")
    for on in (True, False):
        yield on, load_module(src.replace("\nCLUSTERS = None\n", f"\nCLUSTERS = {on}\n"))


def _workload(name):
    def build(st, sz):
        vs, last = {}, {}
        doc, _ = WORKLOADS[name](**sz)
        for on, mod in _modules(load_text(json.dumps(doc), f"{name}.json")):
            label = f"hand-written clusters={on}"
            vs[label] = _timed(mod, st, f"{name} {label}", last)
        g, _ = captured(name, small=DRY)
        dev = next(iter(st.values())).device
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
        for mul in (False, True):
            for on, mod in _modules(g, mul):
                label = f"DIAG captured clusters={on}" + (" x*(1/1024)" if mul else "")
                vs[label] = _timed(mod, inputs, f"{name} {label}")
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: last

    return build


VARIANTS = {name: _workload(name) for name in ("layernorm_t", "softmax_bias_t")}
