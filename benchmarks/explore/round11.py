# ruff: noqa: B023, SIM115
"""Round 11 of benchmarks/explore_gpu.py: fuseopt's persistent transposed reductions with the tile turned to the input's storage order ([R0_BLOCK, XBLOCK], reduced along axis 0) against its own order, at several row counts and warps."""

import json
import re

from benchmarks.explore.harness import relaunched, sized
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

MAX0 = """
@triton.jit
def _max_final0(v):
    has_nan = tl.max((v != v).to(tl.int8), 0) > 0
    return tl.where(has_nan, float("nan"), tl.max(v, 0))

"""


def turned(src: str) -> str:
    """The persistent kernel's tile as [R0_BLOCK, XBLOCK]: x along axis 1, r along axis 0."""
    src = src.replace("tl.arange(0, XBLOCK)[:, None]", "tl.arange(0, XBLOCK)[None, :]")
    src = src.replace("tl.arange(0, R0_BLOCK)[None, :]", "tl.arange(0, R0_BLOCK)[:, None]")
    src = re.sub(r"tl\.sum\((\w+), 1\)\[:, None\]", r"tl.sum(\1, 0)[None, :]", src)
    src = re.sub(r"_max_final\((\w+)\)\[:, None\]", r"_max_final0(\1)[None, :]", src)
    src = re.sub(r"tl\.reduce\((\w+), 1, (\w+)\)\[:, None\]", r"tl.reduce(\1, 0, \2)[None, :]", src)
    src = src.replace("\n@triton.jit\ndef triton_per", MAX0 + "\n@triton.jit\ndef triton_per", 1)
    kernel = src.split("def triton_per", 1)[1].split("\ndef _input")[0]
    if re.search(
        r"(sum|max|_final|reduce)\(.*\)\[:, None\]|XBLOCK\)\[:, None\]|R0_BLOCK\)\[None, :\]", kernel
    ):
        raise ValueError("the kernel is not fully turned")
    return src


def _variants(name, st, R, C):
    doc, _ = WORKLOADS[name](rows=R, cols=C)
    stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
    src = emit_module(stage.graph, stage.plan)
    vs, last = {}, {}
    for orient, base in (("xr", src), ("rx", turned(src))):
        for xb, nw in [(8, 8), (16, 8), (16, 4), (32, 8), (8, 4)]:
            xb = min(xb, R)
            new = relaunched(base, R, xb, nw)
            mod = load_module(new)
            vs[f"fuseopt {orient} {xb}x{C} w{nw}"] = lambda mod=mod: last.update(mod.call(st))
    return vs, lambda: last


VARIANTS = sized(
    {
        "softmax_bias_t": lambda st, R, C: _variants("softmax_bias_t", st, R, C),
        "layernorm_t": lambda st, R, C: _variants("layernorm_t", st, R, C),
    }
)
