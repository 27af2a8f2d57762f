"""`codegen.strategies.looped_row`: a looped reduction."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import LoopedRow, looped_row
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
