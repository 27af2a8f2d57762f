"""`codegen.strategies.sliding_window`: a program walks a band of rows, carrying loads."""

from __future__ import annotations

from fuseopt.codegen.strategies import SlidingWindow, sliding_window
from tests.strategy_graphs import strategies, tilings


def test_sliding_window_taken() -> None:
    for name in ["avgpool_window96", "window_chain"]:
        (t,) = tilings(name)
        assert isinstance(t.strategy, SlidingWindow) and t.strategy.rows >= 2, name
        assert t.strategy.period % t.strategy.rows == 0
    (pool,) = tilings("avgpool_window96")
    assert isinstance(pool.strategy, SlidingWindow) and pool.strategy.rnumel > 1  # an unrolled pool


def test_sliding_window_not_taken() -> None:
    for name in ["avgpool_cells64", "pointwise_1d_fp16", "row_sum_looped"]:
        assert SlidingWindow not in strategies(name), name


def test_sliding_window_applies_and_cost_monotonic() -> None:
    assert not sliding_window.applies(9, 0, 3)  # nothing carried
    assert not sliding_window.applies(10, 3, 3) and sliding_window.applies(9, 3, 3)
    assert all(sliding_window.applies(9, c, 3) for c in range(3, 10))  # more carried: still applies
    costs = [sliding_window.cost(9, c) for c in range(10)]
    assert costs == sorted(costs, reverse=True)  # more carried, fewer loads a row
