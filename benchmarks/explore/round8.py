# ruff: noqa: B023, SIM115
"""Round 8 of benchmarks/explore_gpu.py: fuseopt's source edited: store and load hints and tiles (apbt), the finishing kernel's tile (split reductions)."""

import json
import re

from benchmarks.explore.harness import sized
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module


def _patched(name, st, sz, variants):
    """fuseopt's module for the workload with its source edited: label -> [(regex, replacement)]."""

    doc, _ = WORKLOADS[name](**sz)
    stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
    src = emit_module(stage.graph, stage.plan)
    vs = {}
    res = {}
    for label, edits in variants.items():
        new = src
        for pattern, repl in edits:
            new, n = re.subn(pattern, repl, new)
            if not n:
                print(f"{name}: {label}: the source has no match for {pattern!r}; skipped", flush=True)
                new = None
                break
        if new is None:
            continue
        m = load_module(new)
        vs[label] = lambda m=m: res.update(m.call(st))
    return vs, lambda: res


def _finisher_edits(kernel_suffix, xnumel, chunks):
    out = {}
    for xb, nw in [(256, 4), (128, 4), (64, 2), (64, 4), (32, 1), (32, 2), (16, 1)]:
        xb = min(xb, 1 << (xnumel - 1).bit_length())
        grid = -(-xnumel // xb)
        out[f"finish x{xb} w{nw}"] = [
            (
                rf"(_{kernel_suffix}\[\()\d+(,\)\]\((?:[^)]|\n)*?)XBLOCK=\d+(, R0_BLOCK=\d+, )num_warps=\d+",
                rf"\g<1>{grid}\g<2>XBLOCK={xb}\g<3>num_warps={nw}",
            )
        ]
    return out


def tsum8_variants(st, R, C):
    return _patched("tsum", st, {"rows": R, "cols": C}, _finisher_edits("sum_1", R, 16))


def tlm8_variants(st, R, C, P):
    return _patched(
        "three_layouts_mean", st, {"rows": R, "cols": C, "pad": P - C}, _finisher_edits("div_1", C, 16)
    )


def apbt8_variants(st, R, C):
    store = r"tl\.store\((buf\w+_ptr \+ \(8192 \* yindex \+ xindex\)|\w+_ptr \+ \([^,]*\)), (tmp\d+)\)"
    xload = r'(tl\.load\(x_ptr \+ \([^)]*\)), eviction_policy="evict_last"\)'
    launch = r"\[\(\d+, \d+\)\]\((.*)YBLOCK=\d+, XBLOCK=\d+, num_warps=\d+\)"
    edits = {
        "store .cs": [(store, r'tl.store(\1, \2, cache_modifier=".cs")')],
        "store evict_first": [(store, r'tl.store(\1, \2, eviction_policy="evict_first")')],
        "x load plain": [(xload, r"\1)")],
        "x load plain, store .cs": [(xload, r"\1)"), (store, r'tl.store(\1, \2, cache_modifier=".cs")')],
    }
    for yb, xb, nw in [(64, 64, 4), (32, 128, 4), (128, 128, 8), (32, 64, 4)]:
        if R % yb == 0 and C % xb == 0:  # the kernel has no masks
            edits[f"tile {yb}x{xb} w{nw}"] = [
                (launch, rf"[({C // xb}, {R // yb})](\1YBLOCK={yb}, XBLOCK={xb}, num_warps={nw})")
            ]
    return _patched("apbt", st, {"rows": R, "cols": C}, edits)


VARIANTS = sized(
    {
        "tsum": tsum8_variants,
        "three_layouts_mean": tlm8_variants,
        "apbt": apbt8_variants,
    }
)
