"""`codegen.strategies.looped_row`: a looped reduction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fuseopt.codegen.common import next_power_of_2
from fuseopt.codegen.launch_configs import resident_programs
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
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
        (384, 50257, "bfloat16", 1, 4096),  # 384 programs of 1 row: 3 MiB an iteration at 4096
        (256, 128256, "float32", 1, 4096),  # capped at looped_max_r0_block
        (384, 1500, "bfloat16", 1, 2048),  # never wider than the row
    ],
)
def test_few_rows_widen_the_loop_to_keep_bytes_in_flight(
    rows: int, cols: int, dtype: str, xblock: int, r0_block: int
) -> None:
    """Rows too few for the programs a multiprocessor aims at (fewer than 512 on an H200): each
    program reads more an iteration until all of them read `looped_bytes_in_flight` a
    multiprocessor (Little's law), on `looped_widened_warps` warps (a point a thread at least).
    Without the rule, R0_BLOCK stays at max_r0_block and the warps follow the points (rows enough
    for the GPU take a row a program: test_rows_enough_for_the_gpu_take_a_row_a_program)."""
    graph, launch = _row_launch(rows, cols, dtype)
    t = CodegenOptions().tuning
    planned = looped_row.applies(graph, launch, CodegenOptions())
    assert planned is not None and planned.config.block("XBLOCK") == xblock
    assert planned.config.block("R0_BLOCK") == r0_block
    by_points = min(t.max_warps, xblock * r0_block // t.reduction_points_per_warp)
    want = max(by_points, min(t.looped_widened_warps, xblock * r0_block // 32))
    assert planned.config.num_warps == want == 16
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


def _rows_graph(rows: int, cols: int, dtype: str, passes: int) -> str:
    """A row sum (one r loop) or a row's values over their sum (`passes` 2: the second loop reads
    the row again), read along r."""
    value = f"x[{cols}*i + r]"
    nodes = f'  - {{name: s, loops: [[i, {rows}]], reduce: [[r, {cols}]], store: "s[i]", value: "sum({value})"}}\n'
    if passes == 2:
        nodes += (
            f'  - {{name: y, loops: [[i, {rows}], [j, {cols}]], store: "y[{cols}*i + j]",'
            f' value: "x[{cols}*i + j] / s[i]"}}\n'
        )
    return f"""
format: fuseopt-graph/1
name: rows
buffers:
  x: {{shape: [{rows}, {cols}], dtype: {dtype}, role: input}}
  s: {{shape: [{rows}], dtype: float32, role: {"output" if passes == 1 else "intermediate"}}}
{"  y: {shape: [" + str(rows) + ", " + str(cols) + "], dtype: float32, role: output}" if passes == 2 else ""}
nodes:
{nodes}"""


def _looped(text: str, target: str) -> tuple[object, ComputeLaunch, CodegenOptions]:
    from fuseopt.targets import get

    stage = optimize(load_text(text, "rows.yaml"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    return stage.graph, launch, CodegenOptions(target=get(target))


@pytest.mark.parametrize("target", ["h200", "h100", "a100"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("cols", [5120, 10007, 32000])
@pytest.mark.parametrize("passes", [1, 2])
def test_rows_enough_for_the_gpu_take_a_row_a_program(
    target: str, dtype: str, cols: int, passes: int
) -> None:
    """Rows read along r, enough for `looped_programs_per_multiprocessor` programs on every
    multiprocessor: a row a program (8 rows a program on 16 warps left the H100 few resident warps:
    a 4096 x 32000 argmax 258 -> 125 us, results/long-rows-2026-12-06-h100.json). A second r loop
    reads each row again from the L2 while the rows the resident programs hold fit in half of it:
    the fewest warps that fit, else the most. Each step reads a 16-byte vector a thread, no more
    (a 2048 x 50000 float32 argmin: 8 points a thread 200 us, 4 points 157)."""
    from fuseopt.codegen.launch_configs import _rows_held

    graph, launch, o = _looped(_rows_graph(4096, cols, dtype, passes), target)
    planned = looped_row.applies(graph, launch, o)
    assert planned is not None
    cfg, g, t = planned.config, o.gpu, o.tuning
    item = 4 if dtype == "float32" else 2
    assert cfg.block("XBLOCK") == 1
    vector = cfg.num_warps * g.warp_size * g.max_vector_bytes // item
    assert cfg.block("R0_BLOCK") == min(vector, t.looped_max_r0_block, next_power_of_2(cols))
    again = looped_row.reread_row_bytes(graph, launch)
    assert (again > 0) == (passes == 2) and again in (0, cols * item)
    most = max(t.max_warps, t.looped_widened_warps)  # autotune: a row a program on each, a vector a thread
    for w in (w for w in (1, 2, 4, 8, 16, 32) if t.looped_row_warps <= w <= most):
        r = min(w * g.warp_size * g.max_vector_bytes // item, t.looped_max_r0_block, next_power_of_2(cols))
        assert LaunchConfig((("XBLOCK", 1), ("R0_BLOCK", r)), w) in planned.candidates
    tried = [w for w in (4, 8, 16) if t.looped_row_warps <= w <= t.looped_widened_warps]
    fits = [w for w in tried if _rows_held(1, w, again, o) <= g.l2_bytes // 2]
    assert cfg.num_warps == ((fits[0] if fits else tried[-1]) if again else t.looped_row_warps)


def test_few_rows_or_rows_along_x_keep_their_tiles() -> None:
    """Rows too few for the multiprocessors widen instead (more bytes in flight a program), and a
    tile read along x (a column sum) keeps its rows a program: neither takes a row a program."""
    graph, launch, o = _looped(_rows_graph(256, 32000, "float32", 2), "h200")
    planned = looped_row.applies(graph, launch, o)
    assert planned is not None and planned.config.num_warps == o.tuning.looped_widened_warps
    text = _rows_graph(4096, 8192, "float32", 1).replace("x[8192*i + r]", "x[4096*r + i]")
    graph, launch, o = _looped(text.replace("[4096, 8192]", "[8192, 4096]"), "h200")
    planned = looped_row.applies(graph, launch, o)
    assert planned is not None and planned.config.block("XBLOCK") > 1


@pytest.mark.parametrize("target", ["h200", "h100", "a100"])
@pytest.mark.parametrize("rows", [64, 256, 512, 1024, 4096, 16384])
def test_waves_say_whether_programs_outnumber_the_resident(target: str, rows: int) -> None:
    """`LoopedRow.waves`: the launch's programs outnumber those the multiprocessors keep at once
    (as many as their warps allow, at most `max_programs_per_multiprocessor` each), from the
    default launch: then a row's last read makes room for later programs (`codegen.eviction`)."""
    graph, launch, o = _looped(_rows_graph(rows, 32000, "bfloat16", 2), target)
    planned = looped_row.applies(graph, launch, o)
    assert planned is not None
    cfg, g = planned.config, o.gpu
    programs = -(-rows // cfg.block("XBLOCK"))
    slots = g.multiprocessors * min(
        g.max_warps_per_multiprocessor // cfg.num_warps, g.max_programs_per_multiprocessor
    )
    assert slots == resident_programs(cfg.num_warps, o)
    assert planned.strategy.waves == (programs > slots)
    if target == "h100" and rows in (512, 4096):  # 4 programs of 16 warps on each of 132
        assert (slots, planned.strategy.waves) == (528, rows == 4096)


@pytest.mark.parametrize("target", ["h200", "h100"])
@pytest.mark.parametrize(
    ("cols", "dtype", "passes", "whole"),
    [
        (6144, "bfloat16", 2, True),  # rows read again: the whole row a step is a candidate
        (16384, "float32", 2, True),
        (6144, "bfloat16", 1, False),  # read once: no second loop to serve
        (32768, "float32", 2, False),  # 64 points a thread with their accumulators: past the registers
    ],
)
def test_rows_read_again_offer_the_whole_row_a_step(
    target: str, cols: int, dtype: str, passes: int, whole: bool
) -> None:
    """A looped tile whose later r loops read each row again offers autotune a launch of the
    whole row a step on the most warps, where a thread's registers hold it (`thread_registers`
    within `register_limit`); the default launch is unchanged by it."""
    from fuseopt.codegen.launch_configs import register_limit, thread_registers

    graph, launch, o = _looped(_rows_graph(4096, cols, dtype, passes), target)
    planned = looped_row.applies(graph, launch, o)
    assert planned is not None
    t = o.tuning
    most = max(t.max_warps, t.looped_widened_warps)
    row = LaunchConfig((("XBLOCK", 1), ("R0_BLOCK", next_power_of_2(cols))), most)
    assert (row in planned.candidates) == whole
    assert planned.config != row
    if whole:
        assert thread_registers(next_power_of_2(cols), most, 1, o) <= register_limit(most, o)
