# ruff: noqa: B023
"""Round 21 of benchmarks/explore_gpu.py: per-point special-function work in the captured
kernels, and clusters beyond the transposed reductions. softmax_bias_t divides every point by its
row's sum (`div.full.f32`: a reciprocal on the special-function unit per point, next to the exp):
against one reciprocal a row and a multiply per point. avgpool_cl divides every output point by
9.0: against a multiply by 1/9. Both change the rounding by about an ulp (Triton's division is
already approximate), so each edited module is first checked against the reference interpreter.
Also apbt's 2D tile and avgpool_cl's window launched as clusters of two programs (DIAG)."""

import re

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.programs import captured
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module

EDITS = {
    "softmax_bias_t": [("recip", r"(tmp\d+) = (tmp\d+) / (tmp\d+)\n", r"\1 = \2 * (1.0 / \3)\n")],
    "avgpool_cl": [("mul 1/9", r" / 9\.0\n", r" * 0.1111111111111111\n")],
}
# (workload, launch pattern, builder of a cluster launch from the match and (block a, block b, warps))
LAUNCH = {
    "apbt": (
        r"\[\((\d+), (\d+)\)\]\(x, y, (\w+), (\d+), (\d+), YBLOCK=(\d+), XBLOCK=(\d+), num_warps=(\d+)\)",
        [(128, 128, 4), (64, 256, 4), (128, 128, 8)],
    ),
    "avgpool_cl": (
        r"\[\((\d+), (\d+)\)\]\(\s*x, (\w+), (\d+), (\d+), YBLOCK=(\d+), XBLOCK=(\d+), num_warps=(\d+)\s*\)",
        [(7, 2048, 4), (7, 1024, 2), (7, 2048, 8)],
    ),
}


def _cluster_launch(name, m, cfg):
    _, _, out, a, b, yb, _xb, _nw = m.groups()
    a, b = int(a), int(b)
    if name == "apbt":  # grid: x tiles of b, y tiles of a
        ybk, xbk, nw = cfg
        grid = (-(-b // xbk), -(-a // ybk))
        return (
            f"[{grid}](x, y, {out}, {a}, {b}, YBLOCK={ybk}, XBLOCK={xbk}, num_warps={nw}, num_ctas=2)",
            ybk,
            xbk,
            nw,
        )
    band, xbk, nw = cfg
    grid = (-(-b // xbk), a // band)
    return (
        f"[{grid}](x, {out}, {a}, {b}, YBLOCK={band}, XBLOCK={xbk}, num_warps={nw}, num_ctas=2)",
        band,
        xbk,
        nw,
    )


def _workload(name):
    def build(st, sz):
        g, _ = captured(name, small=DRY)
        stage = optimize(g)
        src = emit_module(stage.graph, stage.plan)
        dev = next(iter(st.values())).device
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
        vs = {}
        sources = {"as emitted": src}
        for label, pat, rep in EDITS.get(name, []):
            new, n = re.subn(pat, rep, src)
            assert n == 1, (name, label, n)
            compare_with_reference(stage.graph, stage.plan, source=new)
            sources[label] = new
        for label, text in sources.items():
            if "\nCLUSTERS = None\n" in text:
                for on in (True, False):
                    mod = load_module(text.replace("\nCLUSTERS = None\n", f"\nCLUSTERS = {on}\n"))
                    vs[f"DIAG {label} clusters={on}"] = _timed(mod, inputs, f"{name} {label} {on}")
            else:
                vs[f"DIAG {label}"] = _timed(load_module(text), inputs, f"{name} {label}")
        if name in LAUNCH and not DRY:
            pat, cfgs = LAUNCH[name]
            m = re.search(pat, src)
            assert m, name
            for cfg in cfgs:
                launch, a, b, nw = _cluster_launch(name, m, cfg)
                new = src[: m.start()] + launch + src[m.end() :]
                mod = load_module(new)
                compare_with_reference(stage.graph, stage.plan, source=new)
                vs[f"DIAG cluster {a}x{b} w{nw}"] = _timed(mod, inputs, f"{name} cluster {a}x{b} w{nw}")
        if not DRY:
            torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {name: _workload(name) for name in ("apbt", "avgpool_cl", "softmax_bias_t")}
