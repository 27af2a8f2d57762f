"""`codegen.launch_configs`: the launches every strategy plans are ones Triton can run and the
kernel expects, for every target and for shrunk limits: blocks and warps powers of two, warps
within the target's, blocks within their axis (a power of two past its size, no more) and the
target's limits, the default launch first among unique autotune candidates; a split reduction's
chunks cover r exactly once with whole R0_BLOCKs, within the grid, and its finishing tile holds
every chunk. Checked on every golden kernel and on random graphs."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from fuseopt.codegen.common import cdiv, next_power_of_2
from fuseopt.codegen.launch_configs import finish_config, register_limit, thread_registers
from fuseopt.codegen.loop_phases import accumulators, online_sums
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import TABLE, LoopedRow, PersistentRow, SplitPartial
from fuseopt.codegen.strategies.base import Planned
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan
from fuseopt.targets import get, names
from tests.strategies import doc_graph, graph_docs
from tests.sweeps import examples
from tests.update_golden import kernel_graphs, planned

# Every target, and limits shrunk as the interpreter tests shrink them (tiny graphs take every path).
OPTIONS = [CodegenOptions(target=get(n)) for n in names()] + [
    CodegenOptions(
        max_xblock=8, max_r0_block=4, persistent_rnumel=8, split_programs=64, split_min_r_blocks=1
    ),
    CodegenOptions(target=get("a100"), multiprocessors=7, clusters=False),
]
TRITON_MAX_WARPS = 32


def _power_of_2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def check_config(
    launch: ComputeLaunch, c: LaunchConfig, o: CodegenOptions, *, persistent: bool, looped: bool = False
) -> None:
    t = o.tuning
    most_r = max(t.max_r0_block, t.looped_max_r0_block) if looped else t.max_r0_block
    limits = {"XBLOCK": t.max_xblock, "YBLOCK": t.max_yblock, "R0_BLOCK": most_r}
    assert _power_of_2(c.num_warps) and c.num_warps <= TRITON_MAX_WARPS, c
    assert c.num_warps <= max(t.max_warps, t.pointwise_max_warps, t.cluster_warps, t.looped_widened_warps), c
    assert _power_of_2(c.num_ctas) and (c.num_ctas == 1 or o.use_clusters), c
    assert [b for b, _ in c.blocks] == [a.block for a in launch.axes], c  # the kernel's constexprs
    for (name, block), axis in zip(c.blocks, launch.axes, strict=True):
        assert _power_of_2(block), c
        assert block <= next_power_of_2(axis.numel), (c, axis)  # no tile wider than its axis needs
        # a persistent tile holds its rows whole; a looped tile may offer autotune a whole row a
        # step where later loops read it again (`configs_reduction`)
        whole_row = name == "R0_BLOCK" and (persistent or (looped and block == next_power_of_2(axis.numel)))
        # a 2D tile narrower than max_xblock may take more rows, no more points (`configs_2d`)
        narrow = name == "YBLOCK" and block * c.block("XBLOCK") <= t.max_yblock * t.max_xblock
        assert whole_row or narrow or block <= limits[name], (c, limits)


def check_planned(graph: Graph, planned_: Planned[object], o: CodegenOptions) -> None:
    launch, s = planned_.launch, planned_.strategy
    persistent = isinstance(s, PersistentRow)
    if isinstance(s, LoopedRow):  # its values and accumulators fit a thread's registers
        c = planned_.config
        held = accumulators(launch, online_sums(launch))
        xb, rb = c.block("XBLOCK"), c.block("R0_BLOCK")
        fits = thread_registers(xb * rb, c.num_warps, held, o) <= register_limit(c.num_warps, o)
        assert fits or rb <= o.tuning.looped_min_r0_block, (c, held)
    assert planned_.candidates[0] == planned_.config  # the default first
    assert len(set(planned_.candidates)) == len(planned_.candidates)
    assert planned_.config in planned_.candidates
    for c in (*planned_.candidates, *([planned_.fallback] if planned_.fallback else [])):
        check_config(launch, c, o, persistent=persistent, looped=isinstance(s, LoopedRow))
    if planned_.fallback is not None:  # a cluster's launch where clusters are not available
        assert planned_.config.num_ctas > 1 and planned_.fallback.num_ctas == 1
    if isinstance(s, SplitPartial):
        xnumel, rnumel = launch.axes[0].numel, launch.axes[1].numel
        assert 2 <= s.chunks <= o.gpu.max_grid_y
        assert (s.chunks - 1) * s.chunk < rnumel <= s.chunks * s.chunk  # every r point, once
        assert s.chunks * xnumel < 2**31  # partial results indexed in int32
        for c in planned_.candidates:
            assert s.chunk % c.block("R0_BLOCK") == 0, (s, c)  # no r mask inside a chunk
        fin = finish_config(xnumel, s.chunks, o)
        assert fin.block("R0_BLOCK") >= s.chunks and _power_of_2(fin.num_warps)
        assert fin.block("XBLOCK") <= next_power_of_2(xnumel)


def check_plan(graph: Graph, plan: Plan) -> int:
    n = 0
    for launch in build_schedule(graph, plan).launches:
        if not (isinstance(launch, ComputeLaunch) and launch.stores):
            continue
        for o in OPTIONS:
            tuned = CodegenOptions(**{**_fields(o), "autotune": True})
            for applies in TABLE:
                got = applies(graph, launch, tuned)
                if got is not None:
                    check_planned(graph, got, tuned)
                    n += 1
    return n


def _fields(o: CodegenOptions) -> dict[str, object]:
    return {k: v for k, v in o.__dict__.items() if k != "gpu"}


@pytest.mark.parametrize("path", kernel_graphs(), ids=os.path.basename)
def test_launches_of_the_golden_kernels(path: str) -> None:
    stage = planned(path)
    assert check_plan(stage.graph, stage.plan) > 0


@settings(
    max_examples=examples(150, quick=15),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(graph_docs())
def test_launches_of_random_graphs(doc: dict[str, object]) -> None:
    stage = optimize(doc_graph(doc))
    check_plan(stage.graph, stage.plan)


def test_split_chunks_for_every_row_length() -> None:
    """Row sums of 4 rows of every length 2..600, blocks of 4 points, rows packed (stride = r) and
    padded to whole vectors: the chunks cover r once; chunks that do not divide r only for rows
    that start on vectors, and such rows always split."""
    from fuseopt.codegen.strategies import split
    from fuseopt.io.load import load_text

    o = CodegenOptions(max_r0_block=4, persistent_rnumel=1, split_programs=64, split_min_r_blocks=1)
    uneven = 0
    for r in range(2, 601):
        for stride in dict.fromkeys((r, cdiv(r, 4) * 4)):
            text = (
                "format: fuseopt-graph/1\nname: rows\nbuffers:\n"
                f"  x: {{shape: [4, {stride}], dtype: float32, role: input}}\n"
                "  out: {shape: [4], dtype: float32, role: output}\n"
                f"nodes:\n  - {{name: n0, loops: [[x0, 4]], reduce: [[r0, {r}]], store: 'out[x0]', "
                f"value: 'sum(x[{stride}*x0 + r0])'}}\n"
            )
            graph = load_text(text, "rows.yaml")
            (launch,) = [
                la
                for la in build_schedule(graph, optimize(graph).plan).launches
                if isinstance(la, ComputeLaunch)
            ]
            got = split.applies(graph, launch, o)
            aligned = stride % 4 == 0
            assert (got is not None) == (aligned and r > 4), (r, stride)
            if got is None:
                continue
            check_planned(graph, got, o)
            s = got.strategy
            assert isinstance(s, SplitPartial) and cdiv(r, s.chunk) == s.chunks
            if s.chunk * s.chunks != r:
                assert aligned, (r, stride, s)
                uneven += 1
    assert uneven > 300


def _column_statistics(rows: int, cols: int) -> Graph:
    """The mean and variance of each of `cols` columns over `rows` rows (float32, contiguous along
    the columns): one looped reduction, the variance online (four accumulators a point)."""
    from fuseopt.io.load import load_text

    n = float(rows)
    text = f"""
format: fuseopt-graph/1
name: column_statistics
buffers:
  x: {{shape: [{rows}, {cols}], dtype: float32, role: input}}
  mean: {{shape: [{cols}], dtype: float32, role: output}}
  var: {{shape: [{cols}], dtype: float32, role: output}}
nodes:
  - {{name: m, loops: [[c, {cols}]], reduce: [[r, {rows}]], store: "mean[c]", value: "sum(x[{cols}*r + c] / {n})"}}
  - {{name: v, loops: [[c, {cols}]], reduce: [[r, {rows}]], store: "var[c]",
      value: "sum((x[{cols}*r + c] - mean[c]) * (x[{cols}*r + c] - mean[c]))"}}
"""
    return load_text(text, "column_statistics.yaml")


def test_a_widened_tile_of_many_accumulators_fits_the_registers() -> None:
    """Column statistics of 256 columns: 32 tiles, too few, so the looped tile widens R0_BLOCK for
    bytes in flight (16 warps), but each point holds four accumulators (a sum and an online
    variance's three): 8 x 4096 points would need 344 registers a thread of the 128 a 16-warp
    program gets. R0_BLOCK narrows until they fit, and the cost model charges what the wide tile
    would reload every step. The same holds for a BatchNorm's statistics captured on an H100."""
    from dataclasses import replace

    from fuseopt.codegen.cost import estimate
    from fuseopt.codegen.strategies import looped_row
    from fuseopt.codegen.tile_shapes import tiling_of
    from fuseopt.io.load import load_graph

    path = os.path.join(os.path.dirname(__file__), "fixtures", "bn_train_captured_h100.json")
    for graph, held_expected in ((_column_statistics(65536, 256), 4), (load_graph(path), 5)):
        stage = optimize(graph)
        launch = next(
            la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
        )
        held = accumulators(launch, online_sums(launch))
        assert held == held_expected
        for o in (CodegenOptions(target=get("h100")), CodegenOptions(target=get("h200"))):
            planned_ = looped_row.applies(stage.graph, launch, o)
            assert planned_ is not None
            c = planned_.config
            xb, rb = c.block("XBLOCK"), c.block("R0_BLOCK")
            assert thread_registers(xb * rb, c.num_warps, held, o) <= register_limit(c.num_warps, o), c
            if held_expected == 4:
                assert c == LaunchConfig((("XBLOCK", 8), ("R0_BLOCK", 1024)), 16), c
                tiling = tiling_of(stage.graph, planned_, o)
                wide = replace(tiling, config=LaunchConfig((("XBLOCK", 8), ("R0_BLOCK", 4096)), 16))
                assert estimate(stage.graph, wide, o).us > 2 * estimate(stage.graph, tiling, o).us
