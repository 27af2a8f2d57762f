"""Run docs/inductor.md's workloads through `fuseopt bench`'s harness in one process, on one GPU.

    python benchmarks/run_gpu.py [--small] [--only apbt,tsum] [--out DIR] [--check-samples]
                                 [--graphs captured|handwritten]

For each workload (captured from tests/fixtures/programs.py by default): fuseopt's plan vs the
unfused plan vs torch eager vs torch.compile (Inductor) of the same program, each checked against
the reference interpreter before it is timed, plus the device's copy and read bandwidths measured
in the same run (a 1 GiB copy, and a copy of each workload's own byte count). Writes <DIR>/<date>-<device>.json, the device named without its vendor
(<date>-h200.json on an NVIDIA H200; <date>-h200-handwritten.json for --graphs handwritten), with
device, torch and triton versions (default DIR: benchmarks/results). --check-samples also compiles
and checks every sample and docs/cases.md graph (no timing). --small uses tiny sizes (CPU smoke test with
TRITON_INTERPRET=1: correctness only).
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    ap.add_argument("--check-samples", action="store_true")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (faster)")
    ap.add_argument(
        "--graphs",
        choices=("captured", "handwritten"),
        default="captured",
        help="captured: tests/fixtures/programs.py through fuseopt.capture (default); "
        "handwritten: tests/fixtures/workloads.py",
    )
    args = ap.parse_args()
    import torch

    interpret = not torch.cuda.is_available()
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    import triton
    from rich.console import Console
    from rich.progress import Progress

    from fuseopt.bench.harness import (
        bench_graph,
        copy_bandwidth_gbps,
        geomean,
        gpu_timer,
        read_bandwidth_gbps,
    )
    from fuseopt.io.load import load_graph, load_text
    from tests.fixtures.programs import captured
    from tests.fixtures.workloads import FULL, SMALL, WORKLOADS

    console = Console(stderr=True)
    sizes = SMALL if (args.small or interpret) else FULL
    names = [n for n in WORKLOADS if not args.only or n in args.only.split(",")]
    copy = None if interpret else copy_bandwidth_gbps(torch.device("cuda"), gpu_timer(25, 100))
    read = None if interpret else read_bandwidth_gbps(torch.device("cuda"), gpu_timer(25, 100))
    results = []
    samples = []
    with Progress(console=console) as progress:
        task = progress.add_task("workloads", total=len(names))
        for name in names:
            t0 = time.perf_counter()
            if args.graphs == "captured":
                graph, program = captured(name, small=sizes is SMALL)
            else:
                doc, program = WORKLOADS[name](**sizes[name])
                graph = load_text(json.dumps(doc), f"{name}.json")
            try:
                res = bench_graph(
                    graph, program, interpret=interpret, copy_gbps=copy, with_compile=not args.no_compile
                )
            except Exception as exc:  # keep going: one broken workload must not lose the others
                res = {"graph": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
            res["sizes"] = sizes[name]
            res["graphs"] = args.graphs
            res["wall_s"] = round(time.perf_counter() - t0, 1)
            results.append(res)
            console.print(json.dumps({k: res.get(k) for k in ("graph", "ok", "speedups", "kernels")}))
            for v in res.get("variants", []):
                pct = [v.get(k) for k in ("pct_copy", "pct_copy_same_size")]
                pcts = "/".join("-" if p is None else f"{p:.1f}" for p in pct)
                console.print(
                    f"   {v['name']:14s} ok={v['ok']} ms={v['ms']} GB/s={v['gbps']} "
                    f"%copy(1GiB/same size)={pcts} {v['error'][:200]}"
                )
            progress.advance(task)
        if args.check_samples:
            from fuseopt.passes.pipeline import optimize
            from fuseopt.runtime.compare import compare_with_reference

            paths = sorted(glob.glob(os.path.join(ROOT, "samples", "*.yaml")))
            paths += sorted(glob.glob(os.path.join(ROOT, "samples", "cases", "*.yaml")))
            task2 = progress.add_task("samples", total=len(paths))
            for path in paths:
                g = load_graph(path)
                st = optimize(g)
                try:
                    compare_with_reference(st.graph, st.plan, seed=0)
                    samples.append({"sample": os.path.relpath(path, ROOT), "ok": True})
                except Exception as exc:
                    samples.append(
                        {"sample": os.path.relpath(path, ROOT), "ok": False, "error": str(exc)[:1000]}
                    )
                progress.advance(task2)
    speedups = {
        k: geomean([r["speedups"][k] for r in results if k in r.get("speedups", {})])
        for k in ("vs_unfused", "vs_eager", "vs_torch_compile")
    }
    device = "cpu-interpret" if interpret else torch.cuda.get_device_name().replace(" ", "-").lower()
    report = {
        "benchmark": "workloads",
        "date": datetime.date.today().isoformat(),
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "copy_gbps": copy,
        "read_gbps": read,  # torch.sum over 1 GiB of float32: the ceiling of a read-only kernel
        "geomean_speedups": speedups,
        "results": results,
        "samples": samples,
    }
    os.makedirs(args.out, exist_ok=True)
    suffix = "" if args.graphs == "captured" else f"-{args.graphs}"
    slug = device.removeprefix("nvidia-")  # "NVIDIA H200" -> 2026-11-30-h200.json
    path = os.path.join(args.out, f"{report['date']}-{slug}{suffix}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    print(
        json.dumps(
            {
                "written": path,
                "geomean_speedups": speedups,
                "ok": [r.get("ok") for r in results],
                "samples_ok": sum(s["ok"] for s in samples),
                "samples": len(samples),
            }
        )
    )


if __name__ == "__main__":
    main()
