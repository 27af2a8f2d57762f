"""`codegen.strategies.row_split`: a pointwise tile of rows x a row's points."""

from __future__ import annotations

import json
from dataclasses import replace

from fuseopt.codegen.launch_counts import point_loads
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import Planned, RowSplit, row_split
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from tests.strategy_graphs import launches, strategies


def test_row_split_taken() -> None:
    for name in ["gather_rows", "row_split_broadcast"]:
        assert strategies(name) == [RowSplit], name


def test_row_split_not_taken() -> None:
    for name in ["pointwise_1d_fp16", "apbt_small"]:
        assert RowSplit not in strategies(name), name


def test_row_split_needs_2d_tiles() -> None:
    graph, launch = launches("gather_rows")[0]
    assert row_split.applies(graph, launch, CodegenOptions(tile_2d=False)) is None


def _scaled_rows(row: int) -> tuple[Graph, ComputeLaunch]:
    """row_split_broadcast with rows of `row` points: x[i] * s[i // row % 5]."""
    text = f"""
format: fuseopt-graph/1
name: rows
buffers:
  x: {{shape: [{15 * row}], dtype: float32, role: input}}
  s: {{shape: [5], dtype: float32, role: input}}
  out: {{shape: [{15 * row}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[i, {15 * row}]], store: "out[i]", value: "x[i] * s[i // {row} % 5]"}}
"""
    stage = optimize(load_text(text, "rows.yaml"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    return stage.graph, launch


def test_rows_split_only_into_whole_unmasked_blocks() -> None:
    """A row whose largest power-of-two divisor is at least row_split_min_points splits (no lane
    of its blocks masked); rows of 56 (blocks of 8) or 333 would leave masked lanes: 1D."""
    t = CodegenOptions().tuning
    for row in (64, 48, 96, 56, 333, 40):
        graph, launch = _scaled_rows(row)
        planned = row_split.applies(graph, launch, CodegenOptions())
        assert (planned is not None) == (row & -row >= t.row_split_min_points), row


def _pool_launch(window: int, c: int, n: int = 32, hw: int = 28) -> tuple[Graph, ComputeLaunch]:
    """A channels-last stencil over `n` images of hw x hw x `c` channels: `window` shifted loads
    a point (a pooling window as Inductor writes it, a pointwise chain), times a per-channel
    scale (read once a column of the tile, not a point)."""
    from tests.test_windows_sliding import stencil_doc

    offsets = [(dh, dw) for dh in (0, 1, 2) for dw in (0, 1, 2)][:window]
    doc = stencil_doc(n, hw, hw, c, "nhwc", offsets, "bfloat16", "max")
    doc["buffers"]["s"] = {"shape": [c], "dtype": "bfloat16", "role": "input"}
    doc["nodes"][0]["value"] = f"({doc['nodes'][0]['value']}) * s[c]"
    stage = optimize(load_text(json.dumps(doc), "pool.json"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    return stage.graph, launch


def _points_a_thread(planned: Planned[RowSplit], o: CodegenOptions) -> int:
    cfg = planned.config
    return cfg.block("YBLOCK") * cfg.block("XBLOCK") // (cfg.num_warps * o.gpu.warp_size)


def test_row_tiles_hold_few_enough_loads_a_thread() -> None:
    """A thread of a row tile holds at most `row_loads_in_flight` loads (points a thread x loads
    a point that read a distinct element at every point): a 3x3 window (9 loads a point) takes
    4 points a thread, a 2x2 window 8; the per-channel scale does not count. One load a point
    keeps the tile of `unrolled_points`."""
    o = CodegenOptions()
    t = o.tuning
    for window, want in ((9, 4), (4, 8), (1, 16)):
        graph, launch = _pool_launch(window, 64)
        planned = row_split.applies(graph, launch, o)
        assert planned is not None, window
        assert point_loads(planned.launch) == window
        got = _points_a_thread(planned, o)
        assert got == want and got * window <= max(t.row_loads_in_flight, window), (window, planned.config)
        first = t.unrolled_points // (planned.config.num_warps * o.gpu.warp_size)
        assert got == first or got * 2 * window > t.row_loads_in_flight
        assert planned.config in planned.candidates
    # the limit is the target's: raised, the 3x3 window keeps its 16 points a thread
    roomy = CodegenOptions(target=replace(o.target, tuning=replace(t, row_loads_in_flight=16 * 9)))
    graph, launch = _pool_launch(9, 64)
    planned = row_split.applies(graph, launch, roomy)
    assert planned is not None and _points_a_thread(planned, roomy) == 16


def test_row_tiles_keep_warps_for_the_multiprocessors() -> None:
    """A launch too small to keep `pointwise_warps_per_multiprocessor` warps a multiprocessor
    takes fewer points a thread, down to one (the second cost of `configs_1d`): one 8 x 8 image
    of 64 channels is 4,096 points, two programs of the default tile."""
    o = CodegenOptions()
    graph, launch = _pool_launch(1, 64, n=1, hw=8)
    planned = row_split.applies(graph, launch, o)
    assert planned is not None
    assert _points_a_thread(planned, o) == 1
    unfilled = CodegenOptions(
        target=replace(o.target, tuning=replace(o.tuning, pointwise_warps_per_multiprocessor=0))
    )
    planned = row_split.applies(graph, launch, unfilled)
    assert planned is not None and _points_a_thread(planned, unfilled) == 16
