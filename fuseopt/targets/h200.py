"""The NVIDIA H200 (SXM): the GPU code generation is tuned on, and the default target.

Hardware facts: NVIDIA's Hopper (GH100) specifications, as torch reports them on the device. Tuned
constants: each with one line of why and the results file that shows it. `RUNS` is the current
pair of runs of the six workloads (with `2026-11-30-h200-run2.json`, the run-to-run spread);
`HISTORY` is the results README's History, which names each explore round's commit (its script
and JSON). "Not swept": the value was set once and the current runs use it; no run compared
another value. A commit hash names the commit whose message holds a figure no results file kept.
"""

from __future__ import annotations

from fuseopt.targets.base import Target, tuned

RUNS = "benchmarks/results/2026-11-30-h200.json"
RULES = "benchmarks/results/rules-2026-12-02-h200.json"  # suite workloads, GPU time, one constant changed at a time
LOOPED = "benchmarks/results/rules-2026-12-02-looped-h200.json"  # looped reductions of few rows, GPU time
POINTWISE = "benchmarks/results/rules-2026-12-02-pointwise-h200.json"  # 1D pointwise tiles, GPU time
ROWS = "benchmarks/results/rules-2026-12-02-rows-h200.json"  # 2D row tiles of pooling windows, GPU time
HISTORY = "benchmarks/results/README.md (history)"
COST = "benchmarks/results/cost-2026-12-04.json"  # the cost model against measured H200 pairs
FEW = "benchmarks/results/few-rows-2026-12-05-h200.json"  # looped rows of vocab-sized reductions, GPU time
SPLIT = "benchmarks/results/launches-2026-12-05-h200.json"  # split and persistent row launches, GPU time
LONG_ROWS = (
    "benchmarks/results/long-rows-2026-12-06-h100.json"  # looped rows, one a program or several, GPU time
)
PERSISTENT = "benchmarks/results/persistent-rows-2026-12-06-h100.json"  # rows held whole past 4096, GPU time
FISSION = (
    "benchmarks/results/fission-2026-12-05-h100.json"  # looped reductions' r loops apart or fused, GPU time
)

TUNING, PROVENANCE = tuned(
    "h200",
    # -- block caps
    max_xblock=(
        1024,
        "the widest row of a tile: 4 KB of float32, 16-byte loads for 4 warps; the six workloads' launches",
        RUNS,
    ),
    max_yblock=(
        64,
        "rows of a 2D tile: apbt's 64 x 128 transposed tile (96.9% of copy) and unrolled tiles stay within it",
        RUNS,
    ),
    max_r0_block=(
        1024,
        "a persistent row of up to 1024 points in one R0_BLOCK: layernorm_t's and softmax_bias_t's rows",
        RUNS,
    ),
    max_warps=(
        8,
        "32 x 1024 persistent tiles on 8 warps hold 184-226 registers a thread, no spills (explore rounds 10-14)",
        HISTORY,
    ),
    # -- pointwise tiles
    pointwise_points_per_warp=(
        256,
        "a 1024-point 1D tile on 4 warps, 8 float32 a thread in two 16-byte loads; not swept",
        RUNS,
    ),
    pointwise_max_warps=(
        4,
        "4 warps for pointwise tiles: apbt's 2D tile at 96.9% of copy; other tiles within noise (explore round 8)",
        HISTORY,
    ),
    pointwise_loads_in_flight=(
        32,
        "3x3 pooling (9 loads a point) on 2 points a thread: avg_s1_f32 30.2 -> 24.1 us, avg_s2_f16 47.2 -> 33.2",
        POINTWISE,
    ),
    pointwise_warps_per_multiprocessor=(
        16,
        "chain_f32_odd's 258,741 points on 2 points a thread, 30 warps a multiprocessor: 6.18 -> 5.41 us",
        POINTWISE,
    ),
    transpose_yblock=(
        64,
        "apbt's transposed tile, 64 rows x 128 points: 96.9% of copy; other tiles within noise (explore round 8)",
        HISTORY,
    ),
    transpose_xblock=(
        128,
        "apbt's transposed tile, 64 rows x 128 points: every access coalesced along its contiguous dimension",
        HISTORY,
    ),
    transpose_points_per_warp=(
        512,
        "with pointwise_max_warps, 4 warps for apbt's 8192-point tile; not swept",
        RUNS,
    ),
    # -- rows of index arithmetic, unrolled small reductions
    row_split_min_points=(
        16,
        "rows split only into whole unmasked blocks of 16+ points: rows of 56, 333, 4097 ran 15-55% slower split",
        RULES,
    ),
    unroll_rnumel=(
        16,
        "a 3 x 3 pooling window unrolled: 9 loads coalesced along the output, not r lanes 9 of 16 used; not swept",
        RUNS,
    ),
    unrolled_1d_xblock=(
        1024,
        "a 1D unrolled tile of 1024 points on 4 warps, 2-4 16-byte loads in flight a thread; not swept",
        HISTORY,
    ),
    unrolled_1d_points_per_warp=(
        128,
        "with unrolled_warps, a 1024-point unrolled tile on 4 warps; not swept",
        HISTORY,
    ),
    unrolled_row_xblock=(
        128,
        "the largest power of two dividing the row: whole 128-byte lines of 64 bfloat16 channels, no mask",
        HISTORY,
    ),
    unrolled_min_xblock=(
        16,
        "below 16 points a row, a power of two dividing it is too narrow to coalesce; not swept",
        HISTORY,
    ),
    unrolled_points=(
        2048,
        "avgpool_cl's 2D tiles: 32 rows of 64 channels 0.0496 ms, 64 rows 0.0587, 16 0.0495, 8 0.0557 (0c70975)",
        HISTORY,
    ),
    unrolled_points_per_warp=(
        256,
        "with unrolled_warps, 4 warps for avgpool_cl's 2048-point tiles; not swept",
        HISTORY,
    ),
    unrolled_warps=(
        4,
        "4 warps for avgpool_cl's 2048-point unrolled tiles (the run before sliding windows, 56.2% of copy)",
        HISTORY,
    ),
    row_loads_in_flight=(
        48,
        "channels-last pooling as row tiles: 4 points a thread fastest for 9 loads a point (of 16/8/4/2, 6 of 6), "
        "8 within 1% of it for 4: max_s2_cl_bf16 27.4 -> 24.7 us",
        ROWS,
    ),
    # -- sliding windows
    window_min_row=(
        256,
        "rows of at least 256 points (an image row of W x C channels-last points); not swept",
        RUNS,
    ),
    window_band=(
        8,
        "up to 8 rows walked a program, the most dividing the rows' period (avgpool_cl: 7 of 35); not swept",
        HISTORY,
    ),
    window_xblock=(
        1024,
        "avgpool_cl: 1024 points x 4 warps 0.0451 ms; 512 x 2 0.0452, 2048 x 8 0.0519 (explore round 5)",
        HISTORY,
    ),
    window_warps=(
        4,
        "avgpool_cl: 1024 points on 4 warps 0.0451 ms, on 8 warps 0.0468 (explore round 5)",
        HISTORY,
    ),
    window_points_per_warp=(
        256,
        "with window_warps, 4 warps for a 1024-point row (explore round 5)",
        HISTORY,
    ),
    window_carry_ratio=(
        2,
        "half a row carried: avgpool_cl carries 6 of 9 (56% -> 63% of copy); a stride-2 window's 3 of 9 ran 44.6 us, unrolled 27.5",
        RULES,
    ),
    # -- register windows
    window_cells=(
        25,
        "5 x 5 cells: avgpool_cl 71.4-74.8% of copy, level with the hand-written kernel (explore rounds 38-39)",
        HISTORY,
    ),
    window_cols=(
        7,
        "up to 7 columns: the hand-written 3 x 7 ran 75.6%; overlapping chunks 59.6-67.1% (explore rounds 34-39)",
        HISTORY,
    ),
    window_rows=(
        5,
        "up to 5 rows, overlapping bands allowed (4 x 5, 3 x 7 at 70-75% of copy; explore rounds 38-39)",
        HISTORY,
    ),
    window_slice=(
        64,
        "64 channels a program, one warp: 128 or 256 with 2-4 warps were 5-10 points slower (explore round 34)",
        HISTORY,
    ),
    cells_points_per_warp=(
        64,
        "one warp for a 64-point slice: two bfloat16 or float32 elements a thread (explore round 34)",
        HISTORY,
    ),
    cells_share_ratio=(
        2,
        "cells sharing half their loads (avgpool_cl: 49 of 225); max_s2_cl_bf16's 81 of 144 ran 58.5 us, unrolled 27.5",
        RULES,
    ),
    # -- persistent reductions
    persistent_rnumel=(
        4096,
        "rows of 4096 read once, not once a pass: rms_bf16 69.2 -> 38.3 us, sm_f16 45.0 -> 21.8, sum_f32 41.1 -> 38.3",
        RULES,
    ),
    persistent_aligned_rnumel=(
        16384,
        "aligned rows of 4097-16384 held whole: 17 of 18 faster (ln_7000_f16 62.3 -> 41.9 us), sm_10000_f32 2% slower; "
        "unaligned ones lose (sm_10007_f32 70.7 -> 104.7); a 32768-point row spills (sm_32000_f16 +13%)",
        PERSISTENT,
    ),
    persistent_outer_rnumel=(
        1024,
        "transposed rows held whole up to 1024 (layernorm_t 81.1%); colsum_f32's 4096 ran 62.9 us against 40.8 looped",
        RULES,
    ),
    persistent_elements=(
        2048,
        "row tiles of 2048 points: ln_f16_odd 14.3 -> 11.6 us (8192: 14.1), 7 of 9 others 1-3% faster; zoo_convnext_ln +9%",
        RULES,
    ),
    persistent_per_thread=(
        16,
        "16 points a thread, 4 warps for a 2048-point tile: 8 a thread lost on 5 of 9 (rules file, second round)",
        RULES,
    ),
    persistent_outer_elements=(
        32768,
        "32 x 1024 transposed tiles: layernorm_t 80-81% against 78-80% at 16 x 4, a column mean 0.0506 -> 0.0440 ms",
        HISTORY,
    ),
    persistent_outer_sfu_elements=(
        16384,
        "under a per-point exp 16 x 4 wins: softmax_bias_t 76-77% against 67% at 32 x 8 (explore rounds 11-14)",
        HISTORY,
    ),
    persistent_outer_per_thread=(
        128,
        "128 points a thread: 8 warps for 32 x 1024, one program a multiprocessor (explore rounds 11-14)",
        HISTORY,
    ),
    outer_x_ratio=(
        2,
        "half as many bytes along x as along r decide (softmax_bias_t); transposed reads 57/66/73% at 8/16/32 rows",
        HISTORY,
    ),
    # -- clusters
    cluster_size=(
        2,
        "clusters of two: layernorm_t 82.8% against 80.0%; of 4 or 8 programs 46-78% (explore rounds 18-20, 23)",
        HISTORY,
    ),
    cluster_elements=(
        32768,
        "32 x 1024 split over the pair: layernorm_t 82.8%, softmax_bias_t 76.8-78.3% (explore rounds 18-19)",
        HISTORY,
    ),
    cluster_warps=(
        4,
        "4 warps a program: clusters of two 8-warp programs lose (46-78%, explore rounds 18-19)",
        HISTORY,
    ),
    cluster_min_rows=(
        8,
        "the smallest share of a tile a cluster's program gets (programs of 8 rows already lose, rounds 18-19)",
        HISTORY,
    ),
    # -- looped reductions
    looped_programs_per_multiprocessor=(
        4,
        "about 4 programs a multiprocessor: 64 programs of 64 rows ran tsum at 57% of copy (9983f1a)",
        HISTORY,
    ),
    looped_max_xblock=(
        64,
        "at most 64 rows a looped tile; not swept",
        HISTORY,
    ),
    looped_outer_x_bytes=(
        32,
        "a 32-byte sector a row: colsum_bf16_odd 44.7 us at 8 bf16 columns, 39.3 at 16 x 512, 31.5 at 16 x 256 (autotuned)",
        RULES,
    ),
    looped_elements=(
        8192,
        "~8192 points of tile-wide accesses: tsum 8 x 512, three_layouts_mean 16 x 128, best of their sweeps (9983f1a)",
        HISTORY,
    ),
    looped_min_r0_block=(
        16,
        "an R0_BLOCK of at least 16 points: 64 bytes of float32 along r; not swept",
        HISTORY,
    ),
    looped_bytes_in_flight=(
        32768,
        "Little's law, ~4.8 TB/s x ~0.9 us over 132 SMs: lsm_vocab 255 -> 124 us, a 256 x 128256 softmax 322 -> 112; 16 KB alike, 64 KB slows a 2048-row logsumexp 224 -> 272",
        LOOPED,
    ),
    looped_max_r0_block=(
        4096,
        "lsm_vocab 124 us at 4096 against 176 at 8192 (the 256 x 128256 softmax gains at 8192: 112 -> 82)",
        LOOPED,
    ),
    looped_widened_warps=(
        16,
        "8 -> 16 warps: lsm_vocab 93.4 -> 79.6 us, a 1024 x 32000 f16 log_softmax 90.0 -> 76.4, a 256 x 128256 bf16 softmax 79.2 -> 75.9; not widened, a 2048-row logsumexp 220.7 / 222.3",
        FEW,
    ),
    looped_row_warps=(
        4,
        "a row a program on 4 warps, H100: 4096 x 32000 f16 argmax 125 us (8 warps 144, 16: 150), 4096 x 5120 bf16 layer norm 42 (8: 45)",
        LONG_ROWS,
    ),
    reduction_points_per_warp=(
        512,
        "one warp per 512 points of a reduction tile: 8 warps for tsum's 8 x 512 and the split's 32 x 256",
        HISTORY,
    ),
    # -- split reductions
    split_programs_per_multiprocessor=(
        16,
        "16 programs a multiprocessor keep loads in flight: three_layouts_mean 0.156 -> 0.139 ms split",
        HISTORY,
    ),
    split_min_r_blocks=(
        4,
        "each chunk at least 4 R0_BLOCKs, so the partial kernel loops; not swept",
        HISTORY,
    ),
    split_xblock=(
        32,
        "32 rows of a split along r (data contiguous along x takes a cache line of columns instead, 32 of "
        "float32); not swept for data contiguous along r",
        HISTORY,
    ),
    split_wide_elements=(
        32768,
        "R0_BLOCK 64 -> 256: three_layouts_mean 0.1480 -> 0.1399 ms (86% -> 91%), tsum 0.0781 -> 0.0772 (round 17)",
        HISTORY,
    ),
    split_max_r0_block=(
        256,
        "an access contiguous along r moves 1 KB of float32 a row at 256 points (explore round 17, twice)",
        HISTORY,
    ),
    split_tile_elements=(
        8192,
        "32 x 256 or 64 x 128, 32 float32 accumulators a thread on 8 warps: on 16-bit column sums 64 x 256 ran "
        "29% and 15% slower than 64 x 128 (colsum_bf16_odd 35.6 / 27.6 us, colsum_f16), 3-8% faster on two",
        SPLIT,
    ),
    finish_programs_per_multiprocessor=(
        1,
        "tsum's 4096 results in 128 programs of 32 x 1 warp 0.0783 ms, in 16 of 256 x 4 warps 0.0791 (round 8)",
        HISTORY,
    ),
    finish_elements=(
        4096,
        "caps a finishing tile at 4096 partials; explore round 8's launches stay within it; not swept",
        HISTORY,
    ),
    finish_max_warps=(
        4,
        "at most 4 warps a finishing program (the 16-program launch of explore round 8 used 4); not swept",
        HISTORY,
    ),
    cost_base_registers=(
        24,
        "with one register a point held (and a looped tile's accumulators): ptxas's counts of 412 kernels, mean error 21",
        COST,
    ),
    cost_tie_pct=(
        3,
        "level pairs' estimates differ up to 1.4% (sm_f16 18.6 / 18.3 us) where persistent rows ran 5-100% faster",
        COST,
    ),
    cost_latency_ns=(
        800,
        "looped programs saturate DRAM at 16-32 KB a multiprocessor in flight: 4.2 TB/s x 0.5-1.0 us / 132",
        LOOPED,
    ),
    cost_run_overhead_bytes=(
        32,
        "runs along x of 32 / 64 / 128 bytes: colsum_bf16_odd 39.0 us looped, 30.4 split; three_layouts_mean 156 / 134",
        COST,
    ),
    cost_multiprocessor_bytes_per_cycle=(
        64,
        "Hopper's L1 fill path as microbenchmarks report it, not measured here; it bounds only launches of few programs",
        COST,
    ),
    cost_l2_ratio=(
        3,
        "the L2 serves about 3x DRAM's bandwidth (A100: 5120 B/cycle x 1.41 GHz over 2.0 TB/s); not measured here",
        COST,
    ),
    cost_launch_us=(
        2,
        "a launch: 64 x 5000 row sums 6.4 us looped, 9.9 split (two kernels); the suite's smallest kernels 5-7 us",
        COST,
    ),
    fission_min_gain_pct=(
        100,
        "on an H100 (no H200 lent), estimated gains of 1.03-1.66x ran 0.82-1.16x, 2.07-9.55x ran 1.50-6.5x (20 programs)",
        FISSION,
    ),
)

H200 = Target(
    name="h200",
    description="NVIDIA H200 (Hopper GH100, SXM, 141 GB HBM3e)",
    device_names=("H200",),
    compute_capability=(9, 0),
    multiprocessors=132,
    warp_size=32,
    registers_per_multiprocessor=65536,
    max_warps_per_multiprocessor=64,
    max_programs_per_multiprocessor=32,
    max_registers_per_thread=255,
    max_threads_per_block=1024,
    shared_memory_per_block=232448,  # 227 KiB opted in
    shared_memory_per_multiprocessor=233472,  # 228 KiB
    l2_bytes=62914560,  # 60 MiB (torch on the device: L2_cache_size 62914560)
    cache_line_bytes=128,
    clock_mhz=1980,
    sector_bytes=32,
    memory_bandwidth_gbps=4800,
    max_vector_bytes=16,
    max_cluster_size=8,  # portable; 16 with a non-portable opt-in
    programmatic_dependent_launch=True,
    max_grid_y=65535,
    tuning=TUNING,
    provenance=PROVENANCE,
)
