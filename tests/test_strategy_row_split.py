"""`codegen.strategies.row_split`: a pointwise tile of rows x a row's points."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import RowSplit, row_split
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


def test_row_split_cost_falls_with_more_multiprocessors() -> None:
    graph, launch = launches(["gather_rows", "row_split_broadcast"][0])[0]
    few, many = CodegenOptions(multiprocessors=66), CodegenOptions(multiprocessors=132)
    planned = row_split.applies(graph, launch, few)
    assert planned is not None and isinstance(planned.strategy, RowSplit)
    assert row_split.cost(planned, few) == 2 * row_split.cost(planned, many) > 0


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
    (launch,) = [la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)]
    return stage.graph, launch


def test_rows_split_only_into_whole_unmasked_blocks() -> None:
    """A row whose largest power-of-two divisor is at least row_split_min_points splits (no lane
    of its blocks masked); rows of 56 (blocks of 8) or 333 would leave masked lanes: 1D."""
    t = CodegenOptions().tuning
    for row in (64, 48, 96, 56, 333, 40):
        graph, launch = _scaled_rows(row)
        planned = row_split.applies(graph, launch, CodegenOptions())
        assert (planned is not None) == (row & -row >= t.row_split_min_points), row
