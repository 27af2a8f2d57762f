# ruff: noqa: B023
"""Round 26 of benchmarks/explore_gpu.py: relu as one NaN-propagating maximum. The captured
avgpool_cl's window spends about 20 of its loop's 180 instructions (8 points a thread) on
`_relu(x) = tl.where(x < 0, 0, x)`: ptxas narrows it to bfloat16 pairs (HSETP2) but selects and
repacks each half (SEL, PRMT; SASS of the kernel on the H200). Against `tl.maximum(x, 0.0,
propagate_nan=ALL)` (NaN stays NaN, as torch.relu; -0.0 may come out +0.0, equal under every
comparison). The edited module is checked against the reference interpreter first; each source
is timed twice, alternating (DIAG rows: the captured graph)."""

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.programs import captured
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module

RELU = "    return tl.where(x < 0, tl.zeros_like(x), x)\n"
RELU_MAX = "    return tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)\n"


def _avgpool(st, sz):
    g, _ = captured("avgpool_cl", small=DRY)
    stage = optimize(g)
    src = emit_module(stage.graph, stage.plan)
    assert src.count(RELU) == 1
    new = src.replace(RELU, RELU_MAX)
    compare_with_reference(stage.graph, stage.plan, source=new)
    dev = next(iter(st.values())).device
    inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
    mods = {"where": load_module(src), "maximum": load_module(new)}
    vs = {}
    for rep in (1, 2):
        for label, mod in mods.items():
            vs[f"DIAG relu as {label} ({rep})"] = _timed(mod, inputs, f"avgpool relu {label} {rep}")
    if not DRY:
        torch.cuda.empty_cache()
    return vs, lambda: {}


VARIANTS = {"avgpool_cl": _avgpool}
