# ruff: noqa: B023, SIM115
"""Round 12 of benchmarks/explore_gpu.py: the NaN-propagating max of fuseopt's persistent softmax as one reduction (tl.maximum with propagate_nan, or a where-combine) against its two (a NaN flag, then tl.max) and plain tl.max; rows and warps of the persistent transposed reductions."""

import json
import re

from benchmarks.explore.harness import relaunched, sized
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

MAX_FINAL = """
@triton.jit
def _max_final(v):
    has_nan = tl.max((v != v).to(tl.int8), 1) > 0
    return tl.where(has_nan, float("nan"), tl.max(v, 1))

"""

HELPERS = """
@triton.jit
def _maxnan_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _maxwhere_combine(a, b):
    return tl.where((a > b) | (a != a), a, b)

"""

MAX = {
    "flag+max": r"_max_final(\1)",  # a NaN flag reduction, then tl.max (fuseopt before this round)
    "propagate": r"tl.reduce(\1, 1, _maxnan_combine)",  # fuseopt since this round
    "where": r"tl.reduce(\1, 1, _maxwhere_combine)",
    "plain": r"tl.max(\1, 1)",
}
# fuseopt's persistent max final, as emitted before this round or after it
FINAL = r"(?<!def )_max_final\((\w+)\)|tl\.reduce\((\w+), 1, _max_propagate\)"


def _source(name, R, C, max_mode):
    doc, _ = WORKLOADS[name](rows=R, cols=C)
    stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
    full = emit_module(stage.graph, stage.plan)
    head, tail = full.split("\ndef _input", 1)
    head, n = re.subn(FINAL, lambda m: re.sub(r"\\1", m.group(1) or m.group(2), MAX[max_mode]), head)
    assert n == (1 if name == "softmax_bias_t" else 0), n
    if n and "def _max_final(" not in head:
        head = head.replace("\n@triton.jit\ndef triton_per", MAX_FINAL + "\n@triton.jit\ndef triton_per", 1)
    head = head.replace("\n@triton.jit\ndef triton_per", HELPERS + "\n@triton.jit\ndef triton_per", 1)
    return head + "\ndef _input" + tail


def _variants(name, st, R, C, max_modes, configs):
    vs, last = {}, {}
    for mm in max_modes:
        base = _source(name, R, C, mm)
        for xb, nw in configs:
            xb = min(xb, R)
            new = relaunched(base, R, xb, nw)
            mod = load_module(new)
            vs[f"fuseopt max:{mm} {xb}x{C} w{nw}"] = lambda mod=mod: last.update(mod.call(st))
    return vs, lambda: last


VARIANTS = sized(
    {
        "softmax_bias_t": lambda st, R, C: _variants(
            "softmax_bias_t", st, R, C, list(MAX), [(8, 8), (8, 4), (16, 4), (16, 8), (32, 8), (32, 16)]
        ),
        "layernorm_t": lambda st, R, C: _variants(
            "layernorm_t", st, R, C, ["flag+max"], [(16, 4), (16, 8), (32, 4), (32, 8), (32, 16), (64, 16)]
        ),
    }
)
