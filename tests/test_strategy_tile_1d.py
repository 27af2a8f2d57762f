"""`codegen.strategies.tile_1d`: a 1D pointwise tile."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import Tile1D, tile_1d
from tests.strategy_graphs import launches, strategies


def test_tile_1d_taken() -> None:
    for name in ["pointwise_1d_fp16", "pointwise_1d_odd", "int64_index_full"]:
        assert strategies(name) == [Tile1D], name


def test_tile_1d_not_taken() -> None:
    for name in ["apbt_small", "gather_rows"]:
        assert Tile1D not in strategies(name), name


def test_tile_1d_applies_to_no_reduction() -> None:
    graph, launch = launches("row_sum_looped")[0]
    assert tile_1d.applies(graph, launch, CodegenOptions()) is None


def test_tile_1d_cost_falls_with_more_multiprocessors() -> None:
    graph, launch = launches(["pointwise_1d_fp16", "pointwise_1d_odd", "int64_index_full"][0])[0]
    few, many = CodegenOptions(multiprocessors=66), CodegenOptions(multiprocessors=132)
    planned = tile_1d.applies(graph, launch, few)
    assert planned is not None and isinstance(planned.strategy, Tile1D)
    assert tile_1d.cost(planned, few) == 2 * tile_1d.cost(planned, many) > 0
