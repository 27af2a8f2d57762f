# ruff: noqa: B023
"""Round 32 of benchmarks/explore_gpu.py: `evict_last` loads on the kernels that write a point's
value (the hint Inductor gives loads that are broadcast or not coalesced, and fuseopt gives a
transposed 2D tile's loads). The transposed persistent reductions read each 128-byte line in two
halves, one a program of a cluster pair; kept lines might serve the second half from the L2. Each
captured module as emitted against every load marked evict_last (round 29's evict_first edit
with the other hint), checked first, timed twice alternating (DIAG rows: the captured graphs)."""

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round29 import LOAD, edited


def _last(src):
    new, n = LOAD.subn(lambda m: f'tl.load({m.group(1)}, eviction_policy="evict_last")', src)
    assert n >= 1
    return new


def _workload(name):
    def build(st, sz):
        vs, _ = edited(name, st, {"loads evict_last": _last})
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {
    name: _workload(name) for name in ("layernorm_t", "softmax_bias_t", "three_layouts_mean", "avgpool_cl")
}
