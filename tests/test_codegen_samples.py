"""Generated Triton for every sample graph, unfused, hand-fused and as the planner fuses it, checked
against the interpreter (TRITON_INTERPRET=1 on CPU).

Samples too large for the Triton interpreter are run in a shrunk form: the same graph text with its
big sizes replaced by small ones (strides in the index expressions scale with them).
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.io.load import load_graph, load_text
from fuseopt.ir.graph import Graph
from tests.strategies import check, check_autotuned, check_window, plan_of, unfused_plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = sorted(glob.glob(os.path.join(ROOT, "samples", "*.yaml"))) + sorted(
    glob.glob(os.path.join(ROOT, "samples", "cases", "*.yaml"))
)
# Largest graph (storage elements) run as is; bigger ones are shrunk (SHRINK) or skipped.
MAX_ELEMENTS = 400_000
# name -> {size in the file: size in the test}; sizes are whole numbers in shapes, loops, strides.
SHRINK: dict[str, dict[int, int]] = {
    "apbt": {1024: 24, 2048: 40},
    "apbt_realize": {1024: 24, 2048: 40},
    "sum_and_t": {1024: 24, 2048: 40},
    # 16 rows of 1,024 (not 8,192) columns: still 128-wide RMS rows, 8 to an image row
    "rms_reshape": {8192: 1024, 10240: 1280, 1024: 128, 64: 8},
}
# avgpool_cl is the full-size seed case: samples/avgpool_cl_small.yaml is its small form.
COVERED_ELSEWHERE = {"avgpool_cl": "avgpool_cl_small"}
# Hand-fused plans (groups of nodes per kernel), valid without rewriting the graph.
HAND_FUSED: dict[str, list[list[str]]] = {
    "layernorm_t": [["n0", "n1", "n2"]],
    "softmax_bias_t": [["n0", "n1", "n2"]],
    "three_layouts_mean": [["n0"], ["n1", "n2"]],
    "extern_mm": [["mm0", "n1"]],  # the extern call with a fused pointwise epilogue
    "jit_aot": [["buf0", "buf2", "buf4"], ["buf1"], ["buf3"]],
    "cast_and_t": [["n0", "n1"]],
    "view": [["n0", "n1"]],
    "rms_reshape": [["n0", "n1"]],
    "sum_and_t": [["n0", "n1"]],
    "pw_outer_red_2": [["n0", "n1", "n2"], ["n3"]],
}
LOOPED = CodegenOptions(persistent_rnumel=0, max_r0_block=8)
# Split reductions (a few chunks; tests/strategies.SPLIT's one-element chunks are for tiny graphs).
SPLIT = CodegenOptions(
    persistent_rnumel=0,
    max_r0_block=8,
    unroll_rnumel=0,
    split_programs=64,
    split_min_r_blocks=1,
    strategy="split",
)


def name_of(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def shrunk(path: str) -> Graph:
    text = Path(path).read_text(encoding="utf-8")
    sizes = SHRINK[name_of(path)]  # one pass: a replaced size is never replaced again
    text = re.sub(r"\b\d+\b", lambda m: str(sizes.get(int(m.group()), m.group())), text)
    return load_text(text, os.path.basename(path))


def sample(name: str) -> Graph:
    path = next(p for p in PATHS if name_of(p) == name)
    if name in SHRINK:
        return shrunk(path)
    g = load_graph(path)
    size = sum(b.storage_size for b in g.buffers)
    if size > MAX_ELEMENTS:
        why = f"covered by {COVERED_ELSEWHERE[name]}" if name in COVERED_ELSEWHERE else "no small form yet"
        pytest.skip(f"{name}: {size} elements is too large for the Triton interpreter ({why})")
    return g


NAMES = [name_of(p) for p in PATHS]


def test_every_sample_is_listed() -> None:
    assert {"apbt", "layernorm_t", "softmax_bias_t", "three_layouts_mean", "extern_mm", "jit_aot"} <= set(
        NAMES
    )


# floordiv_broadcast unfused is the largest interpreter run of the samples; planner-fused stays quick.
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "floordiv_broadcast" else n for n in NAMES]
)
def test_sample_unfused(name: str) -> None:
    g = sample(name)
    check(g, unfused_plan(g))


# rms_reshape's hand-fused kernel (a 1,024-row reduction with its flat epilogue, under three
# strategies) is the slowest interpreter run of the suite; its planner-fused form stays quick.
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "rms_reshape" else n for n in sorted(HAND_FUSED)]
)
def test_sample_hand_fused(name: str) -> None:
    if name not in NAMES:
        pytest.skip(f"sample {name} not present")
    g = sample(name)
    plan = plan_of(g, HAND_FUSED[name])
    check(g, plan)
    if any(g.node(n).kind == "reduction" for grp in HAND_FUSED[name] for n in grp):
        check(g, plan, LOOPED)
        if "rsplit" in emit_module(g, plan, options=SPLIT):  # only where the kernel splits
            check(g, plan, SPLIT)


@pytest.mark.parametrize("name", NAMES)
def test_sample_planner_fused(name: str) -> None:
    pipeline = pytest.importorskip("fuseopt.passes.pipeline")
    g = sample(name)
    stage = pipeline.optimize(g)
    check(stage.graph, stage.plan)
    check_window(stage.graph, stage.plan)
    check_autotuned(stage.graph, stage.plan)


def test_apbt_fuses_into_one_2d_tiled_kernel() -> None:
    """The seed case: with n1's loops in n2's order, x*2 + y.t()*3 is one kernel with 2D tiles."""
    path = next(p for p in PATHS if name_of(p) == "apbt")
    text = Path(path).read_text(encoding="utf-8")
    for big, small in SHRINK["apbt"].items():
        text = re.sub(rf"\b{big}\b", str(small), text)
    text = text.replace("loops: [[i0, 40], [i1, 24]]", "loops: [[i1, 24], [i0, 40]]")
    g = load_text(text, "apbt.yaml")
    src = check(g, plan_of(g, [["n0", "n1", "n2"]]), CodegenOptions(max_xblock=16, max_yblock=8))
    assert src.count("@triton.jit\ndef triton_poi_fused_mul_add_0(") == 1
    assert "YBLOCK: tl.constexpr" in src
