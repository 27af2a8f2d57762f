"""Round 41 of benchmarks/explore_gpu.py: the best plain read of tsum's 256 MiB under the timing
protocol. tsum must read its two 128 MiB inputs once; a kernel that only reads those bytes bounds
what any tsum kernel can reach. Rounds 22, 27 and 29 timed five chunkings of one read kernel
(81.7-86.4% of copy). Here a wider sweep: programs reading a contiguous chunk with U independent
loads in flight each step (block, U, chunk, warps), with and without evict_first; grid-stride
(persistent) reads; and torch's own sum of the same bytes. Each read is checked first (its
partial sums against torch's sum in float64), then timed three ways as in round 27: do_bench (the
L2 cleared by writing), CUDA events after a clear by reading (no dirty lines), and no clear. Rows
are DIAG; percentages are of the 1 GiB copy measured in the same run, for tsum's byte count.

Result (`-round41.json`, copy 4229 GB/s; fuseopt's tsum 86.6% in the same run): under do_bench
the reads reach 72.0-88.2% of copy (best: 4096 x 1 a step, 65536-element chunks, 8 warps,
evict_first, 88.2%; fifteen of the eighteen chunked reads 85.9-88.2%), grid-stride reads
83.6-87.3%, torch.sum 81.4%. The same kernels after a clear by reading: 98.2-101.0% (torch.sum
91.5%). No read of tsum's 256 MiB reaches 90% of copy under do_bench; tsum sits 1.6 points below
the best of them."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import DRY, sized
from benchmarks.explore.round27 import _timed_three_ways

# (BLOCK, U, CHUNK, warps): round 22's (1024, 1, 65536, 4) first
CHUNKED = [
    (1024, 1, 1 << 16, 4),
    (1024, 4, 1 << 16, 4),
    (1024, 8, 1 << 16, 4),
    (2048, 2, 1 << 16, 8),
    (2048, 4, 1 << 18, 8),
    (4096, 1, 1 << 16, 8),
    (4096, 2, 1 << 18, 8),
    (4096, 4, 1 << 20, 16),
    (8192, 1, 1 << 18, 16),
]
# (BLOCK, warps, programs per multiprocessor)
STRIDED = [(2048, 4, 8), (4096, 8, 4), (8192, 16, 2)]


@triton.jit
def _read_u(x, part, BLOCK: tl.constexpr, CHUNK: tl.constexpr, U: tl.constexpr, FIRST: tl.constexpr):
    pid = tl.program_id(0)
    lane = tl.arange(0, BLOCK).to(tl.int64) + pid * CHUNK
    acc = tl.zeros([BLOCK], tl.float32)
    for off in range(0, CHUNK, BLOCK * U):
        for u in tl.static_range(U):
            i = lane + (off + u * BLOCK)
            if FIRST:
                acc += tl.load(x + i, eviction_policy="evict_first")
            else:
                acc += tl.load(x + i)
    tl.store(part + pid, tl.sum(acc, 0))


@triton.jit
def _read_gs(x, part, tiles, BLOCK: tl.constexpr, FIRST: tl.constexpr):
    pid = tl.program_id(0)
    lane = tl.arange(0, BLOCK).to(tl.int64)
    acc = tl.zeros([BLOCK], tl.float32)
    for t in range(pid, tiles, tl.num_programs(0)):
        i = lane + t * BLOCK
        if FIRST:
            acc += tl.load(x + i, eviction_policy="evict_first")
        else:
            acc += tl.load(x + i)
    tl.store(part + pid, tl.sum(acc, 0))


def _checked(fn, part, flat, want):
    part.fill_(float("nan"))
    fn()
    got = part.double().sum().item()
    if not abs(got - want) <= 1e-3 * max(1.0, abs(want)) + 1e-6 * flat.numel():
        raise AssertionError(f"read sums to {got}, torch.sum {want}")
    return fn


def _reads(st, R, C):
    dev = st["x"].device
    nbytes = 2 * R * C * 4 + R * 4
    n = 2 * R * C
    flat = torch.empty(n, dtype=torch.float32, device=dev).normal_()
    want = flat.double().sum().item()
    sms = 4 if DRY else torch.cuda.get_device_properties(dev).multi_processor_count
    for block, u, chunk, nw in CHUNKED:
        chunk = min(chunk, n)
        block = min(block, chunk)
        u = max(1, min(u, chunk // block))
        grid = n // chunk
        part = torch.empty(grid, dtype=torch.float32, device=dev)
        for first in (False, True):
            fn = _checked(
                lambda block=block, u=u, chunk=chunk, nw=nw, grid=grid, part=part, first=first: _read_u[
                    (grid,)
                ](flat, part, BLOCK=block, CHUNK=chunk, U=u, FIRST=first, num_warps=nw),
                part,
                flat,
                want,
            )
            label = f"read {block}x{u} chunk {chunk} w{nw}{' evict_first' if first else ''}"
            _timed_three_ways("tsum", label, fn, nbytes)
    for block, nw, per_sm in STRIDED:
        block = min(block, n)
        grid = sms * per_sm
        part = torch.empty(grid, dtype=torch.float32, device=dev)
        fn = _checked(
            lambda block=block, nw=nw, grid=grid, part=part: _read_gs[(grid,)](
                flat, part, n // block, BLOCK=block, FIRST=True, num_warps=nw
            ),
            part,
            flat,
            want,
        )
        _timed_three_ways("tsum", f"read grid-stride {block} w{nw} {per_sm}/SM evict_first", fn, nbytes)
    sink = torch.empty((), dtype=torch.float32, device=dev)
    torch.sum(flat, 0, out=sink)
    if not abs(sink.item() - want) <= 1e-3 * max(1.0, abs(want)) + 1e-6 * n:
        raise AssertionError("torch.sum")
    _timed_three_ways("tsum", "torch.sum of the 256 MiB", lambda: torch.sum(flat, 0, out=sink), nbytes)
    return {}, lambda: {}


VARIANTS = sized({"tsum": _reads})
