# ruff: noqa: B023, SIM115
"""Round 13 of benchmarks/explore_gpu.py: registers and spills of fuseopt's persistent transposed reductions (softmax with the one-reduction NaN-propagating max, layernorm) at each row count and warp count, printed next to their times."""

from benchmarks.explore.harness import DRY, relaunched, sized
from benchmarks.explore.round12 import _source
from fuseopt.runtime.module import load_module

CONFIGS = [(8, 4), (16, 4), (16, 8), (32, 8), (32, 16)]


def _compiled(mod):
    """(n_regs, n_spills) of every compiled kernel of a loaded module."""
    out = []
    for obj in vars(mod).values():
        caches = getattr(obj, "device_caches", None)
        if not caches:
            continue
        for entry in caches.values():
            for part in entry if isinstance(entry, tuple) else (entry,):
                if isinstance(part, dict):
                    for k in part.values():
                        if hasattr(k, "n_spills"):
                            out.append((getattr(k, "n_regs", None), k.n_spills))
    return out


def _variants(name, st, R, C, max_mode):
    base = _source(name, R, C, max_mode)
    vs, last = {}, {}
    for xb, nw in CONFIGS:
        xb = min(xb, R)
        new = relaunched(base, R, xb, nw)
        mod = load_module(new)

        def call(mod=mod, label=f"{name} {xb}x{C} w{nw}"):
            last.update(mod.call(st))
            if not DRY and label not in seen:
                seen.add(label)
                print(f"REGS {label}: (n_regs, n_spills) {_compiled(mod)}", flush=True)

        vs[f"fuseopt {xb}x{C} w{nw}"] = call
    return vs, lambda: last


seen: set = set()

VARIANTS = sized(
    {
        "softmax_bias_t": lambda st, R, C: _variants("softmax_bias_t", st, R, C, "propagate"),
        "layernorm_t": lambda st, R, C: _variants("layernorm_t", st, R, C, "propagate"),
    }
)
