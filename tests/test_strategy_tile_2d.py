"""`codegen.strategies.tile_2d`: a transposed pointwise 2D tile."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import Tile2D, tile_2d
from tests.strategy_graphs import launches, strategies


def test_tile_2d_taken() -> None:
    for name in ["apbt_small", "transpose_bf16_odd", "transpose_flat_grid_full"]:
        assert strategies(name) == [Tile2D], name


def test_tile_2d_not_taken() -> None:
    for name in ["pointwise_1d_fp16", "gather_rows"]:
        assert Tile2D not in strategies(name), name


def test_tile_2d_needs_2d_tiles() -> None:
    graph, launch = launches("apbt_small")[0]
    assert tile_2d.applies(graph, launch, CodegenOptions(tile_2d=False)) is None
    assert strategies("apbt_small", CodegenOptions(tile_2d=False)) != [Tile2D]
