"""Round 43 of benchmarks/explore_gpu.py: softmax_bias_t as a looped (online) softmax that reads
its tile twice, the second time from the L2. The persistent kernel holds a 16 x 1024 tile in
registers (about 200 a thread, two 4-warp programs a multiprocessor) and reads the transposed
input in 64-byte runs. Here each program takes XB columns of the input (runs of 4*XB bytes) in
chunks of RB rows: a first pass keeps a running max and sum (online softmax; loads marked
evict_last so the L2 keeps the tile), a second pass loads the chunks again (evict_first) and
stores exp(v - max) / sum. Grids of one program a tile, or persistent grids of P programs a
multiprocessor looping over tiles (bounding the tiles live in the L2 at 128 KiB each for XB =
32). Hand-written, checked against torch eager (online rescaling rounds differently from the
captured chain; tolerance 2e-3), DIAG rows next to fuseopt's call.

Result (`-round43.json`, copy 4225 GB/s): 32.2-47.5% of copy in every configuration against
78.8% for fuseopt's persistent kernel in the same run; the best, 64 x 64 at 2 programs a
multiprocessor, 47.5%. Re-reading the tile, even from the L2, with two exps a point, costs more
than the 64-byte runs and the low occupancy of the persistent tile (round 10's looped kernels,
20-43%, agree)."""

import torch
import triton
import triton.language as tl

from benchmarks.explore.harness import DRY, sized

# (XB, RB, warps, programs a multiprocessor or 0 for one program a tile, hints)
CONFIGS = [
    (32, 128, 4, 0, True),
    (32, 256, 4, 0, True),
    (32, 128, 4, 2, True),
    (32, 128, 4, 4, True),
    (32, 256, 8, 2, True),
    (32, 128, 4, 4, False),
    (64, 128, 8, 1, True),
    (64, 64, 4, 2, True),
]


@triton.jit
def _sm_online(
    x, bias, out, R: tl.constexpr, C: tl.constexpr, XB: tl.constexpr, RB: tl.constexpr, HINT: tl.constexpr
):
    tiles: tl.constexpr = R // XB
    for t in range(tl.program_id(0), tiles, tl.num_programs(0)):
        xi = t * XB + tl.arange(0, XB)[:, None]
        m = tl.full([XB, 1], float("-inf"), tl.float32)
        s = tl.zeros([XB, 1], tl.float32)
        for r in range(0, C, RB):
            ri = r + tl.arange(0, RB)[None, :]
            if HINT:
                v = tl.load(x + (xi + R * ri), eviction_policy="evict_last")
            else:
                v = tl.load(x + (xi + R * ri))
            v = v + tl.load(bias + ri)
            mn = tl.maximum(m, tl.max(v, 1)[:, None])
            s = s * tl.exp(m - mn) + tl.sum(tl.exp(v - mn), 1)[:, None]
            m = mn
        for r in range(0, C, RB):
            ri = r + tl.arange(0, RB)[None, :]
            if HINT:
                v = tl.load(x + (xi + R * ri), eviction_policy="evict_first")
            else:
                v = tl.load(x + (xi + R * ri))
            v = v + tl.load(bias + ri)
            tl.store(out + (C * xi + ri), tl.exp(v - m) / s)


def _online(st, R, C):
    x, bias = st["x"], st["bias"]
    dev = x.device
    out = torch.empty(R * C, dtype=torch.float32, device=dev)
    xs = x.as_strided((R, C), (1, R))
    want = torch.softmax(xs + bias, dim=1)
    sms = 4 if DRY else torch.cuda.get_device_properties(dev).multi_processor_count
    vs = {}
    for xb, rb, nw, per_sm, hint in CONFIGS:
        xb, rb = min(xb, R), min(rb, C)
        grid = R // xb if per_sm == 0 else min(R // xb, sms * per_sm)

        def fn(xb=xb, rb=rb, nw=nw, grid=grid, hint=hint):
            _sm_online[(grid,)](x, bias, out, R, C, xb, rb, hint, num_warps=nw)

        out.fill_(float("nan"))
        fn()
        got = out.view(R, C)
        if not torch.allclose(got, want, rtol=2e-3, atol=2e-6):
            raise AssertionError(f"online softmax {xb}x{rb}: max err {(got - want).abs().max().item()}")
        where = "a tile" if per_sm == 0 else f"{per_sm}/SM"
        vs[f"DIAG online {xb}x{rb} w{nw} {where}{'' if hint else ' no hints'}"] = fn
    return vs, lambda: {}


VARIANTS = sized({"softmax_bias_t": _online})
