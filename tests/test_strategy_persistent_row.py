"""`codegen.strategies.persistent_row`: a persistent reduction."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import PersistentRow, persistent_row
from tests.strategy_graphs import launches, strategies


def test_persistent_row_taken() -> None:
    for name in ["col_sum_fp16", "layernorm_t_small", "softmax_cluster", "row_sum_odd"]:
        assert strategies(name) == [PersistentRow], name


def test_persistent_row_not_taken() -> None:
    for name in ["row_sum_looped", "tsum_full", "pointwise_1d_fp16"]:
        assert PersistentRow not in strategies(name), name


def test_persistent_row_up_to_persistent_rnumel() -> None:
    graph, launch = launches("row_sum_odd")[0]
    rnumel = launch.axes[1].numel
    assert persistent_row.applies(graph, launch, CodegenOptions(persistent_rnumel=rnumel)) is not None
    assert persistent_row.applies(graph, launch, CodegenOptions(persistent_rnumel=rnumel - 1)) is None


def test_persistent_row_cost_falls_with_more_multiprocessors() -> None:
    graph, launch = launches(["col_sum_fp16", "layernorm_t_small", "softmax_cluster", "row_sum_odd"][0])[0]
    few, many = CodegenOptions(multiprocessors=66), CodegenOptions(multiprocessors=132)
    planned = persistent_row.applies(graph, launch, few)
    assert planned is not None and isinstance(planned.strategy, PersistentRow)
    assert persistent_row.cost(planned, few) == 2 * persistent_row.cost(planned, many) > 0
