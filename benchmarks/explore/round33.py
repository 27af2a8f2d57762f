# ruff: noqa: B023
"""Round 33 of benchmarks/explore_gpu.py: programmatic dependent launch (Hopper) for the kernel
that finishes a split reduction. The finishing kernel is launched with `launch_pdl=True` and
waits (`gdc_wait`, before its first load) for the partial kernel's results; the partial kernel
lets it launch (`gdc_launch_dependents`) at its start or after its store, so its launch overlaps
the partial kernel's last programs instead of following them. On tsum and three_layouts_mean's
captured modules, each checked on the GPU against the module as emitted (the interpreter has no
grid dependency control), timed twice alternating (DIAG rows)."""

import re

import torch

from benchmarks.explore.harness import DRY, close
from benchmarks.explore.round19 import _timed
from benchmarks.programs import captured
from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

KERNEL = re.compile(r"\ndef (triton_(?:red|per)_\w+)\((?:.|\n)*?\):\n    xoffset = ")


def pdl(src: str, where: str) -> str:
    """The split's two kernels with grid dependency control; `where` the partial kernel lets the
    finishing kernel launch: "start" or "end" (after its last statement)."""
    names = [m.group(1) for m in KERNEL.finditer(src)]
    assert len(names) == 2, names
    partial, finish = names
    out = []
    for chunk in re.split(r"(?=\n@triton.jit\n)", src):
        if f"\ndef {finish}(" in chunk:
            chunk = chunk.replace("):\n    xoffset = ", "):\n    tl.extra.cuda.gdc_wait()\n    xoffset = ", 1)
        elif f"\ndef {partial}(" in chunk:
            if where == "start":
                chunk = chunk.replace(
                    "):\n    xoffset = ", "):\n    tl.extra.cuda.gdc_launch_dependents()\n    xoffset = ", 1
                )
            else:
                body, rest = chunk.split("\n\n\n", 1)
                chunk = body + "\n    tl.extra.cuda.gdc_launch_dependents()\n\n\n" + rest
        out.append(chunk)
    new = "".join(out)
    new, n = re.subn(rf"({finish}\[\(\d+,\)\]\((?:[^()]|\n)*?num_warps=\d+)", r"\1, launch_pdl=True", new)
    assert n == 1
    return new


def _workload(name):
    def build(st, sz):
        g, _ = captured(name, small=DRY)
        stage = optimize(g)
        src = emit_module(stage.graph, stage.plan)
        if "rsplit" not in src or DRY:  # tiny sizes do not split; the interpreter has no GDC
            return {}, lambda: {}
        dev = next(iter(st.values())).device
        inputs = {k: v.to(dev) for k, v in make_inputs(g, seed=0).items()}
        mods = {"as emitted": load_module(src)}
        for where in ("start", "end"):
            mods[f"pdl, dependents at {where}"] = load_module(pdl(src, where))
        want = mods["as emitted"].call(inputs)
        for mod in mods.values():
            got = mod.call(inputs)
            for k, w in want.items():
                close(got[k], w)
        vs = {}
        for rep in (1, 2):
            for label, mod in mods.items():
                vs[f"DIAG {label} ({rep})"] = _timed(mod, inputs, f"{name} {label} {rep}")
        torch.cuda.empty_cache()
        return vs, lambda: {}

    return build


VARIANTS = {name: _workload(name) for name in ("tsum", "three_layouts_mean")}
