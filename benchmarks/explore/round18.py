# ruff: noqa: B023
"""Round 18 of benchmarks/explore_gpu.py: fuseopt's transposed persistent reductions launched as
thread-block clusters (`num_ctas`), so that a wide tile's rows are split over several programs of
one cluster (fewer registers a program, the same DRAM access pattern as the wide tile); and, for
every workload, a device-to-device copy moving the workload's own byte count (DIAG: the copy
ceiling at that size)."""

import torch

from benchmarks.explore.harness import DRY, relaunched
from benchmarks.explore.round12 import _source
from benchmarks.explore.round13 import _compiled
from fuseopt.runtime.module import load_module

# (rows, warps, num_ctas)
CONFIGS = [(16, 4, 1), (32, 8, 1), (32, 4, 2), (32, 8, 2), (64, 8, 2), (64, 16, 2), (64, 8, 4), (128, 8, 4)]
seen: set = set()


def _copy_diag(st, nbytes):
    """A torch copy of nbytes/2 float32 bytes into a second buffer: nbytes moved in all."""
    src = torch.empty(nbytes // 8, dtype=torch.float32, device=next(iter(st.values())).device)
    dst = torch.empty_like(src)
    return {f"DIAG copy of the same {nbytes / 2**20:.1f} MiB": lambda: dst.copy_(src)}


def _variants(name, st, R, C, nbytes):
    base = _source(name, R, C, "propagate")
    vs, last = {}, {}
    for xb, nw, ctas in CONFIGS:
        xb = min(xb, R)
        extra = "" if ctas == 1 or DRY else f", num_ctas={ctas}"
        mod = load_module(relaunched(base, R, xb, nw, extra))

        def call(mod=mod, label=f"{name} {xb}x{C} w{nw} ctas{ctas}"):
            last.update(mod.call(st))
            if not DRY and label not in seen:
                seen.add(label)
                print(f"REGS {label}: (n_regs, n_spills) {_compiled(mod)}", flush=True)

        vs[f"fuseopt {xb}x{C} w{nw} ctas{ctas}"] = call
    vs.update(_copy_diag(st, nbytes))
    return vs, lambda: last


def _io(name, st, sz):
    """Bytes in and out of each workload (inputs read once, outputs written once)."""
    inp = sum(t.numel() * t.element_size() for t in st.values())
    if name == "avgpool_cl":
        return 2 * inp
    rows, cols = sz["rows"], sz["cols"]
    out = {"tsum": rows * 4, "three_layouts_mean": rows * cols * 4 + cols * 4}.get(name, rows * cols * 4)
    return inp + out


def _diag_only(name):
    return lambda st, sz: (_copy_diag(st, _io(name, st, sz)), lambda: {})


def _reductions(name):
    def build(st, sz):
        return _variants(name, st, sz["rows"], sz["cols"], _io(name, st, sz))

    return build


VARIANTS = {name: _diag_only(name) for name in ("apbt", "tsum", "avgpool_cl", "three_layouts_mean")}
VARIANTS.update({name: _reductions(name) for name in ("softmax_bias_t", "layernorm_t")})
