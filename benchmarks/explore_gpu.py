"""The sweeps behind fuseopt's launch choices: fuseopt's kernels next to hand-written variants.

One module a round under benchmarks/explore/ (round1.py ... round39.py, the harness in harness.py);
a round's variants replace round 1's for the workloads it covers.

    python benchmarks/explore_gpu.py [apbt,tsum,...]            # round 1 variant sets
    ROUND=2 python benchmarks/explore_gpu.py                    # round 2 (2D grid, eviction, splits,
                                                                # sliding-window pooling, exp2)
    ROUND=3 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl,layernorm_t,softmax_bias_t
    ROUND=4 COMPILE=0 python benchmarks/explore_gpu.py tsum,avgpool_cl,layernorm_t,softmax_bias_t
                              # grid-stride persistent reductions with the next tile prefetched,
                              # tsum's x and y read by separate programs (and each alone: DIAG
                              # rows, not checked), sliding-window pooling with prefetch
    ROUND=5 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl   # fuseopt's window kernel
                                                                    # relaunched with other blocks
    ROUND=6 COMPILE=0 python benchmarks/explore_gpu.py layernorm_t,softmax_bias_t  # TMA loads
    ROUND=7 COMPILE=0 python benchmarks/explore_gpu.py tsum,three_layouts_mean
                              # each kernel of a split alone (DIAG); tsum in one launch, the last
                              # program of a tile finishing it
    ROUND=8 python benchmarks/explore_gpu.py apbt,tsum,three_layouts_mean
                              # fuseopt's source edited: store/load hints and tiles (apbt), the
                              # finishing kernel's tile (splits)
    ROUND=9 COMPILE=0 python benchmarks/explore_gpu.py tsum,avgpool_cl
                              # torch's reductions over tsum's bytes (the read ceiling at this
                              # size); pooling windows carrying loads vs carrying row sums
    ROUND=10 COMPILE=0 python benchmarks/explore_gpu.py softmax_bias_t,layernorm_t
                              # L2 prefetch-size hints (inline PTX loads), the bare transposed
                              # read (DIAG), looped reductions with wide tiles
    ROUND=11 COMPILE=0 python benchmarks/explore_gpu.py softmax_bias_t,layernorm_t
                              # fuseopt's persistent tile turned to the input's storage order
    ROUND=12 COMPILE=0 python benchmarks/explore_gpu.py softmax_bias_t,layernorm_t
                              # the NaN-propagating max as one reduction; rows and warps
    ROUND=13 COMPILE=0 python benchmarks/explore_gpu.py softmax_bias_t,layernorm_t
                              # registers and spills (REGS lines) next to the times
    ROUND=14 COMPILE=0 python benchmarks/explore_gpu.py layernorm_t
                              # other transposed persistent reductions (column mean, RMS norm,
                              # layer_norm + sigmoid) at 8, 16 and 32 rows (DIAG rows, checked
                              # against the reference interpreter when built)
    ROUND=15 COMPILE=0 python benchmarks/explore_gpu.py softmax_bias_t,layernorm_t
                              # a register cap (maxnreg) on the transposed persistent reductions
    ROUND=16 COMPILE=0 python benchmarks/explore_gpu.py
                              # fuseopt --autotune next to the fixed launch, every workload
    ROUND=17 COMPILE=0 python benchmarks/explore_gpu.py tsum,three_layouts_mean
                              # the split partial kernel's tile and warps, chunks fixed
    ROUND=18 COMPILE=0 python benchmarks/explore_gpu.py
                              # thread-block clusters (num_ctas) for the transposed persistent
                              # reductions; a copy of each workload's own byte count (DIAG)
    ROUND=19 COMPILE=0 python benchmarks/explore_gpu.py tsum,layernorm_t,softmax_bias_t,three_layouts_mean
                              # cluster sizes and rows; round 14's other transposed reductions;
                              # split partial kernels as clusters
    ROUND=20 COMPILE=0 python benchmarks/explore_gpu.py layernorm_t,softmax_bias_t
                              # captured against hand-written graphs, cluster launch against its
                              # fallback, in one run
    ROUND=21 COMPILE=0 python benchmarks/explore_gpu.py apbt,avgpool_cl,softmax_bias_t
                              # per-point division as a reciprocal and a multiply (checked
                              # against the reference first); clusters for apbt and the window
    ROUND=22 COMPILE=0 python benchmarks/explore_gpu.py tsum,avgpool_cl
                              # Triton ceilings at the workloads' sizes: a contiguous read of
                              # tsum's 256 MiB, a flat copy of avgpool_cl's 57 MiB (DIAG)
    ROUND=23 COMPILE=0 python benchmarks/explore_gpu.py layernorm_t,softmax_bias_t
                              # the cluster launch against its fallback at 512 and 256 columns
    ROUND=24 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl,softmax_bias_t
                              # the pooling window's shifted loads issued a row late, or none
                              # (DIAG); streaming store and evict_first load hints on the
                              # softmax cluster (counters: benchmarks/explore/ncu24.py)
    ROUND=25 COMPILE=0 python benchmarks/explore_gpu.py
                              # persistent grids: each kernel looping over its tiles on a few
                              # programs a multiprocessor
    ROUND=26 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl
                              # relu as one NaN-propagating maximum (DIAG, checked first)
    ROUND=27 COMPILE=0 python benchmarks/explore_gpu.py
                              # the timing protocol: do_bench's L2 clear (writing zeros) against
                              # a clear by reading and no clear (DIAG, every workload, tsum's
                              # ceilings); tsum in one launch at the current tile
    ROUND=28 COMPILE=0 python benchmarks/explore_gpu.py softmax_bias_t
                              # softmax's division as a reciprocal a row (correctly rounded, or
                              # 1.0 / s) and a multiply a point (DIAG, checked first)
    ROUND=29 COMPILE=0 python benchmarks/explore_gpu.py
                              # every load of each captured workload marked evict_first; tsum's
                              # plain read with and without (DIAG, checked first)
    ROUND=30 COMPILE=0 python benchmarks/explore_gpu.py tsum
                              # evict_first on other reductions that only read: row and column
                              # sums, a split mean, a bf16 max, tsum unsplit (DIAG, checked first)
    ROUND=31 COMPILE=0 python benchmarks/explore_gpu.py apbt,avgpool_cl,layernorm_t,softmax_bias_t,three_layouts_mean
                              # stores marked evict_first or .cs on the kernels that write a
                              # point's value (DIAG, checked first)
    ROUND=32 COMPILE=0 python benchmarks/explore_gpu.py layernorm_t,softmax_bias_t,three_layouts_mean,avgpool_cl
                              # every load marked evict_last on the kernels that write a point's
                              # value (DIAG, checked first)
    ROUND=33 COMPILE=0 python benchmarks/explore_gpu.py tsum,three_layouts_mean
                              # a split's finishing kernel launched with programmatic dependent
                              # launch (DIAG, checked against the module as emitted)
    ROUND=34 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl
                              # a pooling window held in registers in both directions (hand
                              # written, generated source): columns unrolled, rows walked,
                              # unrolled or prefetched; ROUND34=walk|tiles|groups picks the set
    ROUND=35 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl
                              # fuseopt's sliding window with its row loop unrolled (DIAG,
                              # checked first)
    ROUND=36 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl
                              # fuseopt's register window against its sliding window, as
                              # emitted and with addresses as base pointer + constant (DIAG,
                              # checked first)
    ROUND=37 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl
                              # the register window's bounds checks as vectors, or its stores
                              # at the kernel's end (DIAG, checked first)
    ROUND=38 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl
                              # register-window shapes as generated, a row's last column
                              # chunk overlapping the one before (DIAG, checked first);
                              # ROUND38=rows: the second set of shapes
    ROUND=39 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl
                              # the register window's columns and rows from the program's ids,
                              # four shapes, next to round 34's hand-written windows (DIAG)
    ROUND=40 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl,softmax_bias_t,layernorm_t,apbt
                              # every load evict_first and every store evict_first or .cs
                              # together; loads .cg (DIAG, checked first)
    ROUND=41 COMPILE=0 python benchmarks/explore_gpu.py tsum
                              # the best plain read of tsum's 256 MiB: 18 read kernels and
                              # torch.sum, each timed three ways (DIAG, checked first)
    ROUND=42 COMPILE=0 python benchmarks/explore_gpu.py avgpool_cl,softmax_bias_t
                              # the best copy of each workload's own bytes, and fuseopt's call,
                              # timed three ways (DIAG, checked first)
    ROUND=43 COMPILE=0 python benchmarks/explore_gpu.py softmax_bias_t
                              # a looped online softmax re-reading its tile from the L2
                              # (DIAG, checked against eager)
    ROUND=44 COMPILE=0 python benchmarks/explore_gpu.py
                              # every workload and the 1 GiB copy timed three ways: do_bench,
                              # events after a clear by writing, after a clear by reading (DIAG)
    DRY=1 python benchmarks/explore_gpu.py                      # CPU, tiny sizes, correctness only

Each variant is checked against torch eager on fresh inputs, then timed with do_bench (median),
as a share of the copy bandwidth measured in the same run; `fuseopt call` is also timed replayed
from a CUDA graph (launch overhead). With COMPILE=1 (default) torch.compile runs twice (its own
run-to-run spread) and Inductor's source is kept. Writes $OUT/explore.json; the H200 results are in
benchmarks/results/explore/ (rounds 1-44 of 2026-11-29/30, hand-written workload graphs; round 1 ran
before the 2D grid and split reductions existed in fuseopt, round 4 before sliding windows).
"""

import importlib
import os
import sys

sys.path.insert(0, os.getcwd())

from benchmarks.explore import harness  # first: sets TRITON_INTERPRET before triton loads
from benchmarks.workloads import WORKLOADS


def main() -> None:
    only = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] else list(WORKLOADS)
    variants = dict(importlib.import_module("benchmarks.explore.round1").VARIANTS)
    n = os.environ.get("ROUND", "1")
    if n != "1":
        variants.update(importlib.import_module(f"benchmarks.explore.round{n}").VARIANTS)
    harness.run(only, variants)


if __name__ == "__main__":
    main()
