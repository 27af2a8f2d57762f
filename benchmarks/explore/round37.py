"""Round 37 of benchmarks/explore_gpu.py: two edits of fuseopt's register window (avgpool_cl, the
captured graph and the hand-written one) against it as emitted: its row and column bounds checks
on [XBLOCK] vectors instead of [1] tensors (`vector masks`, as round 34's hand-written kernel has
them), and every store at the kernel's end (`stores last`, with addresses as emitted now). Each
module is checked against the reference interpreter first; all are timed twice, alternating.

Result (`-round37.json`, copy 4252 GB/s): as emitted 70.5-71.7% (captured) and 73.0% twice
(hand-written); vector masks 70.6 / 71.5% and 70.5-70.6%; stores last 70.4% twice and 72.1 /
73.1%. Neither is adopted."""

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.explore.round36 import pool_stages, stores_last
from fuseopt.codegen import emit_module
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module


def vector_masks(src: str) -> str:
    """The band's first row and the slice's start as [XBLOCK] vectors: every digit and bounds
    check computed from them is a vector too."""
    for name in ("yoffset", "xstart"):
        head = f"    {name} = "
        i = src.find(head)
        if i < 0:
            continue
        j = src.index("\n", i)
        line = src[i:j]
        src = src[:i] + line.replace("tl.zeros([1], ", "tl.zeros([XBLOCK], ") + src[j:]
    return src


EDITS = {"vector masks": vector_masks, "stores last": stores_last}


def _avgpool(st, sz):
    mods = {}
    for gname, stage, inputs in pool_stages(st):
        src = emit_module(stage.graph, stage.plan)
        mods[f"{gname}, as emitted"] = (load_module(src), inputs)
        for label, edit in EDITS.items():
            new = edit(src)
            compare_with_reference(stage.graph, stage.plan, source=new)
            mods[f"{gname}, {label}"] = (load_module(new), inputs)
    return alternating(mods, 2), lambda: {}


def alternating(mods, reps, others=None):
    """DIAG rows timing each module (and each of `others`' calls) `reps` times, alternating."""
    vs = {}
    for rep in range(1, reps + 1):
        for label, (mod, inputs) in mods.items():
            vs[f"DIAG {label} ({rep})"] = _timed(mod, inputs, f"{label} {rep}")
        for label, call in (others or {}).items():
            vs[f"DIAG {label} ({rep})"] = call
    if not DRY:
        torch.cuda.empty_cache()
    return vs


VARIANTS = {"avgpool_cl": _avgpool}
