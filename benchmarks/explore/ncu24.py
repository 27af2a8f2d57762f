"""Hardware counters (Nsight Compute) for the kernels that stay short of their targets, next to
the ceilings they are measured against: one launch of each, inside cudaProfilerStart/Stop.

    ncu --profile-from-start off --metrics $(python benchmarks/explore/ncu24.py metrics) --csv \
        python benchmarks/explore/ncu24.py

(ncu locks the clocks to base: read times as relative.)

Launch order (printed first, one LAUNCH line each) maps ncu's rows to labels: avgpool_cl's
captured kernel, round 3's band window (1024 x 5 rows), round 24's window without horizontal
neighbours (not the workload), a flat copy of its bytes; softmax_bias_t's captured kernel as a
cluster and as its single-program fallback; tsum's split partial kernel and a plain read of its
256 MiB (round 22's best)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402
import triton  # noqa: E402

from benchmarks.explore.round3 import pool_band  # noqa: E402
from benchmarks.explore.round22 import _copy_k, _read_k  # noqa: E402
from benchmarks.explore.round24 import pool24_centre_only  # noqa: E402
from benchmarks.programs import captured  # noqa: E402
from fuseopt.codegen import emit_module  # noqa: E402
from fuseopt.interp import make_inputs  # noqa: E402
from fuseopt.passes.pipeline import optimize  # noqa: E402
from fuseopt.runtime.module import load_module  # noqa: E402

METRICS = ",".join(
    [
        "gpu__time_duration.sum",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__t_bytes.sum",
        "lts__t_sectors_srcunit_tex_op_read.sum",
        "lts__t_sector_op_read_hit_rate.pct",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__t_sector_hit_rate.pct",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "launch__registers_per_thread",
        "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
        "smsp__inst_executed.sum",
    ]
)


def _module(name, clusters=None):
    g, _ = captured(name)
    st = optimize(g)
    src = emit_module(st.graph, st.plan)
    if clusters is not None:
        src = src.replace("\nCLUSTERS = None\n", f"\nCLUSTERS = {clusters}\n")
    inputs = {k: v.cuda() for k, v in make_inputs(g, seed=0).items()}
    mod = load_module(src)
    return lambda: mod.call(inputs)


def launches():
    pool = _module("avgpool_cl")
    x = torch.randn(128 * 35 * 35 * 192, device="cuda").to(torch.bfloat16)
    out = torch.empty_like(x)
    n, c, h, w = 128, 192, 35, 35
    grid = (triton.cdiv(w * c, 1024), n, h // 5)
    yield "avgpool_cl fuseopt", pool
    yield "avgpool_cl band 1024 b5", lambda: pool_band[grid](x, out, c, h, w, 1024, 5, num_warps=4)
    yield (
        "avgpool_cl centre only 1024 b5",
        lambda: pool24_centre_only[grid](x, out, c, h, w, 1024, 5, num_warps=4),
    )
    yield "avgpool_cl flat copy", lambda: _copy_k[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), 1024)
    yield "softmax_bias_t cluster", _module("softmax_bias_t", True)
    yield "softmax_bias_t fallback", _module("softmax_bias_t", False)
    yield "tsum fuseopt (partial, finish)", _module("tsum")
    flat = torch.randn(2 * 4096 * 8192, device="cuda")
    part = torch.empty(4096, device="cuda")
    yield (
        "tsum read 256 MiB",
        lambda: _read_k[(4096,)](flat, part, flat.numel(), BLOCK=1024, CHUNK=1 << 14, num_warps=4),
    )


def main():
    runs = list(launches())
    for _, fn in runs:  # compile and warm up outside the profiled range
        fn()
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for label, fn in runs:
        print(f"LAUNCH {label}", flush=True)
        fn()
        torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    if sys.argv[1:] == ["metrics"]:
        print(METRICS)
    else:
        main()
