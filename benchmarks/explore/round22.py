# ruff: noqa: B023
"""Round 22 of benchmarks/explore_gpu.py: Triton ceilings at the workloads' own sizes (DIAG rows,
nothing checked: they compute no workload output). tsum: a contiguous read of its 256 MiB (x and
y as one flat storage), each program summing a chunk into one partial, at several chunk sizes and
warps: the read-only ceiling for a kernel of its size. avgpool_cl: a flat bfloat16 copy of its 57
MiB input into a buffer of the output's size: the copy ceiling for a Triton kernel of its size."""

import torch
import triton
import triton.language as tl


@triton.jit
def _read_k(x, part, n, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for off in range(pid * CHUNK, (pid + 1) * CHUNK, BLOCK):
        i = off + tl.arange(0, BLOCK)
        acc += tl.load(x + i, mask=i < n, other=0.0)
    tl.store(part + pid, tl.sum(acc, 0))


@triton.jit
def _copy_k(x, y, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y + i, tl.load(x + i, mask=m), mask=m)


def _tsum(st, sz):
    n = sz["rows"] * sz["cols"] * 2
    flat = torch.empty(n, dtype=torch.float32, device=st["x"].device).normal_()
    vs = {}
    for block, chunk, nw in (
        (1024, 1 << 16, 4),
        (2048, 1 << 16, 8),
        (1024, 1 << 15, 4),
        (4096, 1 << 17, 8),
        (1024, 1 << 14, 4),
    ):
        chunk = min(chunk, n)
        block = min(block, chunk)
        grid = triton.cdiv(n, chunk)
        part = torch.empty(grid, dtype=torch.float32, device=flat.device)
        vs[f"DIAG read {n * 4 / 2**20:.0f} MiB {block}x{chunk // block} w{nw} ({grid} programs)"] = (
            lambda block=block, chunk=chunk, nw=nw, grid=grid, part=part: _read_k[(grid,)](
                flat, part, n, BLOCK=block, CHUNK=chunk, num_warps=nw
            )
        )
    return vs, lambda: {}


def _avgpool(st, sz):
    x = st["x"]
    y = torch.empty_like(x)
    n = x.numel()
    vs = {}
    for block, nw in ((1024, 4), (2048, 4), (4096, 8), (8192, 8)):
        block = min(block, triton.next_power_of_2(n))
        vs[f"DIAG triton copy {block} w{nw}"] = lambda block=block, nw=nw: _copy_k[(triton.cdiv(n, block),)](
            x, y, n, BLOCK=block, num_warps=nw
        )
    vs["DIAG torch copy"] = lambda: y.copy_(x)
    return vs, lambda: {}


VARIANTS = {"tsum": _tsum, "avgpool_cl": _avgpool}
