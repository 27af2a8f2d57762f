"""Round 44 of benchmarks/explore_gpu.py: every target under the other timing protocol. do_bench
clears the L2 by writing before each timed call, which leaves dirty lines that the call writes
back (rounds 27, 41, 42). Here fuseopt's call for each workload, and the 1 GiB copy that defines
100%, are timed the same three ways as in round 27: do_bench; CUDA events after the same clear by
writing; CUDA events after a clear by reading (no dirty lines). The copy's rows are listed under
the first workload run, with the copy's own bytes (2 GiB moved), so each way's share of copy
is the workload's row over the copy's row of the same way. Rows are DIAG.

Result (`-round44.json`, `-round44-run2.json`, copy 4247 / 4248 GB/s; each workload's share of the
copy timed the same way, run 1 / run 2). The 1 GiB copy itself runs 0.5-0.7% faster after a
clear by reading. do_bench: apbt 96.3 / 96.2, tsum 85.3 / 85.1, avgpool_cl 72.9 / 74.6,
layernorm_t 80.7 / 79.9, softmax_bias_t 78.3 / 77.8, three_layouts_mean 91.7 / 91.6%. Events
after a clear by reading: apbt 100.5 / 100.7, tsum 92.7 / 92.4, avgpool_cl 80.4 / 79.9,
layernorm_t 83.2 / 83.4, softmax_bias_t 81.5 / 81.4, three_layouts_mean 94.8 / 94.9%. Under that
protocol every bandwidth target holds except avgpool_cl's, which sits on its 80% line. (With no
clear at all tsum drops to 61-62% and avgpool_cl runs at 77-78%.)"""

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round27 import _protocol, _timed_three_ways
from benchmarks.workloads import WORKLOADS

_COPY_TIMED = []


def _copy_rows(name):
    if _COPY_TIMED:
        return
    _COPY_TIMED.append(name)
    n = 1 << (10 if DRY else 28)
    src = torch.empty(n, dtype=torch.float32, device="cpu" if DRY else "cuda")
    dst = torch.empty_like(src)
    _timed_three_ways(name, "copy 1 GiB (the 100% reference)", lambda: dst.copy_(src), 2 * n * 4)


def _both(name):
    def build(st, sz):
        _copy_rows(name)
        _protocol(name, st, sz)
        return {}, lambda: {}

    return build


VARIANTS = {name: _both(name) for name in WORKLOADS}
