"""`codegen.strategies.split`: a split reduction, its partial kernel and its finishing kernel."""

from __future__ import annotations

import dataclasses

import pytest

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import SplitFinish, SplitPartial, split
from fuseopt.codegen.tile_shapes import finish_tiling
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from tests.strategies import check, graph, unfused_plan
from tests.strategy_graphs import launches, strategies, tilings, tilings_of


def test_split_taken_and_finished() -> None:
    for name in ["col_sum_split", "row_mean_split_bf16", "tsum_full", "three_layouts_mean_full"]:
        (t,) = tilings(name)
        assert isinstance(t.strategy, SplitPartial) and t.strategy.chunks >= 2, name
        finish = finish_tiling(t, CodegenOptions())
        assert finish.strategy == SplitFinish(t.strategy.chunks)
        assert t.grid(t.config)[1] == t.strategy.chunks  # program_id(1): a chunk


def test_split_not_taken() -> None:
    for name in ["row_sum_looped", "tsum_small", "pointwise_1d_fp16"]:
        assert SplitPartial not in strategies(name), name
    assert strategies("col_sum_split", CodegenOptions(split_programs=0)) != [SplitPartial]  # 0: never


def _partial(src: str) -> str:
    """The split's partial kernel (part 1) of a module's source."""
    return next(k for k in src.split("@triton.jit") if "rsplit = tl.program_id(1)" in k)


_SPLIT = CodegenOptions(
    persistent_rnumel=0, max_r0_block=8, unroll_rnumel=0, split_programs=64, strategy="split"
)


def _reduction(xs: int, length: int, along_x: bool, reduction: str = "sum", dtype: str = "float32") -> Graph:
    """`xs` reductions of `length` points each, the data contiguous along x (a column sum) or
    along r (a row sum)."""
    shape, index = ([length, xs], f"{xs}*r + i") if along_x else ([xs, length], f"{length}*i + r")
    return graph(
        f"""
format: fuseopt-graph/1
name: reductions
buffers:
  x: {{shape: {shape}, dtype: {dtype}, role: input}}
  out: {{shape: [{xs}], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[i, {xs}]], reduce: [[r, {length}]], store: "out[i]", value: "{reduction}(cast(x[{index}], float32))"}}
"""
    )


@pytest.mark.parametrize(
    ("cols", "length", "reduction", "dtype", "min_blocks"),
    [
        (3, 103, "sum", "float32", 1),  # 13 blocks of 8, the last of 7: r masked
        # the sweeps run these two too (each an interpreter run; the quick set keeps both paths)
        pytest.param(2, 67, "max", "float16", 1, marks=pytest.mark.slow),
        (5, 56, "sum", "bfloat16", 2),  # 7 whole blocks, no divisor of 7 up to 7 // 2: 3 + 3 + 1
        pytest.param(4, 29, "min", "float32", 1, marks=pytest.mark.slow),
    ],
)
def test_chunks_that_do_not_divide_r_end_at_its_end(
    cols: int, length: int, reduction: str, dtype: str, min_blocks: int
) -> None:
    """Data contiguous along x, an r that whole blocks do not divide, or a count of blocks no
    allowed chunk count divides: chunks of whole blocks, the last one ending at r's end (a
    `tl.minimum` bound, and the r mask where the blocks do not divide r); checked against the
    reference interpreter."""
    g = _reduction(cols, length, True, reduction, dtype)
    opts = dataclasses.replace(_SPLIT, split_min_r_blocks=min_blocks)
    plan = optimize(g).plan
    (t,) = tilings_of(g, plan, opts)
    assert isinstance(t.strategy, SplitPartial)
    chunk, chunks = t.strategy.chunk, t.strategy.chunks
    assert chunk % 8 == 0 and chunk * (chunks - 1) < length < chunk * chunks
    part = _partial(check(g, plan, opts))
    assert f"range(rsplit * {chunk}, tl.minimum((rsplit + 1) * {chunk}, r0_numel), R0_BLOCK)" in part
    assert ("r0_mask" in part) == (length % 8 != 0)


def test_rows_contiguous_along_r_split_only_into_equal_chunks() -> None:
    """The same reduction over rows contiguous along r: no uneven chunks (the split's wide x tile
    would read misaligned rows), so it stays one looped kernel."""
    g = _reduction(3, 103, False)
    opts = dataclasses.replace(_SPLIT, split_min_r_blocks=1)
    plan = optimize(g).plan
    (t,) = tilings_of(g, plan, opts)
    assert not isinstance(t.strategy, SplitPartial)
    assert "rsplit" not in check(g, plan, opts)


def test_chunks_that_divide_r_keep_an_unmasked_loop() -> None:
    """Blocks that divide r into equal chunks: the loop ends at its chunk's end, no bound, no mask."""
    g = _reduction(3, 96, False)
    opts = dataclasses.replace(_SPLIT, split_min_r_blocks=1)
    plan = optimize(g).plan
    (t,) = tilings_of(g, plan, opts)
    assert isinstance(t.strategy, SplitPartial) and t.strategy.chunk * t.strategy.chunks == 96
    part = _partial(check(g, plan, opts))
    assert "tl.minimum(" not in part and "r0_mask" not in part


def test_split_work_is_a_chunk_of_steps_and_two_launches() -> None:
    graph, launch = launches("col_sum_split")[0]
    planned = split.applies(graph, launch, CodegenOptions())
    assert planned is not None
    w = split.work(planned.strategy, planned.launch, planned.config, 1)
    assert w.kernels == 2 and w.accumulates
    assert w.steps == -(-planned.strategy.chunk // planned.config.block("R0_BLOCK"))


@pytest.mark.parametrize(
    "rows, length, dtype, splits",
    [
        (128, 200000, "float32", True),  # rows start on 16-byte boundaries: chunks need not divide r
        (256, 99999, "float16", False),  # misaligned rows: only chunks that divide r, here none
        (2048, 9999, "float32", False),
    ],
)
def test_uneven_chunks_of_rows_along_r_only_where_rows_are_aligned(
    rows: int, length: int, dtype: str, splits: bool
) -> None:
    """Measured on an H200 (rules-2026-12-02-split-h200.json): 128 x 200000 float32 row sums
    34.5 us split, 54.5 looped; a 256 x 99999 float16 row max 71.1 split, 43.5 looped."""
    g = optimize(_reduction(rows, length, along_x=False, dtype=dtype)).graph
    (launch,) = [la for la in build_schedule(g, unfused_plan(g)).launches if isinstance(la, ComputeLaunch)]
    assert (split.applies(g, launch, CodegenOptions()) is not None) == splits


@pytest.mark.parametrize(("dtype", "columns"), [("float32", 32), ("bfloat16", 64), ("float16", 64)])
def test_a_split_contiguous_along_x_reads_a_cache_line_a_row(dtype: str, columns: int) -> None:
    """A column sum's partial tile is a cache line of its smallest element contiguous along x
    wide (128 bytes: 32 float32 or 64 16-bit columns), at most `split_tile_elements` points. On
    an H200 (launches-2026-12-05-h200.json) five 16-bit column sums ran 1-8% faster so. Data
    contiguous along r keeps `split_xblock` rows."""
    options = CodegenOptions()
    tu, line = options.tuning, options.gpu.cache_line_bytes
    g = optimize(_reduction(5000, 6000, along_x=True, dtype=dtype)).graph
    (launch,) = [la for la in build_schedule(g, unfused_plan(g)).launches if isinstance(la, ComputeLaunch)]
    planned = split.applies(g, launch, options)
    assert planned is not None
    xb, rb = planned.config.block("XBLOCK"), planned.config.block("R0_BLOCK")
    assert xb == columns == line // (4 if dtype == "float32" else 2)
    assert xb * rb <= tu.split_tile_elements and rb == tu.split_tile_elements // xb
    rows = optimize(_reduction(128, 200000, along_x=False, dtype=dtype)).graph
    (launch,) = [
        la for la in build_schedule(rows, unfused_plan(rows)).launches if isinstance(la, ComputeLaunch)
    ]
    planned = split.applies(rows, launch, options)
    assert planned is not None and planned.config.block("XBLOCK") == tu.split_xblock


@pytest.mark.parametrize(
    ("dtype", "columns"),
    [("bfloat16", 64), pytest.param("float16", 64, marks=pytest.mark.slow), ("int8", 128)],
)
def test_a_narrow_column_sum_split_a_cache_line_wide_matches_the_reference(dtype: str, columns: int) -> None:
    """The partial tile of 64 16-bit or 128 8-bit columns, with masked columns and chunks that do
    not divide r, run under the interpreter against the reference."""
    g = _reduction(70, 600, along_x=True, dtype=dtype)  # 70 columns: masked; 600 rows: uneven chunks
    opts = dataclasses.replace(
        CodegenOptions(),
        persistent_rnumel=0,
        unroll_rnumel=0,
        split_programs=64,
        split_min_r_blocks=1,
        strategy="split",
    )
    plan = optimize(g).plan
    (t,) = tilings_of(g, plan, opts)
    assert isinstance(t.strategy, SplitPartial) and t.config.block("XBLOCK") == columns
    part = _partial(check(g, plan, opts))
    assert "xmask" in part and "tl.minimum(" in part


@pytest.mark.parametrize("reduction", ["max", "min", "sum"])
def test_rows_enough_for_the_gpu_are_not_split(reduction: str) -> None:
    """Rows read along r, as many as the programs a split aims at (`split_target`): a looped
    tile takes a row a program there, so chunks of r have nothing left to fill (16384 float32
    maxima of 6000 points split into 5 chunks: 156 us on an H100, torch.compile 137). Fewer rows,
    or data contiguous along x, still split. (Rows of 20000 points here: a row of 6000 read in
    vectors is now held whole, which no split is tried against.)"""
    o = CodegenOptions()
    cases = ((o.split_target, False, False), (o.split_target // 8, False, True), (o.split_target, True, True))
    for rows, along_x, splits in cases:
        g = _reduction(rows, 20000, along_x, reduction)
        (launch,) = [
            la for la in build_schedule(g, optimize(g).plan).launches if isinstance(la, ComputeLaunch)
        ]
        assert (split.applies(g, launch, o) is not None) == splits, (rows, along_x)
