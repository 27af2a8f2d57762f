# ruff: noqa: B023
"""Round 27 of benchmarks/explore_gpu.py: what the timing protocol costs, and tsum in one launch.

do_bench clears the L2 before each timed call by writing zeros over a 256 MiB buffer, so the
call starts with the L2 full of dirty lines that must be written back while it runs. DIAG rows
time the same calls (fuseopt's module, a contiguous read of tsum's 256 MiB, a copy of tsum's
byte count) three ways: do_bench as is; the L2 cleared by reading the 256 MiB buffer instead
(clean lines, nothing to write back); and no clearing at all (warm L2, back to back); fuseopt's call for
every workload the same three ways. Then tsum's
split reduction in one launch, the last program of an x tile combining the chunks' partials in a
fixed order (round 7's kernel, at fuseopt's current partial tile: 32 x 256, 16 chunks, 8 warps),
with the chunks of a tile launched next to each other or a grid apart."""

import json

import torch
import triton
import triton.language as tl

from benchmarks.explore import harness
from benchmarks.explore.harness import DRY, ROWS, sized
from benchmarks.explore.round7 import _parts
from benchmarks.explore.round22 import _read_k
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module


@triton.jit
def tsum27_last(
    x,
    y,
    part,
    cnt,
    out,
    R: tl.constexpr,
    C: tl.constexpr,
    XB: tl.constexpr,
    RB: tl.constexpr,
    SPLIT: tl.constexpr,
    CHUNKS_FAST: tl.constexpr,
):
    if CHUNKS_FAST:
        xt = tl.program_id(1)
        sp = tl.program_id(0)
    else:
        xt = tl.program_id(0)
        sp = tl.program_id(1)
    xo = xt * XB
    CH: tl.constexpr = C // SPLIT
    xi = xo + tl.arange(0, XB)[:, None]
    rb = tl.arange(0, RB)[None, :]
    acc = tl.zeros([XB, RB], tl.float32)
    for r0 in range(sp * CH, sp * CH + CH, RB):
        ri = r0 + rb
        acc += tl.load(x + (xi * C + ri)) * 2.0 + tl.load(y + (xi + R * ri))
    tl.store(part + sp * R + xi, tl.sum(acc, 1)[:, None])
    tl.debug_barrier()
    n = tl.atomic_add(cnt + xt, 1, sem="acq_rel")
    if n == SPLIT - 1:
        v = tl.load(part + tl.arange(0, SPLIT)[None, :] * R + xi, cache_modifier=".cg")
        tl.store(out + xi, tl.sum(v, 1)[:, None])
        tl.atomic_xchg(cnt + xt, 0)


def _timed_three_ways(name, label, fn, nbytes):
    """DIAG rows: fn timed by do_bench, after a clean L2 clear, and with no clear."""
    if DRY:
        fn()
        return
    cache = torch.empty(1 << 26, dtype=torch.int32, device="cuda")
    sink = torch.empty((), dtype=torch.int64, device="cuda")

    def timed(clear):
        fn()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
        for _ in range(20):
            clear()
            fn()
        for s, e in zip(starts, ends, strict=True):
            clear()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))
        return times[len(times) // 2]

    ways = {
        "do_bench (L2 cleared by writing)": lambda: float(
            triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median")
        ),
        "events, L2 cleared by writing": lambda: timed(cache.zero_),
        "events, L2 cleared by reading": lambda: timed(
            lambda: torch.sum(cache, 0, dtype=torch.int64, out=sink)
        ),
        "events, no clearing": lambda: timed(lambda: None),
    }
    for way, t in ways.items():
        ms = t()
        pct = 100 * nbytes / (ms * 1e-3) / 1e9 / harness.COPY
        ROWS.append({"workload": name, "variant": f"DIAG {label}: {way}", "ms": ms, "pct_copy": pct})
        print(f"{name:19s} DIAG {label}: {way:34s} {ms:.4f} ms {pct:5.1f}%", flush=True)


def _protocol(name, st, sz):
    """fuseopt's call for the workload timed the three ways."""
    doc, _ = WORKLOADS[name](**sz)
    g = load_text(json.dumps(doc), f"{name}.json")
    stage = optimize(g)
    whole = load_module(emit_module(stage.graph, stage.plan))
    nbytes = sum(b.storage_size * b.dtype.itemsize for b in g.buffers if b.role in ("input", "output"))
    _timed_three_ways(name, "fuseopt call", lambda: whole.call(st), nbytes)


def _protocol_only(name):
    def build(st, sz):
        _protocol(name, st, sz)
        return {}, lambda: {}

    return build


def tsum27_variants(st, R, C):
    vs, outs = _parts("tsum", st, {"rows": R, "cols": C})
    x, y = st["x"], st["y"]
    dev = x.device
    out = torch.empty(R, device=dev)
    nbytes = 2 * R * C * 4 + R * 4
    # the timing protocol, on fuseopt's own call and on the ceilings
    _protocol("tsum", st, {"rows": R, "cols": C})
    flat = torch.empty(2 * R * C, dtype=torch.float32, device=dev).normal_()
    nread = flat.numel()
    chunk = min(1 << 16, nread)
    blk = min(1024, chunk)
    grid = triton.cdiv(nread, chunk)
    rpart = torch.empty(grid, dtype=torch.float32, device=dev)
    src = torch.empty(R * C, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    _timed_three_ways(
        "tsum",
        "read 256 MiB",
        lambda: _read_k[(grid,)](flat, rpart, nread, BLOCK=blk, CHUNK=chunk, num_warps=4),
        nbytes,
    )
    _timed_three_ways("tsum", "copy 128 MiB -> 128 MiB", lambda: dst.copy_(src), nbytes)
    for label, fn in list(vs.items()):
        _timed_three_ways("tsum", label, fn, nbytes)
    for xb, rb, split, w, fast in [
        (32, 256, 16, 8, False),
        (32, 256, 16, 8, True),
        (32, 256, 8, 8, False),
        (32, 256, 8, 8, True),
        (32, 256, 32, 8, True),
    ]:
        xb, rb = min(xb, R), min(rb, C // split)
        if C % (split * rb) or R % xb:
            continue
        part = torch.empty(split * R, device=dev)
        cnt = torch.zeros(R // xb, dtype=torch.int32, device=dev)
        grid = (split, R // xb) if fast else (R // xb, split)
        label = (
            f"one launch split{split} {xb}x{rb} w{w} {'chunks adjacent' if fast else 'chunks a grid apart'}"
        )

        def launch(xb=xb, rb=rb, split=split, w=w, part=part, cnt=cnt, grid=grid, fast=fast):
            tsum27_last[grid](x, y, part, cnt, out, R, C, xb, rb, split, fast, num_warps=w)

        vs[label] = launch
        if fast and split == 16:
            _timed_three_ways("tsum", label, launch, nbytes)
    return vs, lambda: {"out": out}


VARIANTS = {name: _protocol_only(name) for name in WORKLOADS if name != "tsum"}
VARIANTS.update(sized({"tsum": tsum27_variants}))
