# ruff: noqa: B023
"""Round 34 of benchmarks/explore_gpu.py: a pooling window held in registers in both directions.

fuseopt's window (and every window of rounds 2-26) keeps a program's tile as one flat run of
(w, c) points, so a point's horizontal neighbours (w +- 1, 192 elements away) sit in other
threads: each row is loaded three times (w-1, w, w+1), converted three times, and every point
pays its 3 loads, 3 unpacks and the masks of each. Here a program holds S columns as S + 2
separate tensors of CB channels each (the columns, statically unrolled), and walks T rows: each
row step loads the S + 2 columns of one new row once and forms S outputs from the 3 x (S + 2)
tensors it carries. Loads a point: (S + 2) / S x (T + 2) / T (1.65 at 7 x 7, against 3 + the
band's 2 halo rows). The nine terms are added in the captured chain's order (row-major), so the
result is bit-identical to fuseopt's kernel. The source is generated (one variable a column),
written to a file and imported, as fuseopt's modules are.

Results (copy 4247-4255 GB/s; fuseopt's sliding window 66.2-68.2% in the same runs):
- `-round34-walk.json` (ROUND34=walk, first half): rows walked in a `range` loop, 64 channels and
  one warp: 7 x 7 cells 67.9%, 5 x 7 66.3%, 7 x 5 69.3%, 5 x 5 70.2%, 7 x 35 56.8%; 128 or 256
  channels with 2-4 warps 59.1-64.3%.
- `-round34-static.json` (ROUND34=walk): the same, then rows unrolled (`tl.static_range`): 5 x 5
  75.3%, 7 x 5 71.2%, 5 x 7 69.5%; the next row prefetched a step ahead 68.2-72.8%.
- `-round34-tiles.json` (ROUND34=tiles): unrolled tiles, edges masked: 7 x 3 75.6%, 5 x 4 73.8%,
  5 x 5 73.6-73.7%, 5 x 3 73.6%, 7 x 2 (groups run) 73.3%; 4 x 4, 4 x 8, 8 x 4 53.0-64.6%.
- `-round34-groups.json` (ROUND34=groups): two or four images a program (a warp each, or more
  channels a thread) 69.3-73.6%, below one image a program (7 x 3: 75.6% twice, 64 registers)."""

import importlib.util
import os
import tempfile

import torch

from benchmarks.explore.harness import DRY, sized
from benchmarks.explore.round19 import _timed
from benchmarks.programs import captured
from fuseopt.codegen import emit_module
from fuseopt.codegen.rules import HELPERS
from fuseopt.interp import make_inputs
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

_IMPORTS = """import os

import triton
import triton.language as tl

"""

_HEAD = """
@triton.jit
def pool34(x, out, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, CB: tl.constexpr,
           T: tl.constexpr, G: tl.constexpr):
    # a tensor: G images (one warp each when num_warps = G) x CB channels at one (h, w)
    c = tl.program_id(0) * CB + tl.arange(0, CB)[None, :]
    zc = tl.zeros([G, CB], tl.int32)
    cm = zc + c < C
    w0 = tl.program_id(1) * {S}
    nh = tl.program_id(2)
    n = (nh // ((H + T - 1) // T)) * G + tl.arange(0, G)[:, None]
    h0 = (nh % ((H + T - 1) // T)) * T
    img = x + n * (H * W * C) + c
    oimg = out + n * (H * W * C) + c
"""


def _source(S: int, mode: str, hint: str) -> str:
    cols = range(S + 2)  # column j is w0 - 1 + j
    lines = [_IMPORTS + HELPERS["_to_bf16"].source + _HEAD.format(S=S)]
    a = lines.append
    for j in cols:
        a(f"    ok{j} = cm & (zc + w0 + {j - 1} >= 0) & (zc + w0 + {j - 1} < W)")

    def load_row(r: str, h: str) -> None:
        a(f"    rowok = (zc + {h} >= 0) & (zc + {h} < H)")
        a(f"    rowp = img + ({h}) * (W * C) + (w0 - 1) * C")
        for j in cols:
            a(f"    {r}{j} = tl.load(rowp + {j * 1} * C, ok{j} & rowok, other=0.0{hint}).to(tl.float32)")

    def load_row_in(r: str, h: str) -> None:
        a(f"        rowok = (zc + {h} >= 0) & (zc + {h} < H)")
        a(f"        rowp = img + ({h}) * (W * C) + (w0 - 1) * C")
        for j in cols:
            a(f"        {r}{j} = tl.load(rowp + {j} * C, ok{j} & rowok, other=0.0{hint}).to(tl.float32)")

    load_row("p", "h0 - 1")
    load_row("q", "h0")
    if mode == "prefetch":
        # the next row loaded one step ahead: step t loads row h + 2 while it sums rows h -+ 1
        load_row("r", "h0 + 1")
    a("    for t in tl.static_range(T):" if mode == "static" else "    for t in range(T):")
    a("        h = h0 + t")
    load_row_in("n" if mode == "prefetch" else "r", "h + 2" if mode == "prefetch" else "h + 1")
    a("        orow = oimg + h * (W * C) + w0 * C")
    a("        hok = zc + h < H")
    for s in range(S):
        terms = [f"{row}{s + k}" for row in "pqr" for k in range(3)]
        acc = terms[0]
        for i, term in enumerate(terms[1:]):
            a(f"        a{s}_{i} = {acc} + {term}")
            acc = f"a{s}_{i}"
        a(f"        v{s} = _to_bf16({acc} * 0.1111111119389534).to(tl.float32)")
        a(f"        v{s} = tl.where(v{s} < 0, tl.zeros_like(v{s}), v{s})")
        a(f"        tl.store(orow + {s} * C, _to_bf16(v{s}), ok{s + 1} & hok)")
    for j in cols:
        a(f"        p{j} = q{j}")
    for j in cols:
        a(f"        q{j} = r{j}")
    if mode == "prefetch":
        for j in cols:
            a(f"        r{j} = n{j}")
    return "\n".join(lines) + "\n"


def _kernel(S: int, mode: str = "walk", hint: str = ""):
    fd, path = tempfile.mkstemp(prefix=f"pool34_{S}_{mode}_", suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write(_source(S, mode, hint))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.pool34


def _exact(st, N, C, H, W):
    """The captured graph's arithmetic in torch (float32 chain in row-major order, bf16 twice)."""
    img = st["x"].view(N, H, W, C).float()
    pad = torch.nn.functional.pad(img, (0, 0, 1, 1, 1, 1))
    acc = None
    for dh in range(3):
        for dw in range(3):
            term = pad[:, dh : dh + H, dw : dw + W, :]
            acc = term if acc is None else acc + term
    v = (acc * torch.tensor(1 / 9, dtype=torch.float32)).to(torch.bfloat16).float()
    return torch.relu(v).to(torch.bfloat16).reshape(-1)


# (S columns, T rows, CB channels, warps, mode[, G images a program]); ROUND34=walk|tiles|groups
CONFIGS = {
    "walk": [  # run 1 (the walks) and run 2 (+ unrolled rows, prefetch): -round34-walk, -static
        (7, 7, 64, 1, "walk"),
        (5, 7, 64, 1, "walk"),
        (7, 5, 64, 1, "walk"),
        (5, 5, 64, 1, "walk"),
        (7, 35, 64, 1, "walk"),
        (7, 7, 128, 2, "walk"),
        (7, 7, 256, 2, "walk"),
        (7, 7, 256, 4, "walk"),
        (5, 5, 64, 1, "static"),
        (7, 5, 64, 1, "static"),
        (5, 7, 64, 1, "static"),
        (5, 5, 64, 1, "prefetch"),
        (7, 5, 64, 1, "prefetch"),
        (5, 7, 64, 1, "prefetch"),
        (7, 7, 64, 1, "prefetch"),
        (5, 5, 32, 1, "walk"),
        (5, 5, 64, 2, "walk"),
    ],
    "tiles": [  # run 3: unrolled tiles, edges masked: -round34-tiles
        (5, 5, 64, 1, "static"),
        (4, 4, 64, 1, "static"),
        (5, 4, 64, 1, "static"),
        (4, 5, 64, 1, "static"),
        (3, 5, 64, 1, "static"),
        (5, 3, 64, 1, "static"),
        (3, 3, 64, 1, "static"),
        (6, 6, 64, 1, "static"),
        (7, 3, 64, 1, "static"),
        (3, 7, 64, 1, "static"),
        (4, 8, 64, 1, "static"),
        (8, 4, 64, 1, "static"),
        (5, 5, 128, 2, "static"),
        (5, 5, 64, 1, "static"),
    ],
    "groups": [  # run 4: G images a program (a warp each, or G x 2 channels a thread)
        (7, 3, 64, 1, "static"),
        (5, 5, 64, 1, "static"),
        (7, 3, 64, 2, "static", 2),
        (5, 5, 64, 2, "static", 2),
        (5, 3, 64, 2, "static", 2),
        (7, 5, 64, 2, "static", 2),
        (7, 3, 64, 4, "static", 4),
        (5, 5, 64, 4, "static", 4),
        (7, 3, 64, 1, "static", 2),
        (5, 5, 64, 1, "static", 2),
        (7, 3, 32, 1, "static", 2),
        (7, 2, 64, 1, "static"),
        (7, 7, 64, 2, "walk", 2),
        (7, 3, 64, 1, "static"),
    ],
}


def _poisoned_first(out, launch, label):
    """`launch`, its first call (the checked one) on an output filled with NaN beforehand."""
    first = [True]

    def call():
        if first:
            out.fill_(float("nan"))
            first.clear()
            k = launch()
            if not DRY:
                print(f"REGS {label}: (n_regs, n_spills) {(k.n_regs, k.n_spills)}", flush=True)
            return
        launch()

    return call


def pool34_variants(st, N, C, H, W):
    x = st["x"]
    out = torch.empty_like(x)
    want = _exact(st, N, C, H, W)
    g, _ = captured("avgpool_cl", small=DRY)
    stage = optimize(g)
    mod = load_module(emit_module(stage.graph, stage.plan))
    inputs = {k: v.to(x.device) for k, v in make_inputs(g, seed=0).items()}
    vs = {"DIAG captured as emitted (1)": _timed(mod, inputs, "captured 1")}
    configs = CONFIGS[os.environ.get("ROUND34", "groups")]
    if DRY:
        configs = [c for c in configs if c[4] != "walk" or len(c) > 5][:5]
    for S, T, CB, nw, mode, *rest in configs:
        G = rest[0] if rest else 1
        if N % G:
            continue
        kern = _kernel(S, mode)
        grid = ((C + CB - 1) // CB, -(-W // S), N // G * -(-H // T))
        label = (
            f"regwin {S}x{T} c{CB} w{nw}"
            + ("" if mode == "walk" else f" {mode}")
            + (f" g{G}" if G > 1 else "")
        )
        label += " again" if label in vs else ""
        vs[label] = _poisoned_first(
            out,
            lambda kern=kern, grid=grid, T=T, CB=CB, nw=nw, G=G: kern[grid](
                x, out, C, H, W, CB, T, G, num_warps=nw
            ),
            label,
        )
    vs["DIAG captured as emitted (2)"] = _timed(mod, inputs, "captured 2")

    def outs():
        # bit-identical to the captured arithmetic, then the workload's own check
        if not torch.equal(out.view(torch.int16), want.view(torch.int16)):
            bad = (out.float() - want.float()).abs().max().item()
            raise AssertionError(f"not bit-identical to the captured chain, max err {bad}")
        return {"out": out}

    return vs, outs


VARIANTS = sized({"avgpool_cl": pool34_variants})
