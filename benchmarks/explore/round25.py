# ruff: noqa: B023
"""Round 25 of benchmarks/explore_gpu.py: persistent grids. fuseopt launches one program per tile
(apbt: 4096 programs, several waves with a partial last one); here the same kernels loop over
their tiles, program p taking tiles p, p + P, p + 2P, ... for P = a few programs a
multiprocessor (the tiles' order across the first wave unchanged), so no wave is left partly
empty and no program is launched after the first. Each variant is fuseopt's module for the
hand-written graph with one kernel rewritten, checked against torch before it is timed.
Cluster launches (layernorm_t, softmax_bias_t) count P in clusters of two programs."""

import json
import re

import torch

from benchmarks.explore.harness import DRY, NSM
from benchmarks.explore.round19 import _timed
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

# workload -> (kernel name prefix, tiles along program_id(0), tiles along program_id(1), programs
# a multiprocessor to try)
KERNELS = {
    "apbt": ("triton_poi_", "tl.cdiv(xnumel, XBLOCK)", "tl.cdiv(ynumel, YBLOCK)", (2, 4, 8)),
    "tsum": ("triton_red_", "tl.cdiv(xnumel, XBLOCK)", "{chunks}", (2, 4)),
    "three_layouts_mean": ("triton_red_", "tl.cdiv(xnumel, XBLOCK)", "{chunks}", (2, 4)),
    "layernorm_t": ("triton_per_", "tl.cdiv(xnumel, XBLOCK)", "1", (0.5, 1)),
    "softmax_bias_t": ("triton_per_", "tl.cdiv(xnumel, XBLOCK)", "1", (0.5, 1)),
    "avgpool_cl": ("triton_poi_", "tl.cdiv(xnumel, XBLOCK)", "tl.cdiv(ynumel, YBLOCK)", (4, 8, 16)),
}


def persistent(src: str, prefix: str, gx: str, gy: str, nprog: int) -> str:
    """`src` with its kernel named `prefix...` looping over its gx x gy tiles, launched on nprog."""
    m = re.search(rf"\ndef ({prefix}\w+)\((.*?)\):\n", src, re.S)
    assert m, prefix
    name, start = m.group(1), m.end()
    if "ynumel" in gy and "ynumel" not in m.group(2):  # a 1D tile (the tiny sizes of DRY)
        gy = "1"
    lines = src[start:].split("\n")
    n = next(i for i, ln in enumerate(lines) if ln and not ln.startswith("    "))
    while n and not lines[n - 1]:
        n -= 1
    body = [
        ("    " + ln).replace("tl.program_id(0)", f"(_t % {gx})").replace("tl.program_id(1)", f"(_t // {gx})")
        if ln
        else ln
        for ln in lines[:n]
    ]
    loop = f"    for _t in range(tl.program_id(0), {gx} * {gy}, tl.num_programs(0)):"
    out = src[:start] + "\n".join([loop, *body, *lines[n:]])
    out, k = re.subn(rf"({name}\[)\((?:\d+, )*\d+,?\)\]", rf"\g<1>({nprog},)]", out)
    assert k >= 1, name
    return out


def _workload(name):
    def build(st, sz):
        doc, _ = WORKLOADS[name](**sz)
        stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
        prefix, gx, gy, per_sm = KERNELS[name]
        # tiny sizes (DRY) split only when told to
        opts = (
            CodegenOptions(persistent_rnumel=0, split_programs=1 << 20, max_r0_block=4, split_min_r_blocks=1)
            if DRY and prefix == "triton_red_"
            else CodegenOptions()
        )
        src = emit_module(stage.graph, stage.plan, options=opts)
        src = src.replace("\nCLUSTERS = None\n", "\nCLUSTERS = True\n")
        chunks = re.search(r"\[\(\d+, (\d+)\)\]", src)
        gy = gy.format(chunks=chunks.group(1) if chunks else 1)
        vs, last = {}, {}
        vs["as emitted"] = _timed(load_module(src), st, f"{name} as emitted", last)
        for k in per_sm:
            nprog = max(1, int(NSM * k))
            label = f"persistent {nprog} programs ({k} a multiprocessor)"
            vs[label] = _timed(
                load_module(persistent(src, prefix, gx, gy, nprog)), st, f"{name} {label}", last
            )
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: last

    return build


VARIANTS = {name: _workload(name) for name in KERNELS}
