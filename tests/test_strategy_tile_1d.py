"""`codegen.strategies.tile_1d`: a 1D pointwise tile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from fuseopt.codegen.launch_counts import tile_loads
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import Tile1D, tile_1d
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from fuseopt.targets.h200 import H200
from tests.fixtures.programs import captured_fn
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


# -- points a thread: loads in flight, and warps on every multiprocessor (configs_1d) -------------


def _pointwise(fn: Callable[..., torch.Tensor], *args: torch.Tensor) -> tuple[Graph, ComputeLaunch]:
    graph, _ = captured_fn(fn, args)
    stage = optimize(graph)
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    return stage.graph, launch


def _config(graph: Graph, launch: ComputeLaunch, **tuning: int) -> tuple[int, int]:
    """(XBLOCK, num_warps) of the 1D tile under the H200 target with `tuning` overridden."""
    options = CodegenOptions(target=replace(H200, tuning=replace(H200.tuning, **tuning)))
    planned = tile_1d.applies(graph, launch, options)
    assert planned is not None
    return dict(planned.config.blocks)["XBLOCK"], planned.config.num_warps


OFF = {"pointwise_loads_in_flight": 10**6, "pointwise_warps_per_multiprocessor": 0}


def _pool(x: torch.Tensor) -> torch.Tensor:
    return F.avg_pool2d(x, 3, stride=1, padding=1)


def _pw(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(a) * b + a


def test_tile_loads_counts_distinct_loads_a_point() -> None:
    assert tile_loads(_pointwise(_pool, torch.empty(4, 8, 16, 16))[1]) == 9
    assert tile_loads(_pointwise(_pw, torch.empty(64, 64), torch.empty(64, 64))[1]) == 2  # `a` once


@pytest.mark.parametrize("shape", [(32, 64, 56, 56), (16, 48, 99, 99), (8, 3, 301, 257)])
def test_a_tile_of_many_loads_takes_fewer_points_a_thread(shape: tuple[int, ...]) -> None:
    """Nine loads a point: 2 points a thread hold 18 loads (<= 32); 4 would hold 36."""
    graph, launch = _pointwise(_pool, torch.empty(*shape))
    xb, warps = _config(graph, launch)
    threads = warps * H200.warp_size
    assert xb == 2 * threads and 2 * 9 <= H200.tuning.pointwise_loads_in_flight < 4 * 9
    assert _config(graph, launch, **OFF) == (1024, 4)  # the rule is what narrows it


def test_a_small_launch_keeps_warps_on_every_multiprocessor() -> None:
    graph, launch = _pointwise(_pw, torch.empty(777, 333), torch.empty(777, 333))
    xb, warps = _config(graph, launch)
    fill = H200.multiprocessors * H200.tuning.pointwise_warps_per_multiprocessor
    numel = 777 * 333
    assert -(-numel // xb) * warps >= fill > -(-numel // (2 * xb)) * warps  # the widest that fills
    assert _config(graph, launch, **OFF) == (1024, 4)


def test_a_large_launch_of_few_loads_keeps_its_tile() -> None:
    graph, launch = _pointwise(_pw, torch.empty(4096, 4096), torch.empty(4096, 4096))
    assert _config(graph, launch) == _config(graph, launch, **OFF) == (1024, 4)


def test_a_tiny_launch_keeps_its_tile() -> None:
    graph, launch = _pointwise(_pw, torch.empty(3, 5), torch.empty(3, 5))
    assert _config(graph, launch) == _config(graph, launch, **OFF)
