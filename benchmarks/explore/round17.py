# ruff: noqa: B023, SIM115
"""Round 17 of benchmarks/explore_gpu.py: the split partial kernel's tile (XBLOCK x R0_BLOCK, warps) relaunched from fuseopt's own source, chunks fixed: tsum and three_layouts_mean."""

import json
import re

from benchmarks.explore.harness import DRY, sized
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

PARTIAL = r"\[\((\d+), (\d+)\)\]\(((?:[^)]|\n)*?)XBLOCK=(\d+), R0_BLOCK=(\d+), num_warps=\d+"


def _variants(name, st, sz, tiles):
    doc, _ = WORKLOADS[name](**sz)
    stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
    # tiny sizes (DRY) split only when told to
    opts = (
        CodegenOptions(persistent_rnumel=0, split_programs=1 << 20, max_r0_block=4, split_min_r_blocks=1)
        if DRY
        else CodegenOptions()
    )
    src = emit_module(stage.graph, stage.plan, options=opts)
    m = re.search(PARTIAL, src)
    assert m is not None, "no split partial launch"
    xnumel = int(re.search(r"(\d+), \d+, $", m.group(3)).group(1))
    chunk = int(re.search(r"range\(rsplit \* (\d+),", src).group(1))
    vs, last = {}, {}
    for xb, rb, nw in tiles:
        xb, rb = (min(xb, xnumel), min(rb, chunk)) if DRY else (xb, rb)
        if chunk % rb or xnumel % xb:
            continue
        new = re.sub(
            PARTIAL, rf"[({xnumel // xb}, \2)](\3XBLOCK={xb}, R0_BLOCK={rb}, num_warps={nw}", src, count=1
        )
        mod = load_module(new)
        vs[f"partial {xb}x{rb} w{nw}"] = lambda mod=mod: last.update(mod.call(st))
    return vs, lambda: last


TILES = [(32, 64, 4), (32, 128, 8), (32, 128, 4), (32, 256, 8), (64, 64, 8), (16, 128, 4), (64, 128, 8)]

VARIANTS = sized(
    {
        "tsum": lambda st, R, C: _variants("tsum", st, {"rows": R, "cols": C}, TILES),
        "three_layouts_mean": lambda st, R, C, P: _variants(
            "three_layouts_mean", st, {"rows": R, "cols": C, "pad": P - C}, TILES
        ),
    }
)
