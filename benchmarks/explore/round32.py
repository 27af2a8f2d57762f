# ruff: noqa: B023
"""Round 32 of benchmarks/explore_gpu.py: `evict_last` loads on the kernels that write a point's
value (the hint Inductor gives loads that are broadcast or not coalesced, and fuseopt gives a
transposed 2D tile's loads). The transposed persistent reductions read each 128-byte line in two
halves, one a program of a cluster pair; kept lines might serve the second half from the L2. Each
captured module as emitted against every load marked evict_last (round 29's evict_first edit
with the other hint), checked first, timed twice alternating (DIAG rows: the captured graphs)."""

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.explore.round29 import LOAD
from benchmarks.programs import captured
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module


def _workload(name):
    def build(st, sz):
        g, _ = captured(name, small=DRY)
        stage = optimize(g)
        src = emit_module(stage.graph, stage.plan)
        src = src.replace("\nCLUSTERS = None\n", "\nCLUSTERS = True\n")
        new, n = LOAD.subn(lambda m: f'tl.load({m.group(1)}, eviction_policy="evict_last")', src)
        assert n >= 1
        compare_with_reference(stage.graph, stage.plan, source=new)
        dev = next(iter(st.values())).device
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
        mods = {"as emitted": load_module(src), "loads evict_last": load_module(new)}
        vs = {}
        for rep in (1, 2):
            for label, mod in mods.items():
                vs[f"DIAG {label} ({rep})"] = _timed(mod, inputs, f"{name} {label} {rep}")
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {
    name: _workload(name) for name in ("layernorm_t", "softmax_bias_t", "three_layouts_mean", "avgpool_cl")
}
