"""Whole models: capture, plan and (on a GPU) time the zoo of tests/zoo.

    python benchmarks/models.py --size small -o benchmarks/results/models-<date>.json
    python benchmarks/models.py --size real [--only gpt2,resnet] [--batch N] -o ...-real.json
    python benchmarks/models.py --size real --gpu --only gpt2 -o ...-h200.json    # on the GPU

For each model (tests/zoo/models.py, one place for tests and benchmarks: GPT-2, Llama, BERT, ViT,
ResNet, ConvNeXt from transformers configs with random weights, and the Inception-v3 network of
tests/zoo/inception.py in bf16, channels-last), in a fresh child process so that its peak
memory is its own:

- capture (`fuseopt.capture.capture_program`, planned as for a GPU), its wall time;
- fuseopt's plan (`optimize`, default options) and its Triton source (`emit_module`), their wall
  times and tracemalloc peaks;
- generated (non-extern) kernels and bytes moved, fuseopt's and Inductor's on the same graph
  (`meta.inductor`, the same AccessTable definition of bytes);
- the child's maximum resident set (ru_maxrss: torch, the model's weights, the capture).

With `--gpu` (CUDA), the model is then timed whole: fuseopt's generated module against eager and
torch.compile of the same module on the same weights (`fuseopt.bench.model`: every variant checked
against the reference first), with peak memory and the ten slowest kernels of fuseopt's module and
torch.compile's. Writes JSON (`format: fuseopt-models/1`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FORMAT = "fuseopt-models/1"


def measure(name: str, size: str, batch: int | None, gpu: bool, interpret: bool = False) -> dict[str, Any]:
    """One model, in this process: capture, plan, emit (and with `gpu`, bench)."""
    import torch

    from fuseopt.capture import capture_program
    from fuseopt.codegen import emit_module
    from fuseopt.passes.options import Options
    from fuseopt.passes.pipeline import optimize
    from tests.zoo.measure import generated_kernels, inductor_generated_kernels
    from tests.zoo.models import build, describe

    case = build(name, size, batch=batch)
    rec: dict[str, Any] = describe(case)
    t0 = time.perf_counter()
    cap = capture_program(case.module, *case.inputs, name=name)
    rec["capture_s"] = round(time.perf_counter() - t0, 2)
    graph = cap.graph
    rec["nodes"] = len(graph.nodes)
    rec["buffers"] = len(graph.buffers)
    tracemalloc.start()
    t0 = time.perf_counter()
    stage = optimize(graph, Options())
    rec["plan_s"] = round(time.perf_counter() - t0, 3)
    rec["plan_peak_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    source = emit_module(stage.graph, stage.plan)
    rec["codegen_s"] = round(time.perf_counter() - t0, 3)
    rec["codegen_peak_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    tracemalloc.stop()
    rec["source_kib"] = round(len(source.encode()) / 1024, 1)
    ind = graph.meta["inductor"]
    rec["inductor"] = {
        "kernels_generated": inductor_generated_kernels(graph),
        "kernel_count": ind["kernel_count"],
        "bytes": ind["num_bytes_accessed"],
    }
    rec["fuseopt"] = {
        "kernels_generated": generated_kernels(stage.graph, stage.plan),
        "kernel_count": len(stage.plan.kernels),
        "bytes": stage.plan.metrics["bytes"],
    }
    rec["kernels_le_inductor"] = rec["fuseopt"]["kernels_generated"] <= rec["inductor"]["kernels_generated"]
    rec["bytes_le_inductor"] = rec["fuseopt"]["bytes"] <= rec["inductor"]["bytes"]
    if gpu or interpret:
        rec["bench"] = _bench(case, cap, interpret)
    rec["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    del torch
    return rec


def _bench(case: Any, cap: Any, interpret: bool) -> dict[str, Any]:
    """The whole model timed (on the CPU with `interpret`: checked only, the same path)."""
    import torch

    from fuseopt.bench.harness import bench_graph
    from fuseopt.bench.model import bind_capture
    from fuseopt.interp.limits import Limits

    bound = bind_capture(cap.graph, case.module, case.inputs, cap)
    inputs = bound.input_storages()
    device = torch.device("cpu" if interpret else "cuda")
    case.module.to(device)  # parameters move in place: the bound tensors are there now
    bound.to(device)
    t0 = time.perf_counter()
    res = bench_graph(
        cap.graph,
        bound,
        device=device,
        interpret=interpret,
        inputs=inputs,
        kernels_top=10,
        warmup=25,
        rep=100,
        limits=Limits(max_memory=64 << 30, max_points=1 << 36),  # a whole model at its real size
        with_unfused=False,
    )
    res["bench_s"] = round(time.perf_counter() - t0, 1)
    res["weights"] = len(bound.weights)
    return res


def _child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--one", name, "--size", args.size]
    if args.batch is not None:
        cmd += ["--batch", str(args.batch)]
    cmd += ["--gpu"] if args.gpu else []
    cmd += ["--interpret"] if args.interpret else []
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        wall = round(time.perf_counter() - t0, 1)
        return {
            "model": name,
            "size": args.size,
            "ok": False,
            "error": f"over --timeout {args.timeout} s",
            "wall_s": wall,
        }
    wall = round(time.perf_counter() - t0, 1)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
        return {
            "model": name,
            "size": args.size,
            "ok": False,
            "error": " | ".join(tail)[-2000:],
            "wall_s": wall,
        }
    rec: dict[str, Any] = json.loads(lines[-1])
    rec["ok"] = True
    rec["wall_s"] = wall
    return rec


def main() -> None:
    from tests.zoo.models import SIZES, ZOO

    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--size", choices=SIZES, default="small")
    ap.add_argument("--only", help="comma-separated models (default: the whole zoo)")
    ap.add_argument("--batch", type=int, help="replace each model's batch size")
    ap.add_argument("--gpu", action="store_true", help="also time each model on the GPU")
    ap.add_argument("--interpret", action="store_true", help="the --gpu path on the CPU, checks only")
    ap.add_argument("--timeout", type=float, help="seconds each model may take (its child is killed)")
    ap.add_argument("-o", "--output", help="write the JSON here")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        if args.interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        print(json.dumps(measure(args.one, args.size, args.batch, args.gpu, args.interpret)))
        return
    names = args.only.split(",") if args.only else list(ZOO)
    unknown = sorted(set(names) - set(ZOO))
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; the zoo has {', '.join(ZOO)}")
    import torch
    import transformers

    report: dict[str, Any] = {
        "format": FORMAT,
        "date": datetime.date.today().isoformat(),
        "size": args.size,
        "batch": args.batch,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "device": torch.cuda.get_device_name() if args.gpu else "cpu",
        "results": [],
    }
    for name in names:
        rec = _child(name, args)
        print(json.dumps({k: v for k, v in rec.items() if k != "bench"}), file=sys.stderr, flush=True)
        report["results"].append(rec)
        if args.output:  # after every model: a run cut short keeps what it measured
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(json.dumps(report, indent=1) + "\n")
    if not args.output:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
