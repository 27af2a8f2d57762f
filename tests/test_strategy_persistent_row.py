"""`codegen.strategies.persistent_row`: a persistent reduction."""

from __future__ import annotations

from dataclasses import replace

from fuseopt.codegen.common import next_power_of_2
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import PersistentRow, persistent_row
from fuseopt.targets.h200 import H200
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


def test_every_launch_and_candidate_holds_whole_rows() -> None:
    """A persistent tile has no r loop: its R0_BLOCK is the row rounded up to a power of two in
    the default launch, every autotune candidate and a cluster's fallback, whatever
    max_r0_block says (it caps looped tiles)."""
    for name in ["col_sum_fp16", "layernorm_t_small", "softmax_cluster", "row_sum_odd"]:
        for graph, launch in launches(name):
            for opts in (CodegenOptions(), CodegenOptions(max_r0_block=8)):
                planned = persistent_row.applies(graph, launch, opts)
                assert planned is not None, name
                row = next_power_of_2(launch.axes[1].numel)
                configs = (planned.config, *planned.candidates, *filter(None, [planned.fallback]))
                assert {c.block("R0_BLOCK") for c in configs} == {row}, (name, configs)


def test_transposed_rows_are_held_up_to_the_outer_limit() -> None:
    """Rows read contiguous along x (a column sum) are held whole up to persistent_outer_rnumel,
    row-contiguous ones up to persistent_rnumel."""
    for name, outer in (("col_sum_fp16", True), ("row_sum_odd", False)):
        graph, launch = launches(name)[0]
        rnumel = launch.axes[1].numel
        tight = replace(H200, tuning=replace(H200.tuning, persistent_outer_rnumel=rnumel - 1))
        held = persistent_row.holds(graph, launch, CodegenOptions(target=tight))
        assert held is not outer, name
        assert persistent_row.holds(graph, launch, CodegenOptions())
