"""`codegen.strategies.looped_row`: a looped reduction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import LoopedRow, looped_row
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


def test_looped_row_cost_falls_with_more_multiprocessors() -> None:
    graph, launch = launches(["row_sum_looped", "argmax_looped_bf16"][0])[0]
    few, many = CodegenOptions(multiprocessors=66), CodegenOptions(multiprocessors=132)
    planned = looped_row.applies(graph, launch, few)
    assert planned is not None and isinstance(planned.strategy, LoopedRow)
    assert looped_row.cost(planned, few) == 2 * looped_row.cost(planned, many) > 0


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
    (launch,) = [la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)]
    t = CodegenOptions().tuning
    planned = looped_row.applies(stage.graph, launch, CodegenOptions())
    assert planned is not None
    assert planned.config.block("XBLOCK") * item == t.looped_outer_x_bytes
    off = replace(H200, tuning=replace(t, looped_outer_x_bytes=0))
    planned_off = looped_row.applies(stage.graph, launch, CodegenOptions(target=off))
    assert planned_off is not None and planned_off.config.block("XBLOCK") * item < t.looped_outer_x_bytes
