# ruff: noqa: B023
"""Round 40 of benchmarks/explore_gpu.py: eviction hints on loads and stores together. Round 27:
do_bench's clear by writing leaves the L2 full of dirty lines, which the timed call writes back as
its own lines displace them (avgpool_cl 73.9% of copy under do_bench, 80.8% after a clear by
reading). Rounds 29-31 hinted loads or stores alone, on the sliding window and older kernels.
Here both at once, on the current kernels, so that every line a call brings into the L2 is
replaced before the dirty lines it found there: every load evict_first and every store
evict_first or `.cs`; and loads `.cg` (cached in the L2 only; ptxas takes no eviction hint
with it). Each
captured workload's module as emitted against the edited modules, each checked against the
reference interpreter first, timed three times, alternating (DIAG rows).

Result (`-round40.json`, copy 4251 GB/s; as emitted / loads and stores evict_first / loads
evict_first and stores .cs / loads .cg): avgpool_cl 73.6-74.9 / 63.2-64.4 / 63.2-64.2 / 73.3-75.0%;
softmax_bias_t 77.1-77.8 / 64.3-64.7 / 64.4-64.7 / 75.3-75.7%; layernorm_t 81.2-82.0 / 74.2-74.7 /
74.2-74.6 / 82.4-83.1%; apbt 96.3-96.8 / 91.1-91.6 / 91.6 / 94.9-95.0%. Hinting every line to
leave first costs 5-13 points: the lines a program shares with its neighbours (halo rows, the
other half of a 128-byte line) leave before they are used. `.cg` moves layernorm_t up about 1.2
points and softmax_bias_t, the same kind of kernel, down 2: not adopted."""

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round29 import LOAD, edited, hinted
from benchmarks.explore.round31 import stores_hinted


def _cg(src):
    new, n = LOAD.subn(lambda m: f'tl.load({m.group(1)}, cache_modifier=".cg")', src)
    assert n >= 1
    return new


EDITS = {
    "loads+stores evict_first": lambda s: stores_hinted(', eviction_policy="evict_first"')(hinted(s)),
    "loads evict_first, stores .cs": lambda s: stores_hinted(', cache_modifier=".cs"')(hinted(s)),
    "loads .cg": _cg,
}


def _workload(name):
    def build(st, sz):
        vs, _ = edited(name, st, EDITS, reps=3)
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {name: _workload(name) for name in ("apbt", "avgpool_cl", "layernorm_t", "softmax_bias_t")}
