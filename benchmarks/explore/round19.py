# ruff: noqa: B023
"""Round 19 of benchmarks/explore_gpu.py: more cluster launches (`num_ctas`) of the transposed
persistent reductions after round 18 (32 rows x 4 warps x 2 programs a cluster beat the single
programs by about 2 points of copy): cluster sizes 2, 4 and 8 at 8 or 16 rows a program of the
cluster, on layernorm_t, softmax_bias_t and round 14's other transposed reductions (column mean,
RMS norm, layer_norm + sigmoid; DIAG rows, each checked against the reference interpreter)."""

import re

import torch

from benchmarks.explore.harness import DRY, close, relaunched
from benchmarks.explore.round12 import _source
from benchmarks.explore.round13 import _compiled
from benchmarks.explore.round14 import _graphs
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs, run_graph
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

# (rows of the cluster, warps a program, programs a cluster)
CONFIGS = [(16, 4, 1), (32, 8, 1), (32, 4, 2), (16, 2, 2), (32, 4, 4), (64, 4, 4), (64, 8, 4), (128, 4, 8)]
OTHERS = [(16, 4, 1), (32, 8, 1), (32, 4, 2), (64, 4, 4)]
seen: set = set()


def _launch(src, R, xb, nw, ctas):
    extra = "" if ctas == 1 or DRY else f", num_ctas={ctas}"
    return load_module(relaunched(src, R, min(xb, R), nw, extra))


def _timed(mod, args, label, out=None):
    def call():
        got = mod.call(args)
        if out is not None:
            out.update(got)
        if not DRY and label not in seen:
            seen.add(label)
            print(f"REGS {label}: (n_regs, n_spills) {_compiled(mod)}", flush=True)

    return call


def _workload(name):
    def build(st, sz):
        R, C = sz["rows"], sz["cols"]
        base = _source(name, R, C, "propagate")
        vs, last = {}, {}
        for xb, nw, ctas in CONFIGS:
            label = f"fuseopt {min(xb, R)}x{C} w{nw} ctas{ctas}"
            vs[label] = _timed(_launch(base, R, xb, nw, ctas), st, f"{name} {label}", last)
        if name == "layernorm_t":
            vs.update(_others(st, R, C))
        return vs, lambda: last

    return build


def _others(st, R, C):
    dev = st["x"].device
    vs = {}
    for gname, text in _graphs(R, C).items():
        g = load_text(f"name: {gname.replace('+', '_')}\n" + text, f"{gname}.yaml")
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=1).items()}
        want = run_graph(g, inputs)
        stage = optimize(g)
        src = emit_module(stage.graph, stage.plan)
        default = re.search(r"XBLOCK=.*num_warps=\d+", src)
        print(f"{gname}: default launch {default.group(0) if default else None}", flush=True)
        for xb, nw, ctas in OTHERS:
            mod = _launch(src, R, xb, nw, ctas)
            got = mod.call(inputs)
            for b in g.outputs:
                close(got[b.name], want[b.name])
            del got
            label = f"DIAG {gname} {min(xb, R)}x{C} w{nw} ctas{ctas}"
            vs[label] = _timed(mod, inputs, label)
        if not DRY:
            torch.cuda.empty_cache()
    return vs


VARIANTS = {name: _workload(name) for name in ("softmax_bias_t", "layernorm_t")}


# tsum's and three_layouts_mean's split partial kernels and apbt's 2D tile, relaunched as clusters:
# (workload, the default launch's text, [(replacement launch, label)])
SPLITS = {
    "tsum": (
        r"\[\((\d+), (\d+)\)\]\(x, y, ws_n0, (\d+), (\d+), XBLOCK=(\d+), R0_BLOCK=(\d+), num_warps=(\d+)\)",
        "x, y, ws_n0",
    ),
    "three_layouts_mean": (
        r"\[\((\d+), (\d+)\)\]\(\s*a, b, c, ws_n1, s, (\d+), (\d+), XBLOCK=(\d+), R0_BLOCK=(\d+), num_warps=(\d+)\s*\)",
        "a, b, c, ws_n1, s",
    ),
}
SPLIT_CONFIGS = [(32, 8, 1), (64, 8, 2), (64, 4, 2), (128, 8, 4)]


def _split(name):
    pattern, args = SPLITS[name]

    def build(st, sz):
        import json

        from benchmarks.workloads import WORKLOADS

        doc, _ = WORKLOADS[name](**sz)
        stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
        src = emit_module(stage.graph, stage.plan)
        m = re.search(pattern, src)
        if m is None:  # tiny sizes (DRY) plan no split
            print(f"{name}: no split partial kernel at these sizes", flush=True)
            return {}, lambda: {}
        nx, ny, xn, rn, xb0, rb, _nw = map(int, m.groups())
        vs, last = {}, {}
        for xb, nw, ctas in SPLIT_CONFIGS:
            xb = min(xb, xn)
            extra = "" if ctas == 1 or DRY else f", num_ctas={ctas}"
            launch = (
                f"[({xn // xb}, {ny})]({args}, {xn}, {rn}, XBLOCK={xb}, R0_BLOCK={rb}, num_warps={nw}{extra})"
            )
            new, n = re.subn(pattern, launch, src)
            assert n == 1
            label = f"partial {xb}x{rb} w{nw} ctas{ctas}"
            vs[label] = _timed(load_module(new), st, f"{name} {label}", last)
        return vs, lambda: last

    return build


VARIANTS.update({name: _split(name) for name in SPLITS})
