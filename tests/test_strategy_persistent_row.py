"""`codegen.strategies.persistent_row`: a persistent reduction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fuseopt.codegen.common import next_power_of_2
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import PersistentRow, persistent_row
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from fuseopt.targets.h200 import H200
from tests.strategies import check
from tests.strategies import graph as parse_graph
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


def _row_sum(rows: int, length: int, start: int = 0, dtype: str = "float32") -> tuple[Graph, ComputeLaunch]:
    """Sums of `rows` rows of `length` points starting `start` points into rows of `length + start`."""
    g = parse_graph(
        f"""
format: fuseopt-graph/1
name: rows
buffers:
  x: {{shape: [{rows}, {length + start}], dtype: {dtype}, role: input}}
  out: {{shape: [{rows}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[i, {rows}]], reduce: [[r, {length}]], store: "out[i]", value: "sum(cast(x[{length + start}*i + r + {start}], float32))"}}
"""
    )
    schedule = build_schedule(g, optimize(g).plan)
    (launch,) = [la for la in schedule.launches if isinstance(la, ComputeLaunch)]
    return g, launch


def test_rows_read_in_vectors_are_held_further() -> None:
    """A row every read of which starts on a vector boundary is held whole up to
    persistent_aligned_rnumel; a row that starts inside a vector (an odd length, a sliced row)
    only up to persistent_rnumel, each of its points a load of its own (a 2000 x 10007 float32
    softmax held whole: 70.7 -> 104.7 us on an H100)."""
    t = CodegenOptions().tuning
    assert t.persistent_rnumel < t.persistent_aligned_rnumel
    long = t.persistent_aligned_rnumel
    for dtype, item in (("float32", 4), ("bfloat16", 2)):
        vector = 16 // item  # points of a 16-byte vector
        cases = (
            (long, 0, True),  # aligned, at the limit
            (long - vector, 0, True),  # aligned, not a power of two
            (long + vector, 0, False),  # aligned, past it
            (long - 1, 0, False),  # odd length: rows start inside a vector
            (long - 1, 1, False),  # x[:, 1:] of rows of `long`: each row starts one point in
            (t.persistent_rnumel - 1, 0, True),  # unaligned, within persistent_rnumel
            (t.persistent_rnumel, 1, True),
        )
        for length, start, held in cases:
            g, launch = _row_sum(4, length, start, dtype)
            assert persistent_row.holds(g, launch, CodegenOptions()) is held, (dtype, length, start)
    # a whole row of 10000 points in one tile, run against the reference
    g, _ = _row_sum(2, 10000)
    assert "R0_BLOCK=16384" in check(g, optimize(g).plan)


def test_a_persistent_rnumel_override_alone_sets_both_limits() -> None:
    """CodegenOptions(persistent_rnumel=N) holds rows of up to N points, aligned or not (tests
    force looped tiles with 0); persistent_aligned_rnumel given beside it still counts."""
    g, launch = _row_sum(4, 64)
    assert persistent_row.holds(g, launch, CodegenOptions(persistent_rnumel=64))
    assert not persistent_row.holds(g, launch, CodegenOptions(persistent_rnumel=0))
    assert not persistent_row.holds(g, launch, CodegenOptions(persistent_rnumel=32))
    assert persistent_row.holds(g, launch, CodegenOptions(persistent_rnumel=32, persistent_aligned_rnumel=64))
    odd = _row_sum(4, 63)
    assert not persistent_row.holds(*odd, CodegenOptions(persistent_rnumel=32, persistent_aligned_rnumel=64))


@pytest.mark.parametrize(("length", "dtype"), [(6000, "float32"), (12288, "bfloat16"), (16384, "float16")])
def test_a_long_row_held_whole_matches_the_reference(length: int, dtype: str) -> None:
    """A softmax over rows of 4097-16384 points that start on a vector boundary: one persistent
    kernel (max, sum of exponentials, the normalised row) whose R0_BLOCK is the whole row, run
    against the reference interpreter."""
    g = parse_graph(
        f"""
format: fuseopt-graph/1
name: softmax_rows
buffers:
  x: {{shape: [2, {length}], dtype: {dtype}, role: input}}
  m: {{shape: [2], dtype: float32}}
  s: {{shape: [2], dtype: float32}}
  y: {{shape: [2, {length}], dtype: float32, role: output}}
nodes:
  - {{name: mx, loops: [[i, 2]], reduce: [[r, {length}]], store: "m[i]", value: "max(cast(x[{length}*i + r], float32))"}}
  - {{name: se, loops: [[i, 2]], reduce: [[r, {length}]], store: "s[i]", value: "sum(exp(cast(x[{length}*i + r], float32) - m[i]))"}}
  - {{name: y, loops: [[i, 2], [j, {length}]], store: "y[{length}*i + j]", value: "exp(cast(x[{length}*i + j], float32) - m[i]) / s[i]"}}
"""
    )
    plan = optimize(g).plan
    assert len(plan.kernels) == 1
    src = check(g, plan)
    assert "triton_per_" in src and f"R0_BLOCK={next_power_of_2(length)}" in src


def test_rows_longer_than_a_tile_offer_autotune_the_most_warps() -> None:
    """A row a program (longer than `persistent_elements`) is also a candidate on the most warps
    (max_warps and looped_widened_warps), the default staying on max_warps; shorter rows, several
    a program, are not."""
    o = CodegenOptions()
    t = o.tuning
    most = max(t.max_warps, t.looped_widened_warps)
    assert most > t.max_warps
    for length, offered in ((t.persistent_elements * 4, True), (t.persistent_elements, False)):
        planned = persistent_row.applies(*_row_sum(64, length), o)
        assert planned is not None
        wide = [c for c in planned.candidates if c.num_warps == most]
        assert bool(wide) is offered, (length, planned.candidates)
        assert planned.config.num_warps <= t.max_warps
        assert all(c.block("XBLOCK") == 1 and c.block("R0_BLOCK") == length for c in wide)
