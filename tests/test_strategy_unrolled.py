"""`codegen.strategies.unrolled`: a small reduction unrolled into a pointwise tile."""

from __future__ import annotations

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import Unrolled, unrolled
from tests.strategy_graphs import launches, strategies


def test_unrolled_taken() -> None:
    for name in ["avgpool_cl_small", "avgpool_rows16"]:
        assert strategies(name) == [Unrolled], name


def test_unrolled_not_taken() -> None:
    for name in ["row_sum_odd", "argmax_looped_bf16"]:
        assert Unrolled not in strategies(name), name


def test_unrolled_up_to_unroll_rnumel() -> None:
    graph, launch = launches("avgpool_rows16")[0]
    rnumel = launch.axes[1].numel
    planned = unrolled.applies(graph, launch, CodegenOptions(unroll_rnumel=rnumel))
    assert planned is not None and planned.strategy == Unrolled(rnumel)
    assert unrolled.applies(graph, launch, CodegenOptions(unroll_rnumel=rnumel - 1)) is None
