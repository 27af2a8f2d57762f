"""Round 36 of benchmarks/explore_gpu.py: fuseopt's register window (`codegen.cells`, after round
34) against its sliding window (`CodegenOptions(window_cells=0)`), as generated, on the captured
avgpool_cl and on the hand-written one (a 3 x 3 reduction unrolled); and the register window with
every store moved to the kernel's end (`stores last`, second run) or its addresses written as
the cell's base pointer plus a constant (`pointer + constant`, third run), next to round 34's
hand-written 5 x 5 window. Each module is checked against the
reference interpreter first; all are timed twice, alternating (DIAG rows).

First run (`-round36-interleaved.json`): each cell's store right after its loads (as emitted
then), 47.7-49.8% of copy against 66.4-68.5% for the sliding window: a load cannot move above a
store that may alias it. The register window now stores a row of cells after the row's loads. Second run
(`-round36-rowstores.json`): 62.8-64.2% against 66.5-68.3% for the sliding window; all stores
last, 62.9-64.0%. Third run (`-round36.json`, copy 4226 GB/s): addresses as the cell's base
pointer plus a constant, 69.8-71.0% (captured) and 72.5-72.6% (hand-written) against 67.1-67.2%
and 66.9-68.6% for the sliding window (which gains nothing from the same edit); round 34's hand
kernel 71.5-75.0%. fuseopt now writes a register window's addresses that way."""

import json
import re

import torch

from benchmarks.explore.harness import DRY
from benchmarks.explore.round19 import _timed
from benchmarks.programs import captured
from benchmarks.workloads import FULL, SMALL, WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.codegen.tiling import CodegenOptions
from fuseopt.interp import make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module

FORMS = {"register window": CodegenOptions(), "sliding window": CodegenOptions(window_cells=0)}


def stores_last(src: str) -> str:
    """The module with each kernel's top-level stores moved to the end of the kernel."""
    out: list[str] = []
    stores: list[str] = []
    inside = False
    for line in src.splitlines():
        if line.startswith("def triton_"):
            inside = True
        elif inside and line and not line.startswith(" "):
            out.extend(stores)
            stores, inside = [], False
        if inside and line.startswith("    tl.store("):
            stores.append(line)
        else:
            out.append(line)
    return "\n".join(out + stores) + "\n"


ADDRESS = re.compile(r"(\w+_ptr) \+ \((flat_y_x) ([+-]) (\d+)\)")


def split_addresses(src: str) -> str:
    """`ptr + (flat + k)` as `ptr + flat + k`: the pointer to the cell's base, then a constant
    offset (which the compiler can fold into the load's immediate)."""
    return ADDRESS.sub(r"\1 + \2 \3 \4", src)


EDITS = {"pointer + constant": split_addresses}


def pool_stages(st):
    """avgpool_cl captured and hand-written: (name, planned stage, inputs on the device)."""
    doc, _ = WORKLOADS["avgpool_cl"](**(SMALL if DRY else FULL)["avgpool_cl"])
    graphs = {
        "captured": captured("avgpool_cl", small=DRY)[0],
        "hand-written": load_text(json.dumps(doc), "p.json"),
    }
    dev = next(iter(st.values())).device
    return [
        (gname, optimize(g), {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()})
        for gname, g in graphs.items()
    ]


def _avgpool(st, sz):
    mods = {}
    for gname, stage, inputs in pool_stages(st):
        for form, options in FORMS.items():
            src = emit_module(stage.graph, stage.plan, options=options)
            compare_with_reference(stage.graph, stage.plan, source=src)
            head = next(line for line in src.splitlines() if line.startswith("# plan kernel"))
            print(f"{gname} {form}: {head}", flush=True)
            mods[f"{gname}, {form}"] = (load_module(src), inputs)
            for label, edit in EDITS.items():
                new = edit(src)
                compare_with_reference(stage.graph, stage.plan, source=new)
                mods[f"{gname}, {form}, {label}"] = (load_module(new), inputs)
    vs = {}
    if not DRY:  # round 34's hand-written register window, 5 x 5 cells unrolled (checked there)
        from benchmarks.explore.round34 import _kernel

        x, out = st["x"], torch.empty_like(st["x"])
        kern = _kernel(5, "static")
        n, c, h, w = (FULL["avgpool_cl"][k] for k in ("n", "c", "h", "w"))
        mods["hand kernel 5 x 5 (round 34)"] = (
            lambda: kern[(c // 64, w // 5, n * (h // 5))](x, out, c, h, w, 64, 5, 1, num_warps=1),
            None,
        )
    for rep in (1, 2):
        for label, (mod, inputs) in mods.items():
            vs[f"DIAG {label} ({rep})"] = mod if inputs is None else _timed(mod, inputs, f"{label} {rep}")
    if not DRY:
        torch.cuda.empty_cache()
    return vs, lambda: {}


VARIANTS = {"avgpool_cl": _avgpool}
