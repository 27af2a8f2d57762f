"""`codegen.strategies.register_window`: a program's cells share their stencil's loads."""

from __future__ import annotations

from fuseopt.codegen.strategies import Cells, RegisterWindow, register_window
from tests.strategy_graphs import strategies, tilings


def test_register_window_taken() -> None:
    for name in ["avgpool_cells64", "avgpool_cl_full"]:
        (t,) = tilings(name)
        assert isinstance(t.strategy, RegisterWindow), name
        assert t.strategy.cells.rows * t.strategy.cells.cols >= 2


def test_register_window_not_taken() -> None:
    for name in ["avgpool_window96", "avgpool_cl_small", "pointwise_1d_fp16"]:
        assert RegisterWindow not in strategies(name), name


def test_register_window_cost_monotonic() -> None:
    w = RegisterWindow(Cells(rows=2, cols=2, col=64, period=4, ncols=4))
    costs = [register_window.cost(w, d) for d in range(1, 37)]
    assert costs == sorted(costs) and costs[3] == 1  # more distinct loads, more a point
    overlapping = RegisterWindow(Cells(rows=3, cols=2, col=64, period=4, ncols=4))  # bands overlap
    assert register_window.cost(overlapping, 12) > register_window.cost(RegisterWindow(w.cells), 8)
    assert register_window.applies(36, 16, 2) and not register_window.applies(36, 20, 2)
    assert not register_window.applies(0, 0, 2)
