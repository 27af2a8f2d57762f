# ruff: noqa: E402, B023, SIM115
"""The harness of benchmarks/explore_gpu.py: set-up (DRY=1, or no CUDA: TRITON_INTERPRET=1 and tiny
sizes), timing, checking, and the run over the workloads. Import it before any round module, so
that TRITON_INTERPRET is set before triton loads."""

import json
import os
import re
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

DRY = os.environ.get("DRY") == "1" or not torch.cuda.is_available()
if DRY:
    os.environ["TRITON_INTERPRET"] = "1"
import triton

from benchmarks.workloads import FULL, SMALL, WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.interp import logical_view, make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module

OUT = os.environ.get("OUT", "/tmp/explore")
DEV = "cpu" if DRY else "cuda"
SIZES = SMALL if DRY else FULL
COMPILE = os.environ.get("COMPILE", "1") == "1" and not DRY
NSM = 1 if DRY else torch.cuda.get_device_properties(0).multi_processor_count
ROWS: list[dict[str, Any]] = []
COPY = 1.0

Variants = Callable[[dict[str, Any], dict[str, int]], tuple[dict[str, Callable[[], Any]], Any]]


def sized(by_workload: dict[str, Callable[..., Any]]) -> dict[str, Variants]:
    """Variant builders taking the workload's sizes as arguments -> builders taking its size dict."""
    dims = {
        "apbt": lambda sz: (sz["rows"], sz["cols"]),
        "tsum": lambda sz: (sz["rows"], sz["cols"]),
        "three_layouts_mean": lambda sz: (sz["rows"], sz["cols"], sz["cols"] + sz.get("pad", 64)),
        "layernorm_t": lambda sz: (sz["rows"], sz["cols"]),
        "softmax_bias_t": lambda sz: (sz["rows"], sz["cols"]),
        "avgpool_cl": lambda sz: (sz["n"], sz["c"], sz["h"], sz["w"]),
    }
    return {
        name: (lambda st, sz, fn=fn, name=name: fn(st, *dims[name](sz))) for name, fn in by_workload.items()
    }


def bench(fn):
    if DRY:
        fn()
        return 1.0
    return float(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))


def graphed(fn):
    if DRY:
        return fn
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def copy_gbps():
    if DRY:
        return 1.0
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src))
    return 2 * src.numel() * 4 / (ms * 1e-3) / 1e9


def close(got, want):
    tol = 3e-2 if want.dtype == torch.bfloat16 else 2e-3
    g = got.float()
    w = want.float()
    if not torch.allclose(g, w, rtol=tol, atol=tol):
        err = (g - w).abs().nan_to_num(1e9).max().item()
        raise AssertionError(f"mismatch, max err {err}")


PERSISTENT_LAUNCH = r"\[\(\d+,\)\]\(((?:[^)]|\n)*?)XBLOCK=\d+, R0_BLOCK=(\d+), num_warps=\d+"


def relaunched(src: str, rows: int, xb: int, nw: int, extra: str = "") -> str:
    """fuseopt's module source with its one 1D reduction launch at `xb` rows of `rows` and `nw`
    warps (`extra`: more launch keywords, such as ", maxnreg=128")."""
    new, n = re.subn(
        PERSISTENT_LAUNCH, rf"[({rows // xb},)](\1XBLOCK={xb}, R0_BLOCK=\2, num_warps={nw}{extra}", src
    )
    if n != 1:
        raise ValueError(f"{n} reduction launches in the module, not one")
    return new


# ---------------------------------------------------------------- hand kernels


def record(name, label, fn, check, nbytes, with_graph=False):
    try:
        fn()
        if not DRY:
            torch.cuda.synchronize()
        check()
        ms = bench(fn)
        row = {
            "workload": name,
            "variant": label,
            "ms": ms,
            "pct_copy": 100 * nbytes / (ms * 1e-3) / 1e9 / COPY,
        }
        if with_graph:
            gms = bench(graphed(fn))
            row["graph_ms"] = gms
            row["graph_pct_copy"] = 100 * nbytes / (gms * 1e-3) / 1e9 / COPY
        ROWS.append(row)
        extra = f"  graph {row['graph_ms']:.4f} ms {row['graph_pct_copy']:5.1f}%" if with_graph else ""
        print(f"{name:19s} {label:42s} {ms:.4f} ms {row['pct_copy']:5.1f}%{extra}", flush=True)
    except Exception as e:
        print(f"{name:19s} {label:42s} FAIL {type(e).__name__}: {str(e)[:400]}", flush=True)
        ROWS.append({"workload": name, "variant": label, "error": f"{type(e).__name__}: {str(e)[:400]}"})


def run(only: list[str], variants: dict[str, Variants]) -> None:
    """Every workload of `only`: fuseopt's call, the variants, torch.compile; then $OUT/explore.json."""
    global COPY
    os.makedirs(OUT, exist_ok=True)
    COPY = copy_gbps()
    print(f"copy {COPY:.0f} GB/s", flush=True)
    for name in only:
        t0 = time.time()
        sz = SIZES[name]
        doc, program = WORKLOADS[name](**sz)
        g = load_text(json.dumps(doc), f"{name}.json")
        inputs = {k: v.to(DEV) for k, v in make_inputs(g, seed=0).items()}
        views = {b.name: logical_view(g, b.name, inputs[b.name]) for b in g.inputs}
        want = program(views)
        nbytes = sum(b.storage_size * b.dtype.itemsize for b in g.buffers if b.role in ("input", "output"))

        def checker(get):
            def check():
                got = get()
                for bname, w in want.items():
                    close(logical_view(g, bname, got[bname]).reshape(w.shape), w)

            return check

        st = optimize(g)
        src = emit_module(st.graph, st.plan)
        with open(f"/tmp/fuseopt_{name}.py", "w") as f:
            f.write(src)
        m = load_module(src)
        res = {}

        def call(m=m):
            res.update(m.call(inputs))

        record(name, "fuseopt call", call, checker(lambda: res), nbytes, with_graph=True)
        vs, outs = variants[name](inputs, sz) if name in variants else ({}, None)
        for label, fn in vs.items():
            record(name, label, fn, (lambda: None) if label.startswith("DIAG") else checker(outs), nbytes)
        if COMPILE:
            try:
                from torch._inductor.utils import run_and_get_code

                c = torch.compile(program)
                _, codes = run_and_get_code(c, views)
                with open(
                    os.path.join(
                        OUT,
                        f"inductor_{name}.py"
                        if name in ("avgpool_cl", "softmax_bias_t")
                        else f"/tmp/inductor_{name}.py",
                    ),
                    "w",
                ) as f:
                    f.write("\n\n# ======\n\n".join(codes))
                cres = {}

                def ccall():
                    cres.clear()
                    cres.update(c(views))

                def ccheck():
                    for bname, w in want.items():
                        close(cres[bname], w)

                record(name, "torch.compile", ccall, ccheck, nbytes, with_graph=False)
                record(name, "torch.compile again", ccall, ccheck, nbytes, with_graph=False)
            except Exception:
                traceback.print_exc()
        print(f"-- {name} {time.time() - t0:.1f}s", flush=True)

    json.dump(
        {
            "copy_gbps": COPY,
            "device": None if DRY else torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "triton": triton.__version__,
            "rows": ROWS,
        },
        open(os.path.join(OUT, "explore.json"), "w"),
        indent=1,
    )
    for name in only:
        rs = [r for r in ROWS if r["workload"] == name and "ms" in r]
        if rs:
            b = min(rs, key=lambda r: r["ms"])
            print(f"BEST {name:19s} {b['ms']:.4f} ms {b['pct_copy']:5.1f}% {b['variant']}")
