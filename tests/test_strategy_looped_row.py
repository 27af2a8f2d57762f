"""`codegen.strategies.looped_row`: a looped reduction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import LoopedRow, looped_row
from fuseopt.codegen.strategies.base import Work
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.targets.h200 import H200
from tests.strategy_graphs import launches, strategies


def test_looped_row_taken() -> None:
    for name in ["row_sum_looped", "argmax_looped_bf16"]:
        assert strategies(name) == [LoopedRow], name


def test_looped_row_not_taken() -> None:
    for name in ["row_sum_odd", "col_sum_split", "pointwise_1d_fp16"]:
        assert LoopedRow not in strategies(name), name


def test_looped_row_takes_every_reduction() -> None:
    graph, launch = launches("row_sum_odd")[0]
    assert looped_row.applies(graph, launch, CodegenOptions()) is not None
    graph, launch = launches("pointwise_1d_fp16")[0]
    assert looped_row.applies(graph, launch, CodegenOptions()) is None


@pytest.mark.parametrize("dtype, item", [("bfloat16", 2), ("float32", 4)])
def test_a_tile_read_along_x_reads_a_sector_a_row(dtype: str, item: int) -> None:
    """A column sum (data contiguous along x) over many columns: about four programs a
    multiprocessor would give 2 columns a program; each row of the tile still reads
    `looped_outer_x_bytes` (a 32-byte sector), and the rule is what sets it."""
    text = f"""
format: fuseopt-graph/1
name: colsum
buffers:
  x: {{shape: [6000, 1100], dtype: {dtype}, role: input}}
  out: {{shape: [1100], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[j, 1100]], reduce: [[i, 6000]], store: "out[j]", value: "sum(x[1100*i + j])"}}
"""
    stage = optimize(load_text(text, "colsum.yaml"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    t = CodegenOptions().tuning
    planned = looped_row.applies(stage.graph, launch, CodegenOptions())
    assert planned is not None
    assert planned.config.block("XBLOCK") * item == t.looped_outer_x_bytes
    off = replace(H200, tuning=replace(t, looped_outer_x_bytes=0))
    planned_off = looped_row.applies(stage.graph, launch, CodegenOptions(target=off))
    assert planned_off is not None and planned_off.config.block("XBLOCK") * item < t.looped_outer_x_bytes


def _row_launch(rows: int, cols: int, dtype: str) -> tuple[object, ComputeLaunch]:
    text = f"""
format: fuseopt-graph/1
name: rows
buffers:
  x: {{shape: [{rows}, {cols}], dtype: {dtype}, role: input}}
  m: {{shape: [{rows}], dtype: float32}}
  out: {{shape: [{rows}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[i, {rows}]], reduce: [[r, {cols}]], store: "m[i]", value: "max(x[{cols}*i + r])"}}
  - {{name: n1, loops: [[i, {rows}]], reduce: [[r, {cols}]], store: "out[i]", value: "sum(exp(x[{cols}*i + r] - m[i]))"}}
"""
    stage = optimize(load_text(text, "rows.yaml"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    return stage.graph, launch


@pytest.mark.parametrize(
    ("rows", "cols", "dtype", "xblock", "r0_block"),
    [
        (512, 50257, "bfloat16", 1, 4096),  # 512 programs of 1 row: 4 MiB an iteration at 4096
        (256, 128256, "float32", 1, 4096),  # capped at looped_max_r0_block
        (2048, 50257, "float32", 4, 1024),  # 512 programs of 4 rows: 8 MiB in flight already
        (512, 1500, "bfloat16", 1, 2048),  # never wider than the row
    ],
)
def test_few_rows_widen_the_loop_to_keep_bytes_in_flight(
    rows: int, cols: int, dtype: str, xblock: int, r0_block: int
) -> None:
    """Rows too few for the programs a multiprocessor aims at: each program reads more an
    iteration until all of them read `looped_bytes_in_flight` a multiprocessor (Little's law),
    on `looped_widened_warps` warps (a point a thread at least); a tile that needed no widening
    keeps one warp per `reduction_points_per_warp`. Without the rule, R0_BLOCK stays at
    max_r0_block and the warps follow the points."""
    graph, launch = _row_launch(rows, cols, dtype)
    t = CodegenOptions().tuning
    planned = looped_row.applies(graph, launch, CodegenOptions())
    assert planned is not None and planned.config.block("XBLOCK") == xblock
    assert planned.config.block("R0_BLOCK") == r0_block
    by_points = min(t.max_warps, xblock * r0_block // t.reduction_points_per_warp)
    widened = r0_block > t.max_r0_block
    want = max(by_points, min(t.looped_widened_warps, xblock * r0_block // 32)) if widened else by_points
    assert planned.config.num_warps == want == (16 if widened else 8)
    off = replace(H200, tuning=replace(t, looped_bytes_in_flight=0))
    planned_off = looped_row.applies(graph, launch, CodegenOptions(target=off))
    assert planned_off is not None and planned_off.config.block("R0_BLOCK") == min(r0_block, t.max_r0_block)
    rb = planned_off.config.block("R0_BLOCK")
    assert planned_off.config.num_warps == min(t.max_warps, xblock * rb // t.reduction_points_per_warp)


def test_a_max_r0_block_override_caps_the_widened_loop() -> None:
    """Tests shrink R0_BLOCK to take several iterations on tiny shapes: the widening obeys it."""
    graph, launch = _row_launch(4, 257, "float32")
    planned = looped_row.applies(graph, launch, CodegenOptions(persistent_rnumel=0, max_r0_block=8))
    assert planned is not None and planned.config.block("R0_BLOCK") == 8
    wide = looped_row.applies(graph, launch, CodegenOptions(persistent_rnumel=0))
    assert wide is not None and wide.config.block("R0_BLOCK") == 512  # the whole row, rounded up


def test_a_tile_that_reads_nothing_is_not_widened() -> None:
    """Bytes in flight count reads: a reduction of its own index reads no memory, so its loop
    keeps the R0_BLOCK `looped_elements` gives it."""
    text = """
format: fuseopt-graph/1
name: idx
buffers:
  out: {shape: [64], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 64]], reduce: [[r, 50000]], store: "out[i]", value: "sum(cast(r, float32))"}
"""
    stage = optimize(load_text(text, "idx.yaml"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    planned = looped_row.applies(stage.graph, launch, CodegenOptions())
    assert planned is not None and planned.config.block("R0_BLOCK") <= CodegenOptions().tuning.max_r0_block


def test_looped_row_work_steps_through_every_loop() -> None:
    """The cost model's view of a looped program: R0_BLOCK points of r a step, in each r loop,
    a tile of accumulators in registers."""
    graph, launch = launches("row_sum_looped")[0]
    planned = looped_row.applies(graph, launch, CodegenOptions())
    assert planned is not None
    r0 = planned.config.block("R0_BLOCK")
    steps = -(-launch.axes[1].numel // r0)
    assert looped_row.work(planned.strategy, planned.launch, planned.config, 1) == Work(steps, 1, True)
    assert looped_row.work(planned.strategy, planned.launch, planned.config, 3).steps == 3 * steps
