"""Triton code generation against the reference interpreter, one kernel kind at a time.

Runs on CPU under TRITON_INTERPRET=1 (set before triton is imported, see tests/strategies.py);
tiny shapes, and CodegenOptions with small blocks so that masks, several programs, looped
reductions and 2D tiles are all exercised.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess

import numpy as np
import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from fuseopt.analysis.access_match import FusedReadMismatch
from fuseopt.codegen import CodegenError, CodegenOptions, emit_module, split_loops, write_module
from fuseopt.codegen.indexing import Digit, canonical_terms, decompose
from fuseopt.codegen.rules import divisor_reciprocal
from fuseopt.codegen.strategies import SplitPartial
from fuseopt.errors import CheckFailed
from fuseopt.interp import make_inputs, run_graph
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Unary
from fuseopt.ir.graph import ComputeNode
from fuseopt.ir.parser import parse_expr_text
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Kernel, Plan
from fuseopt.runtime import compare_with_reference, load_module, run_module
from tests.strategies import SPLIT, check, graph, plan_of, unfused_plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

SMALL = CodegenOptions(max_xblock=8, max_yblock=4, max_r0_block=8, unroll_rnumel=0)
LOOPED = CodegenOptions(persistent_rnumel=0, max_xblock=4, max_r0_block=4, unroll_rnumel=0, split_programs=0)
UNROLLED = CodegenOptions(max_xblock=8, max_yblock=4, max_r0_block=8)  # rnumel <= 16 unrolled

APBT = """
format: fuseopt-graph/1
name: apbt_small
buffers:
  x:    {shape: [6, 10], dtype: float32, role: input}
  y:    {shape: [6, 10], stride: [1, 6], dtype: float32, role: input}
  buf0: {shape: [6, 10], dtype: float32}
  buf1: {shape: [6, 10], stride: [1, 6], dtype: float32}
  out:  {shape: [6, 10], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i0, 6], [i1, 10]], store: "buf0[10*i0 + i1]", value: "2 * x[10*i0 + i1]"}
  - {name: n1, loops: [[i0, 10], [i1, 6]], store: "buf1[i1 + 6*i0]", value: "3 * y[i1 + 6*i0]"}
  - {name: n2, loops: [[i0, 6], [i1, 10]], store: "out[10*i0 + i1]", value: "buf0[10*i0 + i1] + buf1[i0 + 6*i1]"}
"""
# The same graph after loop-order unification: n1 iterates (i1, i0), as the planner rewrites it.
APBT_FUSABLE = APBT.replace("loops: [[i0, 10], [i1, 6]]", "loops: [[i1, 6], [i0, 10]]")


def _on_device(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return {k: v.to(device) for k, v in inputs.items()}


# -- helpers ------------------------------------------------------------------------------------------
def test_split_loops() -> None:
    assert split_loops([4, 8, 16], 32) == 2
    assert split_loops([4, 8, 16], 4) == 1
    assert split_loops([4, 8, 16], 1) == 0
    assert split_loops([4, 1, 8], 4) == 1
    assert split_loops([6], 2) is None
    assert split_loops([4, 6], 8) is None


def test_decompose_and_canonical_terms() -> None:
    assert decompose([4, 1, 8], "xindex", 32) == [Digit("xindex", 8, None), None, Digit("xindex", 1, 8)]
    # (i0, i1) over 4x8 and one merged loop over 32 address the same element: 8*i0 + i1 == j.
    split = {"i0": Digit("xindex", 8, None), "i1": Digit("xindex", 1, 8)}
    merged = {"j": Digit("xindex", 1, None)}
    ext = {"xindex": 32}

    def form(text: str, digits: dict[str, Digit]) -> tuple[object, ...]:
        d, other, const = canonical_terms(parse_expr_text(text), digits, ext)
        return ({k: v for k, v in d.items() if v}, {k: v for k, v in other.items() if v}, const)

    assert form("8*i0 + i1", split) == form("j", merged)
    assert form("i0 + 4*i1", split) != form("j", merged)


# -- pointwise -------------------------------------------------------------------------------------------
CHAIN = """
format: fuseopt-graph/1
name: chain
buffers:
  x:   {shape: [5, 6], dtype: float32, role: input}
  b:   {shape: [6], dtype: float32, role: input}
  t:   {shape: [5, 6], dtype: float32}
  out: {shape: [5, 6], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i0, 5], [i1, 6]], store: "t[6*i0 + i1]", value: "x[6*i0 + i1] + b[i1]"}
  - {name: n1, loops: [[i0, 5], [i1, 6]], store: "out[6*i0 + i1]", value: "relu(t[6*i0 + i1]) * 2"}
"""


def test_pointwise_unfused_and_fused() -> None:
    g = graph(CHAIN)
    src = check(g, unfused_plan(g), SMALL)
    assert "xmask = xindex < xnumel" in src  # 30 points, blocks of 8
    fused = plan_of(g, [["n0", "n1"]])
    src = check(g, fused, SMALL)
    assert src.count("@triton.jit\ndef triton_poi_fused_add_relu_mul_0(") == 1
    assert not re.search(r"\bt_ptr\b", src) and '"t"' not in src  # fused: neither stored nor allocated
    out = run_module(src, _on_device(make_inputs(g)), intermediates=True)
    assert set(out) == {"out"}


def test_masks_dropped_when_blocks_divide() -> None:
    text = """
format: fuseopt-graph/1
name: even
buffers:
  x:   {shape: [4, 8], dtype: float32, role: input}
  out: {shape: [4, 8], dtype: float32, role: output}
  s:   {shape: [4], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i0, 4], [i1, 8]], store: "out[8*i0 + i1]", value: "x[8*i0 + i1] * 2"}
  - {name: n1, loops: [[i0, 4]], reduce: [[r0, 8]], store: "s[i0]", value: "sum(x[8*i0 + r0])"}
"""
    g = graph(text)
    src = check(g, unfused_plan(g), SMALL)
    assert "mask" not in src.split("def _input")[0]


def test_transpose_uses_2d_tile() -> None:
    g = graph(APBT)
    src = check(g, unfused_plan(g), SMALL)
    assert src.count("YBLOCK: tl.constexpr") == 1  # only n2 reads one layout and writes another
    gf = graph(APBT_FUSABLE)
    src = check(gf, plan_of(gf, [["n0", "n1", "n2"]]), SMALL)
    assert "yindex = yoffset + tl.arange(0, YBLOCK)[:, None]" in src
    assert "buf0_ptr" not in src and "buf1_ptr" not in src
    check(gf, plan_of(gf, [["n0", "n1", "n2"]]), dataclasses.replace(SMALL, tile_2d=False))


def test_fused_read_at_another_point_is_rejected() -> None:
    g = graph(APBT)  # n1 not reordered: n2 reads buf1 where n1 wrote another element
    with pytest.raises(FusedReadMismatch, match="not the element 'n1' writes"):
        emit_module(g, plan_of(g, [["n0", "n1", "n2"]]))


# -- reductions ----------------------------------------------------------------------------------------------
REDUCE = """
format: fuseopt-graph/1
name: reduce_{op}
buffers:
  x:   {{shape: [6, 7], dtype: {dt}, role: input}}
  out: {{shape: [6], dtype: {odt}, role: output}}
nodes:
  - {{name: n0, loops: [[i0, 6]], reduce: [[r0, 7]], store: "out[i0]", value: "{value}"}}
"""
REDUCTIONS = [
    ("sum", "float32", "float32", "sum(x[7*i0 + r0])"),
    ("sum", "float16", "float16", "sum(x[7*i0 + r0] * 2)"),
    ("sum", "int32", "int64", "sum(x[7*i0 + r0])"),
    ("sum", "bool", "int64", "sum(x[7*i0 + r0])"),
    ("prod", "float32", "float32", "prod(1 + x[7*i0 + r0] / 8)"),
    ("prod", "int8", "int64", "prod(x[7*i0 + r0])"),
    ("max", "float32", "float32", "max(x[7*i0 + r0])"),
    ("max", "float32", "float32", "max(log(x[7*i0 + r0]))"),  # NaN wins
    ("max", "bfloat16", "bfloat16", "max(x[7*i0 + r0])"),
    ("max", "int16", "int16", "max(x[7*i0 + r0])"),
    ("max", "bool", "bool", "max(x[7*i0 + r0])"),
    ("min", "float64", "float64", "min(x[7*i0 + r0])"),
    ("min", "uint8", "uint8", "min(x[7*i0 + r0])"),
    ("argmax", "float32", "int64", "argmax(x[7*i0 + r0])"),
    ("argmax", "float32", "int64", "argmax(log(x[7*i0 + r0]))"),  # first NaN
    ("argmax", "int32", "int64", "argmax(x[7*i0 + r0])"),  # ties: first occurrence
    ("argmin", "float32", "int64", "argmin(x[7*i0 + r0])"),
    ("argmin", "int64", "int64", "argmin(x[7*i0 + r0])"),
    ("any", "float32", "bool", "any(x[7*i0 + r0] > 1)"),
    ("any", "bool", "bool", "any(x[7*i0 + r0])"),
]


@pytest.mark.parametrize("mode", ["persistent", "looped", "unrolled"])
@pytest.mark.parametrize(
    "op,dt,odt,value", REDUCTIONS, ids=[f"{r[0]}-{r[1]}-{i}" for i, r in enumerate(REDUCTIONS)]
)
def test_reduction(op: str, dt: str, odt: str, value: str, mode: str) -> None:
    g = graph(REDUCE.format(op=op, dt=dt, odt=odt, value=value))
    src = check(g, unfused_plan(g), {"persistent": SMALL, "looped": LOOPED, "unrolled": UNROLLED}[mode])
    if mode == "unrolled" and op not in ("argmax", "argmin"):
        # rnumel 7: seven loads of a pointwise tile, combined in r order; no r axis at all
        assert "triton_poi_" in src and "r0_" not in src and "tl.sum(" not in src
        return
    looped = mode == "looped"
    assert ("triton_red_" in src) == looped and ("triton_per_" in src) != looped
    assert "r0_mask" in src  # rnumel 7 never fills a block


POOL_CL = """
format: fuseopt-graph/1
name: pool_cl
buffers:
  x:    {shape: [2, 16, 5, 5], stride: [400, 1, 80, 16], dtype: bfloat16, role: input}
  buf0: {shape: [2, 16, 5, 5], stride: [400, 1, 80, 16], dtype: bfloat16}
  out:  {shape: [2, 16, 5, 5], stride: [400, 1, 80, 16], dtype: bfloat16, role: output}
nodes:
  - name: n0
    loops: [[x3, 800]]
    reduce: [[r0, 3], [r1, 3]]
    store: buf0[x3]
    value: >-
      sum(masked((x3 // 80 % 5 + r0 >= 1) & (x3 // 80 % 5 + r0 <= 5) & (x3 // 16 % 5 + r1 >= 1)
      & (x3 // 16 % 5 + r1 <= 5), x[x3 + 16*r1 + 80*r0 - 96], 0.0))
  - {name: n1, loops: [[x0, 800]], store: "out[x0]", value: "relu(buf0[x0] / 9)"}
"""


def test_small_reduction_unrolled_on_a_row_split() -> None:
    """avgpool_cl as the planner leaves it (one flat loop): the 3x3 window is unrolled, and the
    flat index is split at the channels (gcd of the divisors 80 and 16) so that the window's
    bounds checks are int32 digits of the row index, computed per row; masked loads need no
    `where` afterwards."""
    g = graph(POOL_CL)
    plan = plan_of(g, [["n0", "n1"]])
    for opts in (UNROLLED, CodegenOptions(unroll_rnumel=9), CodegenOptions(tile_2d=False)):
        src = check(g, plan, opts)
        assert "triton_poi_" in src and "r0_" not in src and src.count("tl.load(") == 9
        assert "_floordiv_int" not in src and "_remainder" not in src and "tl.int64" not in src
        assert "tl.where(" not in src.split("def triton_poi_")[1]
        assert ("ynumel" in src) == opts.tile_2d
    src = check(g, plan, UNROLLED)
    assert "y0 = (yindex // 5) % 5" in src and "y1 = yindex % 5" in src
    assert "[(2, 13)](x, out, 50, 16, YBLOCK=4, XBLOCK=8, num_warps=1)" in src  # 2 x tiles, 13 y tiles
    src = check(g, plan, CodegenOptions())
    # no mask on x: XBLOCK divides the 16 channels; 4 points a thread of 4 warps (9 loads a point:
    # row_loads_in_flight), fewer for the warps the 50 x 16 points can keep busy
    m = re.search(r"YBLOCK=(\d+), XBLOCK=16, num_warps=4\)", src)
    assert m is not None and int(m.group(1)) * 16 <= 4 * 128, src
    assert "triton_per_" in check(g, plan, CodegenOptions(unroll_rnumel=8))  # 9 points: not unrolled


def test_reduction_over_a_box_and_outer_dims() -> None:
    text = """
format: fuseopt-graph/1
name: box
buffers:
  x:   {shape: [3, 4, 5], stride: [1, 3, 12], dtype: float32, role: input}
  am:  {shape: [4], dtype: int64, role: output}
  s:   {shape: [4], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i1, 4]], reduce: [[r0, 3], [r2, 5]], store: "am[i1]", value: "argmax(x[r0 + 3*i1 + 12*r2])"}
  - {name: n1, loops: [[i1, 4]], reduce: [[r2, 5], [r0, 3]], store: "s[i1]", value: "sum(x[r0 + 3*i1 + 12*r2])"}
"""
    g = graph(text)
    for opts in (SMALL, LOOPED):
        check(g, unfused_plan(g), opts)
        check(g, plan_of(g, [["n0", "n1"]]), opts)


def softmax_text(m: int, n: int) -> str:
    return f"""
format: fuseopt-graph/1
name: softmax
buffers:
  x:    {{shape: [{m}, {n}], dtype: float32, role: input}}
  bias: {{shape: [{n}], dtype: float32, role: input}}
  m:    {{shape: [{m}], dtype: float32}}
  e:    {{shape: [{m}, {n}], stride: [1, {m}], dtype: float32}}
  s:    {{shape: [{m}], dtype: float32}}
  out:  {{shape: [{m}, {n}], dtype: float32, role: output}}
  lse:  {{shape: [{m}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[i0, {m}]], reduce: [[r0, {n}]], store: "m[i0]", value: "max(x[{n}*i0 + r0] + bias[r0])"}}
  - name: n1
    loops: [[i0, {m}], [i1, {n}]]
    store: "e[i0 + {m}*i1]"
    value: "exp(x[{n}*i0 + i1] + bias[i1] - m[i0])"
  - {{name: n2, loops: [[i0, {m}]], reduce: [[r0, {n}]], store: "s[i0]", value: "sum(e[i0 + {m}*r0])"}}
  - {{name: n3, loops: [[i0, {m}], [i1, {n}]], store: "out[{n}*i0 + i1]", value: "e[i0 + {m}*i1] / s[i0]"}}
  - {{name: n4, loops: [[i0, {m}]], store: "lse[i0]", value: "log(s[i0]) + m[i0]"}}
"""


SOFTMAX = softmax_text(6, 10)


@pytest.mark.parametrize("opts", [SMALL, LOOPED], ids=["persistent", "looped"])
def test_softmax_in_one_kernel(opts: CodegenOptions) -> None:
    """Two reductions, pointwise work between and after them, and an epilogue: one kernel."""
    g = graph(SOFTMAX)
    src = check(g, plan_of(g, [["n0", "n1", "n2", "n3", "n4"]]), opts)
    assert src.count("@triton.jit\ndef triton_") == 1
    if opts is LOOPED:  # max, then exp-sum (needs the max), then the division (needs the sum)
        assert src.count("for r0_offset in range(0, r0_numel, R0_BLOCK):") == 3
    check(g, unfused_plan(g), opts)
    check(g, plan_of(g, [["n0", "n1", "n2"], ["n3"], ["n4"]]), opts)


SPLIT_KINDS = """
format: fuseopt-graph/1
name: split_kinds
buffers:
  x:    {shape: [6, 16], dtype: float32, role: input}
  k:    {shape: [6, 16], dtype: int32, role: input}
  y:    {shape: [6, 16], dtype: float32, role: output}
  s:    {shape: [6], dtype: float32, role: output}
  mx:   {shape: [6], dtype: float32, role: output}
  mn:   {shape: [6], dtype: float32, role: output}
  pr:   {shape: [6], dtype: float32, role: output}
  an:   {shape: [6], dtype: bool, role: output}
  ks:   {shape: [6], dtype: int32, role: output}
  out:  {shape: [6], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 6], [j, 16]], store: "y[16*i + j]", value: "x[16*i + j] * 0.5 + 1"}
  - {name: n1, loops: [[i, 6]], reduce: [[r, 16]], store: "s[i]", value: "sum(y[16*i + r])"}
  - {name: n2, loops: [[i, 6]], reduce: [[r, 16]], store: "mx[i]", value: "max(y[16*i + r])"}
  - {name: n3, loops: [[i, 6]], reduce: [[r, 16]], store: "mn[i]", value: "min(x[16*i + r])"}
  - {name: n4, loops: [[i, 6]], reduce: [[r, 16]], store: "pr[i]", value: "prod(y[16*i + r] * 0.5 + 0.75)"}
  - {name: n5, loops: [[i, 6]], reduce: [[r, 16]], store: "an[i]", value: "any(x[16*i + r] > 1.5)"}
  - {name: n6, loops: [[i, 6]], reduce: [[r, 16]], store: "ks[i]", value: "sum(k[16*i + r])"}
  - {name: n7, loops: [[i, 6]], store: "out[i]", value: "s[i] / mx[i] + mn[i]"}
"""


def test_pointwise_index_arithmetic_on_a_row_split() -> None:
    """A flat pointwise node whose value uses `x0 // 16 % 5` and `x0 // 80 % 3` (a captured pooling
    window's bounds and divisor look like this): tiled as rows of 16 points, so the arithmetic
    runs once per row ([YBLOCK, 1]) instead of once per element."""
    text = """
format: fuseopt-graph/1
name: rows
buffers:
  x:   {shape: [480], dtype: float32, role: input}
  out: {shape: [480], dtype: float32, role: output}
nodes:
  - name: n0
    loops: [[x0, 480]]
    store: "out[x0]"
    value: "masked(x0 // 16 % 5 >= 1, x[x0 - 16], 0.0) + cast(index(x0 // 16 % 5 + x0 // 80 % 3), float32)"
"""
    g = graph(text)
    for opts in (UNROLLED, CodegenOptions()):
        src = check(g, unfused_plan(g), opts)
        assert "pointwise, 2D tile (row index arithmetic per row), y=30 x x=16" in src
        assert "y0 = yindex % 5" in src and "xindex //" not in src and "eviction_policy" not in src
    src = check(g, unfused_plan(g), CodegenOptions(tile_2d=False))
    assert "xindex // 16" in src


def test_2d_tile_without_room_on_the_grid_flattens_its_tiles() -> None:
    """More y tiles than the grid's second dimension takes: one flat program id, split into
    (y tile, x tile) in the kernel. Forced here by a target whose grid takes one."""
    from fuseopt.targets import H200

    g = graph(POOL_CL)
    plan = plan_of(g, [["n0", "n1"]])
    assert "tl.program_id(1)" in check(g, plan, UNROLLED)
    src = check(g, plan, dataclasses.replace(UNROLLED, target=dataclasses.replace(H200, max_grid_y=1)))
    assert "tl.program_id(1)" not in src and "(pid // xtiles)" in src
    assert "[(26,)](x, out, 50, 16, YBLOCK=4, XBLOCK=8, num_warps=1)" in src  # 13 y x 2 x tiles


def test_split_reduction_every_kind() -> None:
    """A looped reduction split along r: the partial kernel runs the r loop over its chunk (and
    stores the pointwise output y), the finishing kernel combines the chunks of sum, max, min,
    prod, any and an integer sum, masks the last x tile (6 rows, XBLOCK 4) and runs the
    epilogue. Against the interpreter, as every check."""
    g = graph(SPLIT_KINDS)
    plan = plan_of(g, [[f"n{i}" for i in range(8)]])
    src = check(g, plan, dataclasses.replace(SPLIT, max_r0_block=4))
    assert src.count("@triton.jit\ndef triton_") == 2
    assert "rsplit = tl.program_id(1)" in src
    assert "for r0_offset in range(rsplit * 4, (rsplit + 1) * 4, R0_BLOCK):" in src
    assert "[(2, 4)](" in src  # 2 x tiles, 4 chunks of r
    partial, finish = src.split("@triton.jit\ndef triton_")[1:]
    assert "tl.store(y_ptr" in partial and "out_ptr" not in partial and "xmask" in partial
    assert "tl.store(out_ptr" in finish and "y_ptr" not in finish
    assert "ws_n5 = torch.empty(24, dtype=torch.int8, device=device)" in src
    assert "ws_n6 = torch.empty(24, dtype=torch.int64, device=device)" in src  # torch sums int32 in int64
    check(g, plan, LOOPED)  # the same kernel unsplit
    src = check(g, plan, dataclasses.replace(SPLIT, max_r0_block=2, split_programs=12))
    assert "[(2, 8)](" in src and "R0_BLOCK=8" in src  # 8 blocks of 2: the first divisor d with 2 x d >= 12
    src = check(g, plan, dataclasses.replace(SPLIT, max_r0_block=4, split_min_r_blocks=2, split_programs=6))
    assert "[(2, 2)](" in src  # at least 2 blocks a chunk: 2 chunks


def test_split_reduction_autotune_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """--autotune on a split reduction: the partial kernel's candidates keep the chunks and an
    R0_BLOCK dividing a chunk, the grid's chunk dimension is fixed, and every candidate, launched
    as the fixed config, matches the interpreter."""
    import fuseopt.codegen.choice as choice

    g = graph(SPLIT_KINDS)
    plan = plan_of(g, [[f"n{i}" for i in range(8)]])
    opts = dataclasses.replace(SPLIT, max_r0_block=4, max_xblock=8)
    src = emit_module(g, plan, options=dataclasses.replace(opts, autotune=True))
    partial = src.split("@triton.jit\ndef triton_")[0].split("@triton.autotune(")[1]
    configs = re.findall(r'triton\.Config\(\{"XBLOCK": (\d+), "R0_BLOCK": (\d+)\}', partial)
    assert configs == [("8", "4"), ("8", "2"), ("4", "4")]  # the default first
    assert all(4 % int(r) == 0 for _, r in configs)  # chunks of 4: R0_BLOCK divides them
    assert '[_grid({"XBLOCK": 6}, {"": 4})](' in src
    grid = load_module(src)._grid({"XBLOCK": 6}, {"": 4})  # the launch grid autotune computes
    assert grid({"XBLOCK": 4, "R0_BLOCK": 2}) == (2, 4) and grid({"XBLOCK": 8, "R0_BLOCK": 4}) == (1, 4)

    real = choice.forced_tiling  # SPLIT forces the split
    tried = []
    for i in range(len(configs)):

        def one(graph_, launch, options, i=i):  # the i-th candidate as the fixed launch
            t = real(graph_, launch, dataclasses.replace(options, autotune=True))
            if t is None or not isinstance(t.strategy, SplitPartial):
                return None if t is None else dataclasses.replace(t, autotune=())
            tried.append(t.autotune[i])
            return dataclasses.replace(t, config=t.autotune[i], autotune=())

        monkeypatch.setattr(choice, "forced_tiling", one)
        check(g, plan, opts)
    assert len(set(tried)) == len(configs)
    monkeypatch.undo()
    # 15 blocks of 256 in 3 chunks of 5 blocks: R0_BLOCK 512 would cross into the next chunk
    col = """
format: fuseopt-graph/1
name: colsum
buffers:
  x: {shape: [3840, 64], dtype: float32, role: input}
  s: {shape: [64], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 64]], reduce: [[r, 3840]], store: "s[i]", value: "sum(x[64*r + i])"}
"""
    split = CodegenOptions(autotune=True, strategy="split")  # 1 MB: the cost model would loop it
    src = emit_module(graph(col), unfused_plan(graph(col)), options=split)
    m = re.search(r"range\(rsplit \* (\d+),", src)
    blocks = {
        int(r) for r in re.findall(r'"R0_BLOCK": (\d+)', src.split("@triton.autotune(")[1].split("def ")[0])
    }
    assert m is not None and int(m.group(1)) == 1280 and blocks == {128, 256}


def test_split_reduction_not_for_argmax_or_a_second_loop() -> None:
    text = SPLIT_KINDS.replace('"max(y[16*i + r])"', '"argmax(y[16*i + r])"').replace(
        "mx:   {shape: [6], dtype: float32", "mx:   {shape: [6], dtype: int64"
    )
    g = graph(text)
    src = check(g, plan_of(g, [[f"n{i}" for i in range(8)]]), SPLIT)
    assert "rsplit" not in src
    g = graph(SOFTMAX)  # exp-sum needs the finished max: two r loops, not split
    src = check(g, plan_of(g, [["n0", "n1", "n2", "n3", "n4"]]), SPLIT)
    assert "rsplit" not in src


READ_ONLY = """
format: fuseopt-graph/1
name: read_only
buffers:
  x:    {shape: [6, 20], dtype: float32, role: input}
  b:    {shape: [20], dtype: float32, role: input}
  y:    {shape: [6, 20], dtype: float32, role: output}
  m:    {shape: [6], dtype: float32}
  v:    {shape: [6], dtype: float32, role: output}
  s:    {shape: [6], dtype: float32, role: output}
nodes:
  - {name: sb, loops: [[i, 6]], reduce: [[r, 20]], store: "s[i]", value: "sum(x[20*i + r] * b[r])"}
  - {name: mn, loops: [[i, 6]], reduce: [[r, 20]], store: "m[i]", value: "sum(x[20*i + r] / 20.0)"}
  - {name: vr, loops: [[i, 6]], reduce: [[r, 20]], store: "v[i]", value: "sum(abs(x[20*i + r] - m[i]))"}
  - {name: y2, loops: [[i, 6], [j, 20]], store: "y[20*i + j]", value: "x[20*i + j] * 2.0"}
"""


@pytest.mark.parametrize("options", [SMALL, LOOPED, SPLIT], ids=["persistent", "looped", "split"])
def test_reductions_that_write_no_point_stream_their_loads(options: CodegenOptions) -> None:
    """A reduction kernel whose stores are a row each reads its inputs once: loads that touch a
    distinct element at every point of the tile are marked evict_first (explore rounds 29-30).
    Not a load broadcast along the tile (b[r], reused by every row), not a kernel that also
    stores a point's value, not a looped kernel that reads its input again in a second loop."""
    g = graph(READ_ONLY)
    first = 'eviction_policy="evict_first"'

    def loads(src: str) -> list[str]:  # the loads of x and b, wrapped over lines or not
        return re.findall(r"tl\.load\(\s*[xb]_ptr(?:[^()]|\([^()]*\))*\)", src)

    src = check(g, plan_of(g, [["sb"], ["mn", "vr"], ["y2"]]), options)
    kernels = src.split("@triton.jit")
    (sb,) = [k for k in kernels if re.search(r"tl\.load\(\s*b_ptr", k)]
    xs = [ln for ln in loads(sb) if "x_ptr" in ln]
    assert xs and all(first in ln for ln in xs)
    assert not any(first in ln for ln in loads(sb) if "b_ptr" in ln)
    (var,) = [k for k in kernels if "triton_" in k and "- tmp" in k and "def triton_" in k]
    # looped (also under SPLIT: a second loop is not split): the mean, then a loop reading x again
    # (a mean absolute deviation: a variance would run in the mean's loop, `online_variance`):
    # not streaming; its second loop's load is x's last (tests/test_eviction.py)
    xv = [ln for ln in loads(var) if "x_ptr" in ln]
    assert all(first in ln for ln in xv) == (options is SMALL)
    assert ("def triton_red_" in var) == (options in (LOOPED, SPLIT))
    (y2,) = [k for k in kernels if "def triton_poi" in k]
    assert "eviction_policy" not in y2
    # the sum fused with a point's store: not streaming
    src = check(g, plan_of(g, [["sb", "y2"], ["mn", "vr"]]), options)
    (sby,) = [k for k in src.split("@triton.jit") if re.search(r"tl\.load\(\s*b_ptr", k)]
    assert "tl.store(y_ptr" in sby and "evict_first" not in sby


def test_streamed_loads_need_one_index_per_buffer() -> None:
    """Two loads of the same buffer at different indices (a shifted neighbour) may read an element
    twice: such a kernel keeps its loads unhinted, as does one with an indirect load."""
    text = READ_ONLY.replace("sum(x[20*i + r] * b[r])", "sum(x[20*i + r] * x[20*i + (r + 1) % 20])")
    g = graph(text)
    src = check(g, plan_of(g, [["sb"], ["mn", "vr"], ["y2"]]), SMALL)
    assert "evict_first" in src  # the mean and variance kernel
    (sb,) = [k for k in src.split("@triton.jit") if "% 20" in k and "def triton_per" in k]
    assert "evict_first" not in sb
    # a reduction over <= 16 points unrolled: its points' loads may overlap from one row to the
    # next (a pooling window), so they are not marked either
    text = READ_ONLY.replace('reduce: [[r, 20]], store: "s[i]"', 'reduce: [[r, 4]], store: "s[i]"')
    g = graph(text)
    src = check(g, plan_of(g, [["sb"], ["mn", "vr"], ["y2"]]), UNROLLED)
    (sb,) = [k for k in src.split("@triton.jit") if re.search(r"tl\.load\(\s*b_ptr", k)]
    assert "def triton_poi_" in sb and "evict_first" not in sb
    # an indirect load (rows picked by ids: a row may be read twice)
    text = """
format: fuseopt-graph/1
name: gathered_rows
buffers:
  x:   {shape: [10, 20], dtype: float32, role: input}
  ids: {shape: [6], dtype: int32, role: input}
  s:   {shape: [6], dtype: float32, role: output}
nodes:
  - {name: sg, loops: [[i, 6]], reduce: [[r, 20]], store: "s[i]", value: "sum(x[20*ids[i] + r])"}
"""
    g = graph(text)
    src = check(g, plan_of(g, [["sg"]]), SMALL)
    assert "tl.load(x_ptr" in src and "evict_first" not in src


def test_split_kernels_use_grid_dependency_control() -> None:
    """A split's finishing kernel waits for the partial results before its first load and is
    launched dependent on the partial kernel, which lets it launch after its last store; the
    module decides at run time (`_pdl(device)`: CUDA, compute capability 9.0+, False under the
    interpreter). Modules without a split carry none of it."""
    g = graph(READ_ONLY)
    src = check(g, plan_of(g, [["sb"], ["mn", "vr"], ["y2"]]), SPLIT)
    partial, finish = [k for k in src.split("@triton.jit") if "def triton_" in k and "PDL: tl.constexpr" in k]
    body = [ln.strip() for ln in finish.split("):\n", 1)[1].splitlines() if ln.strip()]
    body = [ln for ln in body if not re.fullmatch(r"\w+numel = \d+", ln)]  # sizes written in
    assert body[0] == "_gdc_wait(PDL)" and "PDL: tl.constexpr," in finish
    lines = [ln.strip() for ln in partial.splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[-1] == "_gdc_launch_dependents(PDL)" and lines[-2].startswith("tl.store(ws_")
    assert src.count("launch_pdl=pdl") == 1 and src.count("PDL=pdl") == 2
    assert "\nPDL = None\n" in src and "pdl = _pdl(device)" in src
    mod = load_module(src)
    assert mod._pdl(torch.device("cpu")) is False
    src = check(g, plan_of(g, [["sb"], ["mn", "vr"], ["y2"]]), SMALL)
    assert "rsplit" not in src and "PDL" not in src and "pdl" not in src


def test_split_grids_follow_the_target_multiprocessors() -> None:
    """Split reductions aim at 16 programs a multiprocessor of the GPU generated for: tsum's 128 x
    tiles take 16 chunks on an H200 (132), 8 on a GPU of 64 and none on a GPU of 8 (128 programs
    already); an explicit `split_programs` overrides. The finishing kernel and unsplit looped
    reductions size their grids by the multiprocessors too."""
    import json

    from fuseopt.io.load import load_text
    from tests.fixtures.workloads import FULL, WORKLOADS

    doc, _ = WORKLOADS["tsum"](**FULL["tsum"])
    st = optimize(load_text(json.dumps(doc), "tsum.json"))

    def grid(**kw: int) -> str | None:
        """The split partial kernel's grid; None when the reduction is not split."""
        src = emit_module(st.graph, st.plan, options=CodegenOptions(**kw))
        return src.split("triton_red_fused_mul_add_sum_0[")[-1].split("]")[0] if "rsplit" in src else None

    assert grid() == grid(multiprocessors=132) == "(128, 16)"
    assert grid(multiprocessors=64) == "(128, 8)"
    assert grid(multiprocessors=8) is None
    assert grid(multiprocessors=8, split_programs=2048) == "(128, 16)"
    assert grid(split_programs=0) is None

    def launches(**kw: int) -> list[tuple[str, str]]:
        """(grid, blocks and warps) of every launch."""
        src = emit_module(st.graph, st.plan, options=CodegenOptions(**kw))
        return re.findall(
            r"triton_\w+\[(\([^\]]*\))\]\([^)]*?(XBLOCK=\d+, R0_BLOCK=\d+, num_warps=\d+)", src, re.S
        )

    # The finishing kernel: about one program a multiprocessor (its 4096 results in 128 or 64).
    assert launches()[1] == ("(128,)", "XBLOCK=32, R0_BLOCK=16, num_warps=1")
    assert launches(multiprocessors=64)[1] == ("(64,)", "XBLOCK=64, R0_BLOCK=8, num_warps=1")
    # Unsplit looped reductions: about four programs a multiprocessor, 512 on an H200 (8 rows a
    # program), 64 rows at most; tsum reads along x, so never fewer rows than a 32-byte sector
    # of float32 (8), even for 1024 multiprocessors; there, 512 programs of 8 x 512 points keep
    # 8 MiB in flight where 1024 multiprocessors want 32 MiB (`looped_bytes_in_flight`), so each
    # program's loop widens to 8 x 2048, on `looped_widened_warps` (16) warps.
    assert launches(split_programs=0) == [("(512,)", "XBLOCK=8, R0_BLOCK=512, num_warps=8")]
    assert launches(split_programs=0, multiprocessors=1024) == [
        ("(512,)", "XBLOCK=8, R0_BLOCK=2048, num_warps=16")
    ]
    assert launches(split_programs=0, multiprocessors=8) == [("(64,)", "XBLOCK=64, R0_BLOCK=64, num_warps=8")]


SOFTMAX_ROWS = """
format: fuseopt-graph/1
name: softmax_{layout}
buffers:
  x:   {{shape: [{n}], dtype: float32, role: input}}
  b:   {{shape: [{r}], dtype: float32, role: input}}
  m:   {{shape: [64], dtype: float32}}
  s:   {{shape: [64], dtype: float32}}
  out: {{shape: [{n}], dtype: float32, role: output}}
nodes:
  - {{name: mx, loops: [[i, 64]], reduce: [[r, {r}]], store: "m[i]", value: "max(x[{xr}] + b[r])"}}
  - {{name: sm, loops: [[i, 64]], reduce: [[r, {r}]], store: "s[i]", value: "sum({fn}(x[{xr}] + b[r] - m[i]))"}}
  - {{name: o, loops: [[i, 64], [j, {r}]], store: "out[{r}*i + j]", value: "{fn}(x[{xj}] + b[j] - m[i]) / {row}(s[i])"}}
"""


def softmax_rows(layout: str, fn: str, row: str = "", r: int = 1024) -> str:
    """64 rows of `r` columns: a softmax-shaped graph (two reductions, then the points) over rows
    stored contiguously ("rows") or transposed."""
    xr, xj = (f"{r}*i + r", f"{r}*i + j") if layout == "rows" else ("64*r + i", "64*j + i")
    return SOFTMAX_ROWS.format(layout=layout, xr=xr, xj=xj, fn=fn, row=row, r=r, n=64 * r)


CLUSTER = "XBLOCK=32, R0_BLOCK=1024, num_warps=4, num_ctas=2"

COLUMN_SUMS = """
format: fuseopt-graph/1
name: column_{fn}
buffers:
  x:   {{shape: [65536], dtype: float32, role: input}}
  out: {{shape: [64], dtype: float32, role: output}}
nodes:
  - {{name: s, loops: [[i, 64]], reduce: [[r, 1024]], store: "out[i]", value: "sum({fn}(x[64*r + i]))"}}
"""


def _with_clusters(src: str, on: bool) -> str:
    """The module with its run-time cluster check decided (the interpreter ignores num_ctas but
    runs the cluster launch's tile)."""
    assert src.count("\nCLUSTERS = None\n") == 1
    return src.replace("\nCLUSTERS = None\n", f"\nCLUSTERS = {on}\n")


@pytest.mark.parametrize(
    "layout, fn, row, r, launches",
    [
        pytest.param(  # rows contiguous: 2 rows (golden kernels row_sum_odd, layernorm_t in the quick run)
            "rows", "exp", "", 1024, ["XBLOCK=2, R0_BLOCK=1024, num_warps=4"], marks=pytest.mark.slow
        ),
        pytest.param(
            "rows", "abs", "", 1024, ["XBLOCK=2, R0_BLOCK=1024, num_warps=4"], marks=pytest.mark.slow
        ),
        # transposed, an exp at every point: 16 rows of 1024 read 64-byte runs of a column, so a
        # cluster of two programs reads whole lines; 32 rows of 512 already do: no cluster
        pytest.param(
            "transposed",
            "exp",
            "",
            1024,
            [CLUSTER, "XBLOCK=16, R0_BLOCK=1024, num_warps=4"],
            marks=pytest.mark.slow,
        ),
        ("transposed", "exp", "", 512, ["XBLOCK=32, R0_BLOCK=512, num_warps=4"]),
        # transposed, two reductions, no per-point special function: one program of 8 warps would
        # hold a multiprocessor alone, so a cluster, at any row length
        pytest.param(
            "transposed",
            "abs",
            "",
            1024,
            [CLUSTER, "XBLOCK=32, R0_BLOCK=1024, num_warps=8"],
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "transposed",
            "abs",
            "sqrt",
            1024,
            [CLUSTER, "XBLOCK=32, R0_BLOCK=1024, num_warps=8"],
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "transposed",
            "abs",
            "",
            512,
            ["XBLOCK=64, R0_BLOCK=512, num_warps=4, num_ctas=2", "XBLOCK=64, R0_BLOCK=512, num_warps=8"],
            marks=pytest.mark.slow,
        ),
        # transposed, one reduction: one program of 32 rows, unless every point runs an exp
        ("column", "abs", "", 1024, ["XBLOCK=32, R0_BLOCK=1024, num_warps=8"]),
        ("column", "exp", "", 1024, [CLUSTER, "XBLOCK=16, R0_BLOCK=1024, num_warps=4"]),
    ],
)
def test_persistent_rows_follow_the_input_layout(
    layout: str, fn: str, row: str, r: int, launches: list[str]
) -> None:
    """A transposed input widens the persistent tile even though the bias (indexed by r alone)
    and the output are contiguous along r: the bias counts its elements, not 64 x r. A cluster of
    two programs where the GPU has clusters (with a single-program launch for the others) when
    the single program would hold a multiprocessor alone in a kernel of two reductions, or would
    read less than a 128-byte line of each column under a per-point exp (a sqrt of a row's sum
    does not count). Every launch runs against the interpreter."""
    from fuseopt.io.load import load_text

    text = COLUMN_SUMS.format(fn=fn) if layout == "column" else softmax_rows(layout, fn, row, r)
    st = optimize(load_text(text, "softmax.yaml"))
    assert len(st.plan.kernels) == 1
    persistent = CodegenOptions(strategy="persistent_row")  # a few rows: the cost model loops them
    src = emit_module(st.graph, st.plan, options=persistent)
    assert re.findall(r"XBLOCK=\d+, R0_BLOCK=\d+, num_warps=\d+(?:, num_ctas=\d+)?", src) == launches
    if len(launches) == 1:
        assert "_clusters" not in src
        compare_with_reference(st.graph, st.plan, source=src)  # the default launch, run
        return
    assert "if _clusters(device):" in src and f"x=64 x r0={r}; 2 programs a tile on GPUs with clusters" in src
    compare_with_reference(st.graph, st.plan, source=src)  # CPU tensors: the fallback
    for on in (True, False):
        compare_with_reference(st.graph, st.plan, source=_with_clusters(src, on))
    off = emit_module(st.graph, st.plan, options=CodegenOptions(clusters=False, strategy="persistent_row"))
    assert "_clusters" not in off and launches[1] in off


def test_pointwise_straddling_the_reduction_split() -> None:
    """n0's one loop covers x and r0 together (no loop boundary at the split): a flat index."""
    text = """
format: fuseopt-graph/1
name: flat
buffers:
  x:   {shape: [6], dtype: float32, role: input}
  t:   {shape: [6], dtype: float32}
  out: {shape: [2], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 6]], store: "t[i]", value: "2 * x[i]"}
  - {name: n1, loops: [[a, 2]], reduce: [[r, 3]], store: "out[a]", value: "sum(t[3*a + r])"}
"""
    g = graph(text)
    for opts in (SMALL, LOOPED):
        src = check(g, plan_of(g, [["n0", "n1"]]), opts)
        assert not re.search(r"\bt_ptr\b", src)


# -- loads ---------------------------------------------------------------------------------------------------------
def test_masked_loads_padding_and_negative_floordiv() -> None:
    text = """
format: fuseopt-graph/1
name: pad
buffers:
  x:   {shape: [4, 9], dtype: float32, role: input}
  k:   {shape: [4, 9], dtype: int32, role: input}
  out: {shape: [4, 9], dtype: float32, role: output}
  o2:  {shape: [4, 9], dtype: int32, role: output}
nodes:
  - name: n0
    loops: [[i0, 4], [i1, 9]]
    store: "out[9*i0 + i1]"
    value: "masked(i1 >= 1, x[9*i0 + i1 - 1], 0.0) + masked(i1 < 8, x[9*i0 + i1 + 1], -inf) + masked(i1 >= 2, x[9*i0 + (i1 - 2) // 2], 1.5)"
  - name: n1
    loops: [[i0, 4], [i1, 9]]
    store: "o2[9*i0 + i1]"
    value: "masked((i1 >= 1) & (i0 < 3), k[9*i0 + i1 - 1] + masked(i0 >= 1, k[9*i0 + i1 - 10], 7), -1)"
"""
    g = graph(text)
    src = check(g, unfused_plan(g), SMALL)
    assert "other=0.0" in src and "other=0" in src


def test_indirect_loads_and_index_values() -> None:
    text = """
format: fuseopt-graph/1
name: gather
buffers:
  table: {shape: [10, 4], dtype: float32, role: input}
  ids:   {shape: [6], dtype: int32, role: input}
  out:   {shape: [6, 4], dtype: float32, role: output}
  idx:   {shape: [6, 4], stride: [1, 6], dtype: int64, role: output}
  f:     {shape: [6, 4], dtype: float16, role: output}
nodes:
  - {name: n0, loops: [[i0, 6], [i1, 4]], store: "out[4*i0 + i1]", value: "table[4*ids[i0] + i1] * index(i1)"}
  - {name: n1, loops: [[i0, 6], [i1, 4]], store: "idx[i0 + 6*i1]", value: "index(5*i0 - i1) * 3 + i0"}
  - {name: n2, loops: [[i0, 6], [i1, 4]], store: "f[4*i0 + i1]", value: "cast(index((i0 - 3) // 2), float32) / 2"}
"""
    g = graph(text)
    check(g, unfused_plan(g), SMALL)
    check(g, plan_of(g, [["n0", "n1", "n2"]]), SMALL)


# -- dtypes and ops ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [d.value for d in DType])
def test_dtypes_round_trip(dt: str) -> None:
    text = f"""
format: fuseopt-graph/1
name: dtypes
buffers:
  x:   {{shape: [3, 5], dtype: {dt}, role: input}}
  t:   {{shape: [3, 5], dtype: {dt}}}
  out: {{shape: [3, 5], stride: [1, 3], dtype: {dt}, role: output}}
  f:   {{shape: [3, 5], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[i0, 3], [i1, 5]], store: "t[5*i0 + i1]", value: "where(x[5*i0 + i1] > 1, x[5*i0 + i1] + 1, x[5*i0 + i1] * 3)"}}
  - {{name: n1, loops: [[i0, 3], [i1, 5]], store: "out[i0 + 3*i1]", value: "t[5*i0 + i1]"}}
  - {{name: n2, loops: [[i0, 3], [i1, 5]], store: "f[5*i0 + i1]", value: "cast(t[5*i0 + i1], float32) / 3"}}
"""
    g = graph(text)
    check(g, unfused_plan(g), SMALL)
    check(g, plan_of(g, [["n0", "n1", "n2"]]), SMALL)  # fused: t rounded through its dtype


FLOAT_UNARY = [
    "exp",
    "exp2",
    "log",
    "log2",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "abs",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "erf",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "reciprocal",
    "isnan",
    "isinf",
]
INT_UNARY = [
    "abs",
    "relu",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "exp",
    "sqrt",
    "reciprocal",
    "isnan",
    "isinf",
]


def _zoo(dt: str, exprs: list[str]) -> str:
    bufs = "\n".join(f"  o{i}: {{shape: [4, 6], dtype: float32, role: output}}" for i in range(len(exprs)))
    nodes = "\n".join(
        f'  - {{name: n{i}, loops: [[i0, 4], [i1, 6]], store: "o{i}[6*i0 + i1]", value: "cast({e}, float32)"}}'
        for i, e in enumerate(exprs)
    )
    return f"""
format: fuseopt-graph/1
name: zoo
buffers:
  a: {{shape: [4, 6], dtype: {dt}, role: input}}
  b: {{shape: [4, 6], stride: [1, 4], dtype: {dt}, role: input}}
{bufs}
nodes:
{nodes}
"""


def test_float_unary_ops() -> None:
    exprs = [f"{op}(a[6*i0 + i1] * 3)" for op in FLOAT_UNARY] + [
        "-a[6*i0 + i1]",
        "round(a[6*i0 + i1] * 0 + 2.5)",
    ]
    g = graph(_zoo("float32", exprs))
    check(g, unfused_plan(g), SMALL)


def test_float_binary_ops() -> None:
    a, b = "a[6*i0 + i1]", "b[i0 + 4*i1]"
    exprs = [
        f"{a} + {b}", f"{a} - {b}", f"{a} * {b}", f"{a} / {b}", f"{a} // {b}", f"{a} % {b}",
        f"maximum({a}, {b})", f"minimum({a}, log({b}))", f"pow({a}, {b})", f"pow(abs({a}), {b})",
        f"pow({a}, 2)", f"pow({a}, 3)", f"pow({a}, 0.5)", f"pow({a}, -1)", f"pow({a}, 0)", f"pow(2, {a})",
        f"atan2({a}, {b})", f"fmod({a} * 4, {b})", f"{a} < {b}", f"{a} >= {b}", f"{a} == {a}",
        f"({a} > 0) & ({b} > 0)", f"({a} > 0) | ~({b} > 0)", f"where({a} != {b}, {a}, 1)",
        f"{a} // 0.5 + {a} % -1.5",
    ]  # fmt: skip
    g = graph(_zoo("float32", exprs))
    check(g, unfused_plan(g), SMALL)


def test_division_by_a_constant_multiplies_by_its_reciprocal() -> None:
    a = "a[6*i0 + i1]"
    g = graph(_zoo("float32", [f"{a} / 9", f"{a} / -0.3", f"{a} / 1024", f"{a} / 0", f"{a} / 1e-45"]))
    src = check(g, unfused_plan(g), SMALL)
    ninth, third = np.float32(1) / np.float32(9), np.float32(1) / np.float32(-0.3)
    assert f"* {float(ninth)!r}" in src and f"* {float(third)!r}" in src and "* 0.0009765625" in src
    # zero and a divisor whose reciprocal overflows keep the division (inf, NaN, no wrong 0)
    assert re.search(r"/ 0\.0\b", src) and re.search(r"/ 1e-45\b", src), src
    # an integer dividend and divisor: true division in float32, by the same reciprocal
    g = graph(_zoo("int32", [f"{a} / 9", f"{a} / (i0 * 0 + 3)"]))
    src = check(g, unfused_plan(g), SMALL)
    assert f"* {float(ninth)!r}" in src and f"* {float(np.float32(1) / np.float32(3))!r}" in src
    # float64 divides correctly rounded: only a power of two (exact reciprocal) becomes a product
    g = graph(_zoo("float64", [f"{a} / 3", f"{a} / 4"]))
    src = check(g, unfused_plan(g), SMALL)
    assert "tl.full([1], 3.0, tl.float64)" in src and "tl.full([1], 0.25, tl.float64)" in src
    assert src.count("tmp0 / tmp1") == 1 and src.count("tmp0 * tmp1") == 1 and "4.0," not in src


def _below_by_reciprocal(dtype: torch.dtype, divisor: float, n: int) -> torch.Tensor:
    """`n` multiples of `divisor`, exact in `dtype`, whose product by float32(1/divisor) in float32
    floors to the integer below their exact quotient."""
    k = torch.arange(-(2**17), 2**17, dtype=torch.float64)
    a = (k * divisor).to(dtype)
    exact = a.double() == k * divisor
    recip = torch.tensor(1.0 / divisor, dtype=torch.float32)
    below = torch.floor(a.float() * recip).double() < k
    found = a[exact & below]
    assert found.numel() >= n
    return found[:n].clone()


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_a_rounded_quotient_is_correctly_rounded(dt: str) -> None:
    """floor, ceil, trunc and round of a quotient, and its cast to an integer, round the correctly
    rounded quotient, as torch's do: a product by the divisor's reciprocal (and Triton's float32
    `/`, within 2 ulp) lands an ulp below an exact integer quotient and rounds to the integer below
    (`floor(-700000.0 / 7.0)` gave -100001). Elsewhere a quotient keeps the reciprocal."""
    a, b = "a[6*i0 + i1]", "b[i0 + 4*i1]"
    exprs = [
        f"floor({a} / 7)", f"ceil({a} / -7)", f"trunc({a} / 7)", f"round({a} / 7)", f"cast({a} / 7, int32)",
        f"floor({a} / {b})", f"floor({a} / 8)", f"{a} / 7",
    ]  # fmt: skip
    g = graph(_zoo(dt, exprs))
    plan = unfused_plan(g)
    src = emit_module(g, plan, options=SMALL)
    assert src.count("tl.div_rn(") == 6 and "* 0.125" in src
    assert f"* {float(np.float32(1) / np.float32(7))!r}" in src  # the plain quotient
    dtype = getattr(torch, dt)
    inputs = {"a": _below_by_reciprocal(dtype, 7.0, 24), "b": torch.full((24,), 7.0, dtype=dtype)}
    expected = run_graph(g, {k: v.clone() for k, v in inputs.items()})
    device = "cuda" if torch.cuda.is_available() else "cpu"  # on a GPU, the compiled kernel's division
    got = run_module(src, {k: v.to(device) for k, v in inputs.items()})
    for i in range(len(exprs) - 1):  # the rounded ones exactly (the plain quotient is within 2 ulp)
        torch.testing.assert_close(got[f"o{i}"].cpu(), expected[f"o{i}"], rtol=0, atol=0)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(width=32, allow_nan=False, allow_infinity=False),
    st.floats(width=32, allow_nan=False, allow_infinity=False).filter(lambda c: c != 0),
)
def test_reciprocal_product_within_div_full_accuracy(x: float, c: float) -> None:
    """x * float32(1/c) is within 1.5 ulp of the true quotient: no worse than Triton's float32
    division (div.full.f32, 2 ulp) that it replaces; exact for a power of two."""
    recip = divisor_reciprocal(c, DType.float32)
    exact = x / c  # float64 quotient of two float32 values: exact to 2^-53
    assume(recip is not None and 2**-125 < abs(exact) < 2**127)
    assert recip is not None
    got = float(np.float32(x) * np.float32(recip))
    ulp = float(np.spacing(np.float32(abs(exact))))
    assert abs(got - exact) <= 1.5 * ulp
    if abs(math.frexp(c)[0]) == 0.5:
        assert got == float(np.float32(exact))


@pytest.mark.parametrize("dt", ["int32", "int64", "int8", "uint8", "int16"])
def test_integer_ops(dt: str) -> None:
    a, b = "a[6*i0 + i1]", "b[i0 + 4*i1]"
    exprs = [f"{op}({a} - 3)" for op in INT_UNARY] + [
        f"{a} + {b}", f"{a} - {b}", f"{a} * {b} * 37", f"{a} // ({b} + 1)", f"{a} % ({b} + 1)",
        f"(3 - {a}) // 2", f"(3 - {a}) % 2", f"({a} - 4) // ({b} + 1)", f"fmod({a} - 4, {b} + 1)",
        f"maximum({a}, {b})", f"minimum({a}, {b})", f"pow({a}, {b})", f"{a} / ({b} + 1)",
        f"~{a}", f"{a} & {b}", f"{a} | {b}", f"-{a}", f"{a} + 200", f"where({a} > {b}, {a}, -1)",
    ]  # fmt: skip
    g = graph(_zoo(dt, exprs))
    check(g, unfused_plan(g), SMALL)


def test_low_precision_is_computed_in_float32() -> None:
    text = """
format: fuseopt-graph/1
name: lp
buffers:
  x:   {shape: [8, 5], dtype: bfloat16, role: input}
  y:   {shape: [8, 5], dtype: float16, role: input}
  out: {shape: [8, 5], dtype: float16, role: output}
  s:   {shape: [8], dtype: bfloat16, role: output}
nodes:
  - {name: n0, loops: [[i0, 8], [i1, 5]], store: "out[5*i0 + i1]", value: "x[5*i0 + i1] * y[5*i0 + i1] + 1e-3"}
  - {name: n1, loops: [[i0, 8]], reduce: [[r0, 5]], store: "s[i0]", value: "sum(x[5*i0 + r0] * y[5*i0 + r0])"}
"""
    g = graph(text)
    src = check(g, unfused_plan(g), SMALL)
    assert ".to(tl.float32)" in src and "_to_bf16(" in src and ".to(tl.float16)" in src


# -- extern and template ---------------------------------------------------------------------------------------
LIBRARY = """
format: fuseopt-graph/1
name: library
buffers:
  a:    {shape: [4, 6], dtype: float32, role: input}
  bt:   {shape: [6, 5], stride: [1, 6], dtype: float32, role: input}
  bias: {shape: [4, 5], dtype: float32, role: input}
  p:    {shape: [2, 3, 4], dtype: float32, role: input}
  q:    {shape: [2, 4, 3], stride: [12, 1, 4], dtype: float32, role: input}
  c:    {shape: [4, 5], stride: [1, 4], dtype: float32, role: output}
  d:    {shape: [4, 5], dtype: float32, role: output}
  e:    {shape: [2, 3, 3], dtype: float32, role: output}
  t:    {shape: [4, 5], dtype: float32}
  out:  {shape: [4, 5], dtype: float32, role: output}
nodes:
  - {name: mm0, kind: extern, op: mm, inputs: [a, bt], output: c}
  - {name: am0, kind: extern, op: addmm, inputs: [bias, a, bt], output: d}
  - {name: bm0, kind: extern, op: bmm, inputs: [p, q], output: e}
  - name: tm0
    kind: template
    op: mm
    inputs: [a, bt]
    output: t
    choices: [{name: triton_mm_0, time_us: 3.0}, {name: extern_mm, time_us: 4.0}]
    epilogue_fusion: true
  - {name: n4, loops: [[i0, 4], [i1, 5]], store: "out[5*i0 + i1]", value: "relu(t[5*i0 + i1]) + c[i0 + 4*i1]"}
"""


def test_extern_and_template_with_epilogue() -> None:
    g = graph(LIBRARY)
    check(g, unfused_plan(g), SMALL)
    src = check(g, plan_of(g, [["mm0"], ["am0"], ["bm0"], ["tm0", "n4"]]), SMALL)
    assert "torch.addmm(" in src and "torch.bmm(" in src
    assert "a fused epilogue is a separate Triton kernel" in src
    assert "(epilogue of template tm0)" in src


# -- launch parameters, int64, determinism, module plumbing -----------------------------------------------------------
def test_int64_indexing_when_numel_exceeds_int32() -> None:
    text = """
format: fuseopt-graph/1
name: big
buffers:
  x:   {shape: [65536, 32768], dtype: float16, role: input}
  out: {shape: [65536, 32768], dtype: float16, role: output}
nodes:
  - {name: n0, loops: [[i0, 65536], [i1, 32768]], store: "out[32768*i0 + i1]", value: "x[32768*i0 + i1] * 2"}
"""
    src = emit_module(graph(text), unfused_plan(graph(text)))
    assert "tl.program_id(0).to(tl.int64) * XBLOCK" in src
    small = emit_module(graph(CHAIN), unfused_plan(graph(CHAIN)))
    assert "tl.int64" not in small


def test_autotune_configs() -> None:
    big = graph(softmax_text(64, 1000))
    src = emit_module(big, plan_of(big, [["n0", "n1", "n2", "n3", "n4"]]), autotune=True)
    assert src.count("@triton.autotune(") == 1
    assert src.count("triton.Config(") >= 3
    assert 'key=["xnumel", "r0_numel"]' in src
    assert '[_grid({"XBLOCK": 64})](' in src
    compile(src, "kernels.py", "exec")
    g = graph(SOFTMAX)
    plan = plan_of(g, [["n0", "n1", "n2", "n3", "n4"]])
    src = emit_module(g, plan, autotune=True)
    if torch.cuda.is_available():
        compare_with_reference(g, plan, source=src)
    else:
        load_module(src)  # decorating needs no driver; running autotune does (GPU only)


def test_autotune_keeps_cluster_configs_to_gpus_that_have_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """--autotune on a transposed softmax: the cluster launch is a candidate that `_prune`
    drops when autotune tunes on a device without clusters (the CPU, capability 8.0) and keeps
    where it has them (9.0) or where CLUSTERS, set at any time before tuning, says so."""
    from fuseopt.io.load import load_text

    text = softmax_rows("transposed", "exp")
    st = optimize(load_text(text, "softmax.yaml"))
    src = emit_module(st.graph, st.plan, autotune=True)
    assert 'prune_configs_by={"early_config_prune": _prune}' in src
    assert "if _clusters(device):" not in src
    assert 'triton.Config({"XBLOCK": 32, "R0_BLOCK": 1024}, num_warps=4, num_ctas=2)' in src
    m = load_module(src)
    kernel = next(v for k, v in vars(m).items() if k.startswith("triton_per"))
    assert [c.num_ctas for c in kernel.configs].count(2) == 1
    args = {"x_ptr": torch.zeros(4), "xnumel": 64}
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # tuning on a device: every candidate it has
    for on, kept in ((None, 0), (False, 0), (True, 1)):
        m.CLUSTERS = on
        pruned = m._prune(kernel.configs, args)
        assert [c.num_ctas for c in pruned].count(2) == kept
        assert len(pruned) == len(kernel.configs) - 1 + kept
    m.CLUSTERS = None
    monkeypatch.setattr(torch.version, "hip", None)
    for capability, ok in (((8, 0), False), ((9, 0), True)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda _d, c=capability: c)
        assert m._clusters(torch.device("cuda", 0)) is ok
    if torch.cuda.is_available():  # tuning runs every surviving candidate on the GPU
        compare_with_reference(st.graph, st.plan, source=src)


def test_kernel_names_and_comments() -> None:
    g = graph(APBT_FUSABLE)
    src = emit_module(g, plan_of(g, [["n0", "n1", "n2"]]))
    assert "def triton_poi_fused_mul_add_0(" in src
    assert "# plan kernel k0: pointwise, 2D tile (transposed access)" in src
    assert "#   n1 [i1=6, i0=10]: buf1[i1 + 6 * i0] = 3 * y[i1 + 6 * i0]  [not stored]" in src
    g = graph(SOFTMAX)
    assert "def triton_per_fused_add_max_sub_exp_sum_0(" in emit_module(
        g, plan_of(g, [["n0", "n1", "n2", "n3", "n4"]])
    )
    assert "def triton_red_fused_" in emit_module(g, unfused_plan(g), options=LOOPED)


def test_write_module(tmp_path: object) -> None:
    from pathlib import Path

    g = graph(CHAIN)
    path = write_module(g, unfused_plan(g), Path(str(tmp_path)) / "out")
    assert path.name == "kernels.py"
    assert path.read_text() == emit_module(g, unfused_plan(g))
    out = run_module(path, _on_device(make_inputs(g)))
    assert set(out) == {"out"}


PYTHON_NAMES = """
format: fuseopt-graph/1
name: python_names
buffers:
  __class__:    {shape: [6, 10], dtype: float32, role: input}
  __name__:     {shape: [10], dtype: float32, role: input}
  torch:        {shape: [6, 10], dtype: float32}
  tl:           {shape: [6], dtype: float32}
  __builtins__: {shape: [6, 10], dtype: float32, role: output}
  call:         {shape: [6], dtype: float32, role: output}
nodes:
  - {name: __init__, loops: [[__i, 6], [__j, 10]], store: "torch[10*__i + __j]",
     value: "__class__[10*__i + __j] + __name__[__j]"}
  - {name: __n, loops: [[__i, 6]], reduce: [[__r, 10]], store: "tl[__i]", value: "sum(torch[10*__i + __r])"}
  - {name: tl, loops: [[__i, 6], [__j, 10]], store: "__builtins__[10*__i + __j]", value: "torch[10*__i + __j] / tl[__i]"}
  - {name: n3, loops: [[__i, 6]], store: "call[__i]", value: "tl[__i] * 2"}
"""


@pytest.mark.parametrize("options", [None, SMALL, LOOPED, SPLIT], ids=["default", "small", "looped", "split"])
def test_buffers_and_loops_named_like_python(options: CodegenOptions | None) -> None:
    # Names docs/format.md allows that Python or the module itself uses (dunders, torch, tl, call):
    # one fused kernel whose locals are renamed where they would shadow what the module needs.
    st_ = optimize(graph(PYTHON_NAMES))
    assert [sorted(k.nodes) for k in st_.plan.kernels] == [sorted(("__init__", "__n", "tl", "n3"))]
    src = check(st_.graph, st_.plan, options)
    assert '__name___ = _input(inputs, "__name__"' in src  # a builtin's name, renamed
    assert "call_ = _empty(" in src and '"call": call_' in src


def test_mismatch_names_buffer_and_element() -> None:
    g = graph(CHAIN)
    src = emit_module(g, unfused_plan(g)).replace("tmp2 = tmp1 * 2.0", "tmp2 = tmp1 * 2.5")
    with pytest.raises(
        CheckFailed, match=r"buffer 'out': generated code differs .* worst at index \[\d+, \d+\]"
    ):
        compare_with_reference(g, unfused_plan(g), source=src)


def test_unwritten_elements_fail_the_comparison() -> None:
    g = graph(CHAIN)
    src = emit_module(g, unfused_plan(g), options=SMALL).replace("[(4,)]", "[(3,)]")  # skip the last program
    assert "[(3,)]" in src
    with pytest.raises(CheckFailed, match="buffer 'out'"):
        compare_with_reference(g, unfused_plan(g), source=src)


def _ruff() -> str | None:
    return shutil.which("ruff")


@pytest.mark.skipif(_ruff() is None, reason="ruff not installed")
@pytest.mark.parametrize(
    "text",
    [CHAIN, APBT, SOFTMAX, LIBRARY, softmax_rows("transposed", "exp")],
    ids=["chain", "apbt", "softmax", "library", "clusters"],
)
@pytest.mark.parametrize("autotune", [False, True])
def test_generated_code_is_formatted_and_lint_clean(text: str, autotune: bool) -> None:
    g = graph(text)
    fused = optimize(g)
    for gr, plan in ((g, unfused_plan(g)), (fused.graph, fused.plan)):
        src = emit_module(gr, plan, autotune=autotune)
        ruff = _ruff()
        assert ruff is not None
        fmt = subprocess.run(
            [ruff, "format", "--isolated", "--line-length", "110", "--diff", "-"],
            input=src,
            capture_output=True,
            text=True,
        )
        assert fmt.stdout == "", fmt.stdout
        lint = subprocess.run(
            [ruff, "check", "--isolated", "--line-length", "110", "--select", "E,F,W,B,UP,SIM", "-"],
            input=src,
            capture_output=True,
            text=True,
        )
        assert lint.returncode == 0, lint.stdout


# -- plan contract ------------------------------------------------------------------------------------------------
def test_plan_contract_errors() -> None:
    g = graph(SOFTMAX)

    def kernels(*groups: tuple[str, str, tuple[str, ...]]) -> Plan:
        return Plan(g.name, "", tuple(Kernel(n, ns, kind, (), (), 0) for n, kind, ns in groups))

    with pytest.raises(CodegenError, match="nodes not in any plan kernel: n4"):
        emit_module(g, kernels(("k0", "reduction", ("n0", "n1", "n2", "n3"))))
    with pytest.raises(CodegenError, match="'n3' is in two plan kernels"):
        emit_module(
            g, kernels(("k0", "reduction", ("n0", "n1", "n2", "n3")), ("k1", "pointwise", ("n3", "n4")))
        )
    with pytest.raises(CodegenError, match="lists 'n1', which reads .*, before 'n0', which writes it"):
        emit_module(g, kernels(("k0", "reduction", ("n1", "n0", "n2", "n3", "n4"))))
    with pytest.raises(CodegenError, match="before kernel 'k1' writes it"):
        emit_module(g, kernels(("k0", "reduction", ("n2", "n3", "n4")), ("k1", "reduction", ("n0", "n1"))))
    with pytest.raises(CodegenError, match="pointwise kernel 'k0' contains a reduction node"):
        emit_module(g, kernels(("k0", "pointwise", ("n0", "n1", "n2", "n3", "n4"))))
    with pytest.raises(CodegenError, match="'n4' has 6 points, 'n3' has 60"):
        emit_module(
            g,
            kernels(
                ("k0", "reduction", ("n0",)),
                ("k1", "pointwise", ("n1",)),
                ("k2", "reduction", ("n2",)),
                ("k3", "pointwise", ("n3", "n4")),
            ),
        )


def test_unknown_op_is_an_error_naming_it() -> None:
    g = graph(CHAIN)
    n1 = g.node("n1")
    assert isinstance(n1, ComputeNode)
    bad = dataclasses.replace(n1, value=Unary("frobnicate", n1.value, dtype=DType.float32))
    g = g.replace(nodes=(g.nodes[0], bad))
    with pytest.raises(CodegenError, match="'frobnicate'"):
        emit_module(g, unfused_plan(g))


def test_captured_pool_divisor_folds_to_a_literal() -> None:
    """Inductor's avg_pool2d lowering computes the window's divisor per element with minimums;
    over the loop ranges they fold and the polynomial is 9, so the kernel multiplies by float32(1/9)
    (a division by a literal becomes a product with its reciprocal)."""
    from tests.fixtures.programs import captured

    g, _ = captured("avgpool_cl", small=True)
    assert "minimum" in str(g.nodes[0].value)
    stage = optimize(g)
    src = check(stage.graph, stage.plan)
    kernel = src.split("@triton.jit\ndef triton_")[1]
    assert "* 0.1111111119389534" in kernel and " / " not in kernel and "minimum" not in kernel


def test_fused_read_through_a_flattened_segment() -> None:
    """A producer over (8, 4) loops writing its storage in order and a consumer over (4, 8) loops
    reading it in order agree element for element on the flat index; inside a 2D tile the
    consumer's loops straddle the tile split (a flat segment), so `8*(f // 8) + f % 8` must be
    merged into f before it is split onto the tile's axes. (Once a CodegenError on the planner's
    fused plans of benchmarks/graphgen.py graphs whose blocks are not square.)"""
    import json

    from fuseopt.io.load import load_text
    from tests.fixtures.graphgen import make_graph

    for rows, cols in ((4, 8), (8, 4), (2, 6)):
        g = load_text(json.dumps(make_graph(24, 1, rows=rows, cols=cols)), "g.json")
        stage = optimize(g)
        src = check(stage.graph, stage.plan)
        assert "YBLOCK" in src  # the transposed reads made 2D tiles


def _scaled_rows(rows: int, cols: int, dtype: str) -> str:
    return f"""
format: fuseopt-graph/1
name: scaled_rows
buffers:
  x: {{shape: [{rows}, {cols}], dtype: {dtype}, role: input}}
  y: {{shape: [{rows}, {cols}], dtype: {dtype}, role: output}}
  s: {{shape: [{rows}], dtype: float32, role: output}}
nodes:
  - {{name: p, loops: [[i, {rows}], [j, {cols}]], store: "y[{cols}*i + j]", value: "x[{cols}*i + j] * 2.0 + 1.0"}}
  - {{name: s, loops: [[i, {rows}]], reduce: [[r, {cols}]], store: "s[i]", value: "sum(x[{cols}*i + r])"}}
"""


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 70), st.integers(1, 40), st.sampled_from(["float32", "bfloat16", "float16"]))
@example(6, 16, "float32")  # a row split: the pointwise kernel's tile is 6 rows x 16 columns
def test_sizes_triton_cannot_factor_are_written_into_the_kernel(rows: int, cols: int, dtype: str) -> None:
    """Triton learns of an integer argument only whether it is a multiple of 16, so a mask over a
    size that is even but not a multiple of 16 could not be read as vectors: each such size a
    kernel uses is written into it (`xnumel = 1002`, compiled: tests/test_compile_sm90.py), and no
    other. Either way the kernels match the reference."""
    g = graph(_scaled_rows(rows, cols, dtype))
    src = check(g, plan_of(g, [["p"], ["s"]]), SMALL)
    kernels = [k for k in src.split("@triton.jit") if "def triton_" in k]
    sizes = {"p": {rows * cols, rows, cols}, "s": {rows, cols}}  # p's tile may split rows x columns
    for text, node in zip(kernels, ("p", "s"), strict=True):
        body = text.split("):\n", 1)[1]
        written = [(n, int(v)) for n, v in re.findall(r"^    (\w+numel) = (\d+)$", body, re.M)]
        for name, value in written:
            assert value % 2 == 0 and value % 16 and value in sizes[node], (name, value)
            assert re.search(rf"\b{name}\b", body.split(f"{name} = {value}\n", 1)[1]), name
        n = rows * cols
        if node == "p" and "xmask = xindex < xnumel" in body and n % 2 == 0 and n % 16:
            assert ("xnumel", n) in written


def test_written_size_precedes_every_use() -> None:
    g = graph(_scaled_rows(3, 334, "bfloat16"))  # 1002 points: 2 x 501, Triton knew neither factor
    src = check(g, plan_of(g, [["p"], ["s"]]), SMALL)
    kernel = src.split("def triton_poi_fused_mul_add_0(", 1)[1].split("\n\n\n", 1)[0]
    body = kernel.split("):\n", 1)[1].splitlines()
    assert body[0] == "    xnumel = 1002" and sum("xnumel" in line for line in body) == 2
