"""`codegen.strategies.row_split`: a pointwise tile of rows x a row's points."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import RowSplit, row_split
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
