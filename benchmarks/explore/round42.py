"""Round 42 of benchmarks/explore_gpu.py: the best copy of avgpool_cl's and softmax_bias_t's own
bytes under the timing protocol. Each workload reads its input once and writes its output once,
so a copy of the same byte count (half read, half written) bounds what its kernel can reach.
Round 22 timed one flat Triton copy of avgpool_cl's bytes (80.7-86.5% of copy). Here a sweep:
programs copying U blocks of BLOCK float32 elements each (block, U, warps) and torch's `copy_`,
each checked first (the destination poisoned, then compared bit for bit), then timed three ways
as in round 27: do_bench (the L2 cleared by writing), CUDA events after a clear by reading (no
dirty lines), and no clear, next to fuseopt's call timed the same three ways. Rows are DIAG;
percentages are of the 1 GiB copy measured in the same run, for the workload's byte count.

Result (`-round42.json`, copy 4227 GB/s; do_bench / events after a clear by reading):
avgpool_cl's call 73.7 / 80.6%, copies of its 115 MiB 78.9-85.3 / 87.4-94.4% (torch 83.8 /
93.5%); softmax_bias_t's call 78.2 / 81.7%, copies of its 256 MiB 87.7-93.3 / 92.6-98.3% (torch
93.3 / 98.3%). Under do_bench avgpool_cl runs at 86% of the best copy of its bytes (80% of copy
would need 94%); softmax_bias_t at 84% (80% would need 86%). With no clear at all avgpool_cl
drops to 50.8% (its own input and output dirty in the L2), the copies to 65.2-87.7%."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import sized
from benchmarks.explore.round27 import _protocol, _timed_three_ways

# (BLOCK, U, warps)
COPIES = [(1024, 1, 4), (1024, 4, 4), (2048, 2, 8), (4096, 1, 8), (4096, 2, 8), (8192, 1, 16)]


@triton.jit
def _copy_u(x, y, n, BLOCK: tl.constexpr, U: tl.constexpr):
    lane = tl.arange(0, BLOCK).to(tl.int64) + tl.program_id(0) * (BLOCK * U)
    for u in tl.static_range(U):
        i = lane + u * BLOCK
        m = i < n
        tl.store(y + i, tl.load(x + i, mask=m), mask=m)


def _copies(name, half_bytes, nbytes, dev):
    n = half_bytes // 4
    src = torch.empty(n, dtype=torch.float32, device=dev).normal_()
    dst = torch.empty_like(src)

    def checked(fn):
        dst.fill_(float("nan"))
        fn()
        if not torch.equal(dst, src):
            raise AssertionError("copy differs from its source")
        return fn

    for block, u, nw in COPIES:
        block = min(block, triton.next_power_of_2(n))
        grid = triton.cdiv(n, block * u)
        fn = checked(
            lambda block=block, u=u, nw=nw, grid=grid: _copy_u[(grid,)](
                src, dst, n, BLOCK=block, U=u, num_warps=nw
            )
        )
        _timed_three_ways(name, f"copy {block}x{u} w{nw} of its bytes", fn, nbytes)
    _timed_three_ways(name, "torch copy_ of its bytes", checked(lambda: dst.copy_(src)), nbytes)


def _avgpool(st, n, c, h, w):
    half = n * c * h * w * 2
    _protocol("avgpool_cl", st, {"n": n, "c": c, "h": h, "w": w})
    _copies("avgpool_cl", half, 2 * half, st["x"].device)
    return {}, lambda: {}


def _softmax(st, r, c):
    half = r * c * 4
    _protocol("softmax_bias_t", st, {"rows": r, "cols": c})
    _copies("softmax_bias_t", half, 2 * half + c * 4, st["x"].device)
    return {}, lambda: {}


VARIANTS = sized({"avgpool_cl": _avgpool, "softmax_bias_t": _softmax})
