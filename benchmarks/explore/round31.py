# ruff: noqa: B023
"""Round 31 of benchmarks/explore_gpu.py: store hints on the kernels that write a point's value.
Round 29: evict_first loads pay only in kernels that only read. Here the stores of each captured
workload's module (as emitted, loads unchanged) marked `eviction_policy="evict_first"` or
`cache_modifier=".cs"` (streaming), checked against the reference interpreter first, timed twice
alternating with the module as emitted (DIAG rows: the captured graphs)."""

import re

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round29 import edited

STORE = re.compile(r"tl\.store\(((?:[^()]|\([^()]*\))*?)\)")
HINTS = {
    "stores evict_first": ', eviction_policy="evict_first"',
    "stores .cs": ', cache_modifier=".cs"',
}


def stores_hinted(text):
    """A source edit: `text` (a keyword argument) appended to every `tl.store` of the module."""

    def edit(src):
        new, n = STORE.subn(lambda m: f"tl.store({m.group(1)}{text})", src)
        assert n >= 1
        return new

    return edit


def _workload(name):
    def build(st, sz):
        vs, _ = edited(name, st, {label: stores_hinted(text) for label, text in HINTS.items()})
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {
    name: _workload(name)
    for name in ("apbt", "avgpool_cl", "layernorm_t", "softmax_bias_t", "three_layouts_mean")
}
