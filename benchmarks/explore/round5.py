# ruff: noqa: B023, SIM115
"""Round 5 of benchmarks/explore_gpu.py: fuseopt's own sliding-window kernel relaunched with other blocks."""

import json
import re

from benchmarks.explore.harness import sized
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module


def _relaunched(name, st, sz, configs):
    """fuseopt's own module for the workload with its one kernel's launch parameters replaced:
    (YBLOCK or None, XBLOCK, num_warps) per variant."""

    doc, _ = WORKLOADS[name](**sz)
    stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
    src = emit_module(stage.graph, stage.plan)
    res = {}
    vs = {}
    for yb, xb, nw in configs:

        def sub(m, yb=yb, xb=xb, nw=nw):
            text = m.group(0)
            if yb is not None:
                text = re.sub(r"YBLOCK=\d+", f"YBLOCK={yb}", text)
            text = re.sub(r"XBLOCK=\d+", f"XBLOCK={xb}", text)
            return re.sub(r"num_warps=\d+", f"num_warps={nw}", text)

        new = re.sub(r"triton_\w+\[\([^\]]*\]\([^\n]*\n(?:[^\n]*\n)*?\s*\)", sub, src)
        grid_y = sz.get("n", 1) * sz.get("h", 1) // (yb or 1)
        grid_x = -(-(sz.get("w", 1) * sz.get("c", 1)) // xb)
        new = re.sub(r"\[\(\d+, \d+\)\]", f"[({grid_x}, {grid_y})]", new)
        m = load_module(new)
        vs[f"fuseopt window y{yb} x{xb} w{nw}"] = lambda m=m: res.update(m.call(st))
    return vs, lambda: res


def pool5_variants(st, N, C, H, W):
    sz = {"n": N, "c": C, "h": H, "w": W}
    cfgs = [
        (7, 1024, 4),
        (7, 1024, 8),
        (5, 1024, 4),
        (5, 1024, 8),
        (7, 512, 4),
        (7, 2048, 8),
        (7, 512, 2),
        (35, 1024, 4),
        (5, 512, 2),
        (7, 2048, 4),
    ]
    cfgs = [(min(y, H), min(x, 1 << (W * C - 1).bit_length()), w) for y, x, w in cfgs if H % min(y, H) == 0]
    return _relaunched("avgpool_cl", st, sz, cfgs)


VARIANTS = sized(
    {
        "avgpool_cl": pool5_variants,
    }
)
