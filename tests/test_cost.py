"""The cost model (fuseopt/codegen/cost.py): each of its terms moves the estimate the way its
cost does, and `choose_tiling` takes the cheapest strategy that applies (the table's order
breaking a tie). Graphs: the golden kernel graphs (tests/golden/kernels/), and generated ones."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuseopt.codegen.cost import Estimate, estimate, registers_of
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import TABLE, LoopedRow, PersistentRow, SplitPartial, Tile1D, Tile2D
from fuseopt.codegen.tile_shapes import choose_tiling, strategy_name, tiling_of
from fuseopt.codegen.tiling import Tiling
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from fuseopt.targets import H200
from tests.fixtures.graphgen import FAMILIES
from tests.strategies import check
from tests.strategy_graphs import launches


def _forced(name: str, strategy: str, options: CodegenOptions | None = None) -> tuple[Graph, Tiling]:
    graph, launch = launches(name)[0]
    opts = dataclasses.replace(options or CodegenOptions(), strategy=strategy)
    return graph, choose_tiling(graph, launch, opts)


def _estimate(name: str, strategy: str, options: CodegenOptions | None = None) -> Estimate:
    graph, tiling = _forced(name, strategy, options)
    return estimate(graph, tiling, options or CodegenOptions())


@pytest.mark.parametrize(
    "name, strategy",
    [
        ("int64_index_full", "tile_1d"),
        ("apbt_full", "tile_2d"),
        ("layernorm_t_full", "persistent_row"),
        ("layernorm_t_full", "looped_row"),
        ("tsum_full", "split"),
        ("three_layouts_mean_full", "split"),
    ],
)
def test_a_launch_that_fills_the_gpu_falls_with_more_multiprocessors(name: str, strategy: str) -> None:
    """Bandwidth grows with the multiprocessors in the model (waves of resident programs), so
    twice as many take a large launch in less time, never more."""
    few = CodegenOptions(target=dataclasses.replace(H200, memory_bandwidth_gbps=2400), multiprocessors=66)
    graph, tiling = _forced(name, strategy, few)
    slow = estimate(graph, tiling, few)
    fast = estimate(graph, tiling, CodegenOptions())
    assert fast.us < slow.us
    assert slow.waves >= fast.waves


def test_a_transposed_read_of_a_1d_tile_fetches_whole_sectors() -> None:
    """apbt (a + b.t(), float32): the 1D tile reads b one element a 32-byte sector; the 2D tile
    reads both inputs and the output along their own contiguous dimension."""
    one = _estimate("apbt_full", "tile_1d")
    two = _estimate("apbt_full", "tile_2d")
    assert one.fetched_bytes > 3 * two.fetched_bytes
    assert two.fetched_bytes == two.dram_bytes  # every sector used, no run shorter than a line
    assert one.us > 1.5 * two.us


def _embedding_norm(rows: int, table: int, width: int) -> str:
    """A layer norm of gathered embedding rows: each node reads e's row over its own loop
    variables (r for the statistics, j for the output), one element at each point of the tile."""
    return f"""
format: fuseopt-graph/1
name: embedding_norm
buffers:
  e: {{shape: [{table}, {width}], dtype: float32, role: input}}
  i: {{shape: [{rows}], dtype: int64, role: input}}
  m: {{shape: [{rows}], dtype: float32}}
  v: {{shape: [{rows}], dtype: float32}}
  out: {{shape: [{rows}, {width}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[x, {rows}]], reduce: [[r, {width}]], store: "m[x]", value: "sum(e[r + {width}*i[x]] / {width})"}}
  - name: n1
    loops: [[x, {rows}]]
    reduce: [[r, {width}]]
    store: "v[x]"
    value: "sum((e[r + {width}*i[x]] - m[x]) * (e[r + {width}*i[x]] - m[x]) / {width})"
  - {{name: n2, loops: [[x, {rows}], [j, {width}]], store: "out[{width}*x + j]", value: "(e[j + {width}*i[x]] - m[x]) * rsqrt(v[x] + 1e-05)"}}
"""


def test_reads_of_one_element_at_one_point_count_once() -> None:
    """An embedding row read by a norm's statistics and by its output (over different loop
    variables, the same element at each point): a persistent tile loads it once, so the model
    moves it once, not twice up to the table's size (H100, 16384 rows of 768 gathered from
    30522: persistent 21.3 us, looped 44.4, which the double count had taken)."""
    graph = load_text(_embedding_norm(16384, 30522, 768), "g.yaml")
    stage = optimize(graph)
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    opts = CodegenOptions()
    held = choose_tiling(stage.graph, launch, dataclasses.replace(opts, strategy="persistent_row"))
    est = estimate(stage.graph, held, opts)
    rows = 16384 * 768 * 4
    assert est.dram_bytes < 2.1 * rows  # the rows read once, the output written once
    assert isinstance(choose_tiling(stage.graph, launch, opts).strategy, PersistentRow)


def test_an_embedding_norm_matches_the_reference() -> None:
    graph = load_text(_embedding_norm(6, 11, 20), "g.yaml")
    stage = optimize(graph)
    check(stage.graph, stage.plan, CodegenOptions(strategy="persistent_row"), rtol=1e-4, atol=1e-4)


SOFTMAX = """
format: fuseopt-graph/1
name: softmax
buffers:
  x: {shape: [8192, 1024], dtype: float32, role: input}
  m: {shape: [8192], dtype: float32}
  s: {shape: [8192], dtype: float32}
  out: {shape: [8192, 1024], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 8192]], reduce: [[r, 1024]], store: "m[i]", value: "max(x[1024*i + r])"}
  - {name: n1, loops: [[i, 8192]], reduce: [[r, 1024]], store: "s[i]", value: "sum(exp(x[1024*i + r] - m[i]))"}
  - {name: n2, loops: [[i, 8192], [j, 1024]], store: "out[1024*i + j]", value: "exp(x[1024*i + j] - m[i]) / s[i]"}
"""


def test_later_r_loops_read_from_the_l2_while_the_rows_fit() -> None:
    """A looped softmax reads its input in two loops (the sum online in the max's): DRAM moves
    it once while the rows its resident programs hold fit in half the L2, twice when the L2 is
    too small for them."""
    graph = load_text(SOFTMAX, "softmax.yaml")
    stage = optimize(graph)
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    fits, tiny = (
        CodegenOptions(strategy="looped_row"),
        CodegenOptions(target=dataclasses.replace(H200, l2_bytes=1024), strategy="looped_row"),
    )
    tiling = choose_tiling(stage.graph, launch, fits)
    assert isinstance(tiling.strategy, LoopedRow)
    big = estimate(stage.graph, tiling, fits)
    small = estimate(stage.graph, tiling, tiny)
    x = 8192 * 1024 * 4
    assert big.dram_bytes < 2.1 * x < small.dram_bytes  # x read once and written once, or read twice
    assert small.us > big.us


def test_a_looped_row_steps_through_r_and_a_split_launches_twice() -> None:
    looped = _estimate("tsum_full", "looped_row")
    split = _estimate("tsum_full", "split")
    assert looped.steps > split.steps > 1 and looped.kernels == 1 and split.kernels == 2
    persistent = _estimate("layernorm_t_full", "persistent_row")
    assert persistent.steps == 1


def test_steps_at_the_latency_bound_a_launch_of_few_programs() -> None:
    """8 rows of 65536: one looped program a row, each walking r in steps; each step a round
    trip, so the steps, not the bytes, set the time."""
    graph, tiling = _forced("row_mean_split_bf16", "looped_row")
    e = estimate(graph, tiling, CodegenOptions())
    assert e.programs < H200.multiprocessors
    latency = H200.tuning.cost_latency_ns / 1e3
    assert e.us >= e.steps * latency + H200.tuning.cost_launch_us


def test_registers_grow_with_points_a_thread_and_accumulators() -> None:
    graph, launch = launches("layernorm_t_full")[0]
    small = tiling_of(graph, TABLE[4](graph, launch, CodegenOptions()), CodegenOptions())  # persistent
    assert isinstance(small.strategy, PersistentRow)
    wide = dataclasses.replace(
        small, config=dataclasses.replace(small.config, num_warps=small.config.num_warps // 2)
    )
    assert registers_of(wide, CodegenOptions()) > registers_of(small, CodegenOptions())
    looped_graph, looped = _forced("tsum_full", "looped_row")
    per_thread = (
        looped.config.block("XBLOCK") * looped.config.block("R0_BLOCK") // (32 * looped.config.num_warps)
    )
    base = H200.tuning.cost_base_registers
    assert registers_of(looped, CodegenOptions()) == base + 2 * per_thread  # its values and one accumulator


def test_an_online_variance_keeps_three_accumulators_a_lane() -> None:
    """A looped layer norm's mean and variance: the mean's sum one accumulator, the variance's
    Welford form three (count, mean, sum of squared deviations); a persistent tile none."""
    from fuseopt.codegen.loop_phases import online_sums

    graph, looped = _forced("layernorm_t_full", "looped_row")
    assert [f for f, _ in online_sums(looped.launch).values()]  # its variance is online
    per_thread = (
        looped.config.block("XBLOCK") * looped.config.block("R0_BLOCK") // (32 * looped.config.num_warps)
    )
    base = H200.tuning.cost_base_registers
    assert registers_of(looped, CodegenOptions()) == base + per_thread * (1 + 1 + 3)


def test_spilled_registers_move_through_memory() -> None:
    graph, tiling = _forced("layernorm_t_full", "persistent_row")
    huge = dataclasses.replace(tiling, config=dataclasses.replace(tiling.config, num_warps=1))
    spill = estimate(graph, huge, CodegenOptions())
    fits = estimate(graph, tiling, CodegenOptions())
    assert spill.registers == H200.max_registers_per_thread
    assert spill.dram_bytes > fits.dram_bytes


def test_the_cheapest_strategy_is_chosen_and_a_tie_keeps_the_table_order() -> None:
    """Row sums of 16384 x 3000 float32: the persistent and looped estimates are level (within
    `cost_tie_pct`, both at DRAM bandwidth), so the table's first, persistent rows; column sums
    over 16384 rows: the split is cheaper than a looped kernel of 4 programs."""
    text = """
format: fuseopt-graph/1
name: rows
buffers:
  x: {shape: [16384, 3000], dtype: float32, role: input}
  out: {shape: [16384], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 16384]], reduce: [[r, 3000]], store: "out[i]", value: "sum(x[3000*i + r])"}
"""
    graph = load_text(text, "rows.yaml")
    (launch,) = [
        la for la in build_schedule(graph, optimize(graph).plan).launches if isinstance(la, ComputeLaunch)
    ]
    o = CodegenOptions()
    both = [tiling_of(graph, p, o) for a in TABLE if (p := a(graph, launch, o)) is not None]
    assert [type(t.strategy) for t in both] == [PersistentRow, LoopedRow]
    times = [estimate(graph, t, o).us for t in both]
    assert abs(times[0] - times[1]) <= min(times) * o.tuning.cost_tie_pct / 100
    assert isinstance(choose_tiling(graph, launch, o).strategy, PersistentRow)
    graph, launch = launches("col_sum_split")[0]
    assert isinstance(choose_tiling(graph, launch, o).strategy, SplitPartial)
    looped = estimate(graph, choose_tiling(graph, launch, dataclasses.replace(o, strategy="looped_row")), o)
    split = estimate(graph, choose_tiling(graph, launch, o), o)
    assert split.us < looped.us


def test_a_forced_strategy_is_taken_where_it_applies() -> None:
    graph, launch = launches("apbt_full")[0]
    assert isinstance(choose_tiling(graph, launch, CodegenOptions()).strategy, Tile2D)
    assert isinstance(choose_tiling(graph, launch, CodegenOptions(strategy="tile_1d")).strategy, Tile1D)
    # a reduction strategy does not apply to a pointwise launch: the cheapest that does
    assert isinstance(choose_tiling(graph, launch, CodegenOptions(strategy="split")).strategy, Tile2D)
    with pytest.raises(ValueError, match="tile_1d"):
        CodegenOptions(strategy="tile1d")


@settings(max_examples=25, deadline=None)
@given(family=st.sampled_from(sorted(FAMILIES)), seed=st.integers(0, 10_000), nodes=st.integers(4, 24))
def test_every_launch_takes_a_strategy_within_the_tie_of_the_cheapest(
    family: str, seed: int, nodes: int
) -> None:
    """Random graphs: every estimate is positive and finite, and the chosen strategy is one that
    applies, its estimate within `cost_tie_pct` of the least."""
    doc = FAMILIES[family](nodes, seed)
    graph = load_text(json.dumps(doc), "g.json") if isinstance(doc, dict) else doc
    stage = optimize(graph)
    o = CodegenOptions()
    for launch in build_schedule(stage.graph, stage.plan).launches:
        if not (isinstance(launch, ComputeLaunch) and launch.stores):
            continue
        applicable = [
            tiling_of(stage.graph, p, o) for a in TABLE if (p := a(stage.graph, launch, o)) is not None
        ]
        times = {t.strategy: estimate(stage.graph, t, o).us for t in applicable}
        assert all(0 < us < float("inf") for us in times.values())
        chosen = choose_tiling(stage.graph, launch, o)
        assert chosen.strategy in times
        assert times[chosen.strategy] <= min(times.values()) * (1 + o.tuning.cost_tie_pct / 100)


def test_the_strategy_names_are_the_table_modules() -> None:
    from fuseopt.codegen.options import STRATEGY_NAMES

    table = tuple(strategy_name(a) for a in TABLE)
    assert table + ("sliding_window", "register_window") == STRATEGY_NAMES


def test_the_kernel_header_gives_the_estimates_behind_its_strategy() -> None:
    """Where more than one strategy applied, the kernel's comment lists each with its estimate
    and marks the one taken; a forced strategy was not weighed."""
    from fuseopt.codegen import emit_module
    from tests.update_golden import KERNELS, planned

    stage = planned(f"{KERNELS}/apbt_full.json")
    src = emit_module(stage.graph, stage.plan)
    (line,) = [ln for ln in src.splitlines() if ln.startswith("#   cost model, estimated us: ")]
    names = [part.split()[0] for part in line.split(": ", 1)[1].split(", ")]
    assert names == ["tile_2d", "row_split", "tile_1d"] and line.count("(taken)") == 1
    assert "tile_2d" in line.split("(taken)")[0].rsplit(",", 1)[-1]
    forced = emit_module(stage.graph, stage.plan, options=CodegenOptions(strategy="tile_1d"))
    assert "cost model" not in forced


def test_a_window_fetches_only_the_loads_it_does_not_carry_or_share() -> None:
    """avgpool_cl (3x3 over a channels-last image): a sliding window loads the third of a row's
    values it does not carry from the row before; a register window's cells share most of
    theirs (counted by `windows.census` from the IR)."""
    from fuseopt.codegen.choice import candidates
    from fuseopt.codegen.cost import issued
    from fuseopt.codegen.strategies import RegisterWindow, SlidingWindow, Unrolled

    graph, launch = launches("avgpool_cl_full")[0]
    o = CodegenOptions()
    by = {}
    for tiling, _ in candidates(graph, launch, o):
        by.setdefault(type(tiling.strategy), (tiling, estimate(graph, tiling, o)))
    unrolled, sliding, cells = (by[k] for k in (Unrolled, SlidingWindow, RegisterWindow))
    assert issued(unrolled[0]) == 1.0 and issued(sliding[0]) == pytest.approx(1 / 3)
    assert 0 < issued(cells[0]) < issued(sliding[0])
    assert cells[1].fetched_bytes < sliding[1].fetched_bytes < unrolled[1].fetched_bytes


def test_a_sliding_window_steps_through_its_rows() -> None:
    """The cost model's view of a row walk: one memory round trip a row of the band."""
    from fuseopt.codegen.choice import candidates
    from fuseopt.codegen.strategies import SlidingWindow

    graph, launch = launches("avgpool_cl_full")[0]
    o = CodegenOptions()
    walks = [t for t, _ in candidates(graph, launch, o) if isinstance(t.strategy, SlidingWindow)]
    assert walks and all(estimate(graph, t, o).steps == t.strategy.rows > 1 for t in walks)
