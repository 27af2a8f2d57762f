# ruff: noqa: B023
"""Round 23 of benchmarks/explore_gpu.py: the cluster rule away from r=1024. Transposed
layernorm_t and softmax_bias_t with rows of 512 and 256 columns (the same 128 MiB: 65536 x 512,
131072 x 256), each at fuseopt's default launch with clusters (CLUSTERS = True: 64 or 128 rows
over two programs) and at its single-program fallback (False). DIAG rows: each module is checked
against the reference interpreter before it is timed. Run before `tiling._cluster_pays`, which it
led to: since then softmax at 512 and 256 columns has no cluster launch, and the round says so."""

import json

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module

SHAPES = [(65536, 512), (131072, 256)]


def _workload(name):
    def build(st, sz):
        vs = {}
        dev = next(iter(st.values())).device
        for rows, cols in SHAPES if not DRY else [(64, 32)]:
            doc, _ = WORKLOADS[name](rows=rows, cols=cols)
            g = load_text(json.dumps(doc), f"{name}.json")
            stage = optimize(g)
            src = emit_module(stage.graph, stage.plan)
            if "\nCLUSTERS = None\n" not in src:
                print(f"{name} {rows}x{cols}: no cluster launch", flush=True)
                continue
            inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
            for on in (True, False):
                text = src.replace("\nCLUSTERS = None\n", f"\nCLUSTERS = {on}\n")
                compare_with_reference(stage.graph, stage.plan, source=text)
                label = f"DIAG {rows}x{cols} clusters={on}"
                vs[label] = _timed(load_module(text), inputs, f"{name} {label}")
            if not DRY:
                torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {name: _workload(name) for name in ("layernorm_t", "softmax_bias_t")}
