"""Planner benchmark: time and peak memory to plan synthetic graphs of 1k to 10k nodes, and to
generate their Triton code.

    python benchmarks/bench_plan.py [--sizes 1000,2000,5000,10000] [--scoring stable] [--no-emit]
                                    [--save]

Graphs come from tests/fixtures/graphgen.py (blocks of pointwise chains, transposed layouts, row
reductions with epilogues and broadcasts, siblings). Load time is measured apart from planning,
and code generation (`emit_module` of the plan, what `fuseopt optimize` writes as kernels.py)
apart from both. Peak memory is the process's maximum resident set (ru_maxrss) after each size,
and tracemalloc's peak for the planning call and the generation call alone. Prints JSON; --save
writes benchmarks/results/plan-<date>-<scoring>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import sys
import time
import tracemalloc

from rich.console import Console
from rich.progress import Progress

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuseopt.codegen import emit_module  # noqa: E402
from fuseopt.io.load import load_text  # noqa: E402
from fuseopt.passes.options import Options  # noqa: E402
from fuseopt.passes.pipeline import optimize  # noqa: E402
from tests.fixtures.graphgen import make_graph  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--scoring", default="stable", choices=["stable", "inductor"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-emit", action="store_true", help="skip timing code generation")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with Progress(console=Console(stderr=True)) as progress:
        task = progress.add_task("planning and generating", total=len(sizes) * args.repeat)
        for n in sizes:
            text = json.dumps(make_graph(n))
            t0 = time.perf_counter()
            graph = load_text(text, f"synthetic_{n}.json")
            load_s = time.perf_counter() - t0
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                stage = optimize(graph, Options(scoring=args.scoring))
                best = min(best, time.perf_counter() - t0)
                progress.advance(task)
            tracemalloc.start()
            optimize(graph, Options(scoring=args.scoring))
            _, traced_peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            emit: dict[str, float | int] = {}
            if not args.no_emit:
                t0 = time.perf_counter()
                source = emit_module(stage.graph, stage.plan)
                emit_s = time.perf_counter() - t0
                tracemalloc.start()
                emit_module(stage.graph, stage.plan)
                _, emit_peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                emit = {
                    "emit_s": round(emit_s, 3),
                    "emit_traced_peak_mib": round(emit_peak / 2**20, 1),
                    "source_kib": round(len(source.encode()) / 1024, 1),
                }
            rows.append(
                {
                    "nodes": n,
                    "load_s": round(load_s, 3),
                    "plan_s": round(best, 3),
                    "plan_traced_peak_mib": round(traced_peak / 2**20, 1),
                    **emit,
                    "process_max_rss_mib": round(
                        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
                    ),
                    "kernels": stage.plan.metrics["kernels"],
                    "bytes": stage.plan.metrics["bytes"],
                    "unfused_bytes": stage.plan.metrics["unfused_bytes"],
                }
            )
    result = {
        "benchmark": "plan",
        "date": datetime.date.today().isoformat(),
        "scoring": args.scoring,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "load_average": os.getloadavg(),
        "results": rows,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.save:
        out = os.path.join(
            os.path.dirname(os.path.abspath(__file__)),
            "results",
            f"plan-{result['date']}-{args.scoring}.json",
        )
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
