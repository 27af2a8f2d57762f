# ruff: noqa: B023, SIM115
"""Round 15 of benchmarks/explore_gpu.py: a register cap (`maxnreg`) on fuseopt's transposed persistent reductions, so that more programs share a multiprocessor (16 rows x 4 warps hold 190-198 registers a thread, two programs; 32 x 8 hold 184-226, one), against the uncapped launch."""

from benchmarks.explore.harness import DRY, relaunched, sized
from benchmarks.explore.round12 import _source
from fuseopt.runtime.module import load_module

# (rows, warps, maxnreg or None)
CONFIGS = [
    (16, 4, None),
    (16, 4, 168),
    (16, 4, 128),
    (16, 8, None),
    (16, 8, 128),
    (32, 8, None),
    (32, 8, 128),
]


def _variants(name, st, R, C):
    base = _source(name, R, C, "propagate")
    vs, last = {}, {}
    for xb, nw, cap in CONFIGS:
        xb = min(xb, R)
        extra = "" if cap is None or DRY else f", maxnreg={cap}"
        new = relaunched(base, R, xb, nw, extra)
        mod = load_module(new)
        vs[f"fuseopt {xb}x{C} w{nw} maxnreg {cap}"] = lambda mod=mod: last.update(mod.call(st))
    return vs, lambda: last


VARIANTS = sized(
    {
        "softmax_bias_t": lambda st, R, C: _variants("softmax_bias_t", st, R, C),
        "layernorm_t": lambda st, R, C: _variants("layernorm_t", st, R, C),
    }
)
