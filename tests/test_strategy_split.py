"""`codegen.strategies.split`: a split reduction, its partial kernel and its finishing kernel."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import SplitFinish, SplitPartial, split
from fuseopt.codegen.tile_shapes import finish_tiling
from tests.strategy_graphs import launches, strategies, tilings


def test_split_taken_and_finished() -> None:
    for name in ["col_sum_split", "row_mean_split_bf16", "tsum_full", "three_layouts_mean_full"]:
        (t,) = tilings(name)
        assert isinstance(t.strategy, SplitPartial) and t.strategy.chunks >= 2, name
        finish = finish_tiling(t, CodegenOptions())
        assert finish.strategy == SplitFinish(t.strategy.chunks)
        assert t.grid(t.config)[1] == t.strategy.chunks  # program_id(1): a chunk


def test_split_not_taken() -> None:
    for name in ["row_sum_looped", "tsum_small", "pointwise_1d_fp16"]:
        assert SplitPartial not in strategies(name), name
    assert strategies("col_sum_split", CodegenOptions(split_programs=0)) != [SplitPartial]  # 0: never


def test_split_cost_counts_the_chunks() -> None:
    graph, launch = launches("col_sum_split")[0]
    few, many = CodegenOptions(multiprocessors=66), CodegenOptions(multiprocessors=132)
    planned = split.applies(graph, launch, few)
    assert planned is not None
    assert split.cost(planned, few) == 2 * split.cost(planned, many) > 0
    whole = split.cost(planned, few) / planned.strategy.chunks  # the programs without the chunks
    assert split.cost(planned, few) > whole
