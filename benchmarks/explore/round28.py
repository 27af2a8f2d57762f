# ruff: noqa: B023
"""Round 28 of benchmarks/explore_gpu.py: softmax's per-point division by its row's sum as a
reciprocal a row and a multiply a point, the reciprocal correctly rounded (`tl.math.div_rn`,
once a row): x * RN(1/s) is within 2 ulp of x / s, as Triton's own `/` (div.full.f32) is, where
round 21's `1.0 / s` (itself div.full.f32) could add its error to the product's. Against the
module as emitted and against `1.0 / s`, on the captured graph, each edit checked against the
reference interpreter first; timed three times, alternating (DIAG rows: the captured graph)."""

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

DIV = re.compile(r"(tmp\d+) = (tmp\d+) / (tmp\d+)\n")
EDITS = {
    "row reciprocal div_rn": r"\1 = \2 * tl.math.div_rn(1.0, \3)\n",
    "row reciprocal 1.0 / s": r"\1 = \2 * (1.0 / \3)\n",
}


def _softmax(st, sz):
    g, _ = captured("softmax_bias_t", small=DRY)
    stage = optimize(g)
    src = emit_module(stage.graph, stage.plan)
    src = src.replace("\nCLUSTERS = None\n", "\nCLUSTERS = True\n")
    assert len(DIV.findall(src)) == 1, DIV.findall(src)
    mods = {"as emitted": load_module(src)}
    for label, repl in EDITS.items():
        new = DIV.sub(repl, src)
        compare_with_reference(stage.graph, stage.plan, source=new)
        mods[label] = load_module(new)
    dev = next(iter(st.values())).device
    inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
    vs = {}
    for rep in (1, 2, 3):
        for label, mod in mods.items():
            vs[f"DIAG {label} ({rep})"] = _timed(mod, inputs, f"softmax {label} {rep}")
    if not DRY:
        torch.cuda.empty_cache()
    return vs, lambda: {}


VARIANTS = {"softmax_bias_t": _softmax}
