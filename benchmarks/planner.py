"""Planner scaling benchmark: time and peak memory to load, plan and write the plan of synthetic
graphs, per graph family and size, and the kernel counts of issue #23's captured probe.

    python benchmarks/planner.py [--sizes 1000,2000,5000,10000] [--families graphgen,transposed,mixed]
                                 [--jobs N] [--cli] [--repeat K] [--baseline DIR] [--probe FILE ...] [--save]

Families are tests/fixtures/graphgen.py's `FAMILIES` (graphgen: blocks of mixed work; transposed: a
chain where nearly every pair needs a loop permutation, reductions every 3 to 5 nodes; mixed: both).
Each (family, size) runs in a fresh process: the graph's JSON text is loaded (`load_text`),
planned (`optimize`, default options) and the plan serialised to JSON text; wall and CPU seconds of
each step (a child the planner forks counted in the plan's CPU seconds), and the process's peak
resident set (ru_maxrss, generation included). --jobs is the planner's (default: the CPUs this
process may use). --cli also times `fuseopt optimize FILE --format json --emit none -o DIR` end
to end (interpreter start and imports included) as a child process, the median of --repeat runs;
--baseline DIR times the same command from another checkout (DIR's `fuseopt` package) in
alternation with this one, so that both see the same machine (timings here vary by 20% and more
from one minute to the next).
--probe plans captured probe graphs (`fuseopt capture` of the issue's program; their
meta.inductor.kernel_count is Inductor's) and records both kernel counts. Prints JSON (format
`fuseopt-bench-planner/1`); --save writes benchmarks/results/planner-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RESULT_FORMAT = "fuseopt-bench-planner/1"


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(t: tuple[float, float]) -> dict[str, float]:
    w, c = _clock()
    return {"wall_s": round(w - t[0], 3), "cpu_s": round(c - t[1], 3)}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure_one(family: str, n: int, jobs: int) -> dict[str, Any]:
    """In this process: generate, then load + plan + plan JSON, timed step by step."""
    from fuseopt.io.load import load_text
    from fuseopt.passes.options import Options
    from fuseopt.passes.pipeline import optimize
    from tests.fixtures.graphgen import FAMILIES

    text = json.dumps(FAMILIES[family](n, 0))
    t = _clock()
    graph = load_text(text, f"{family}_{n}.json")
    load = _since(t)
    t, forked = _clock(), _children_cpu()
    plan = optimize(graph, Options(jobs=jobs)).plan
    planned = _since(t)
    planned["cpu_s"] = round(planned["cpu_s"] + _children_cpu() - forked, 3)
    t = _clock()
    out = json.dumps(plan.to_json(), indent=2)
    dumped = _since(t)
    total = {k: round(load[k] + planned[k] + dumped[k], 3) for k in load}
    return {
        "family": family,
        "nodes": n,
        "load": load,
        "plan": planned,
        "json": dumped,
        "total": total,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "kernels": len(plan.kernels),
        "plan_json_bytes": len(out),
    }


def measure_cli(family: str, n: int, repeat: int, baseline: str | None) -> dict[str, Any]:
    """`fuseopt optimize` as a child process on the family's graph file: the median of `repeat`
    runs, each beside a run of the `baseline` checkout's when one is given."""
    from tests.fixtures.graphgen import FAMILIES

    runs: dict[str, list[tuple[float, float]]] = {"this": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{family}_{n}.json")
        with open(path, "w") as f:
            json.dump(FAMILIES[family](n, 0), f)
        for _ in range(repeat):
            for side, root in (("baseline", baseline), ("this", ROOT)):
                if root is None:
                    continue
                before = _children_cpu()
                t0 = time.perf_counter()
                cli = "from fuseopt.cli.main import main; main()"
                cmd = [sys.executable, "-c", cli, "optimize", path, "--format", "json"]
                env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
                subprocess.run(
                    [*cmd, "--emit", "none", "-o", os.path.join(tmp, "out")],
                    check=True,
                    capture_output=True,
                    cwd=tmp,
                    env=env,
                )
                runs[side].append((time.perf_counter() - t0, _children_cpu() - before))
    # RUSAGE_CHILDREN's maxrss is the largest child so far: sizes run in ascending order.
    out: dict[str, Any] = {
        "wall_s": _median([w for w, _ in runs["this"]]),
        "cpu_s": _median([c for _, c in runs["this"]]),
        "runs": len(runs["this"]),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }
    if runs["baseline"]:
        out["baseline_wall_s"] = _median([w for w, _ in runs["baseline"]])
        out["baseline_cpu_s"] = _median([c for _, c in runs["baseline"]])
    return out


def _median(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def measure_probe(path: str) -> dict[str, Any]:
    from fuseopt.io.load import load_graph
    from fuseopt.passes.options import Options
    from fuseopt.passes.pipeline import optimize

    graph = load_graph(path)
    t = _clock()
    plan = optimize(graph, Options(), verify_each=True).plan
    planned = _since(t)
    inductor = graph.meta.get("inductor", {})
    length = re.search(r"(?:L_?|probe_)(\d+)", os.path.basename(path))
    inside = os.path.abspath(path).startswith(ROOT + os.sep)
    return {
        "file": os.path.relpath(path, ROOT) if inside else os.path.basename(path),
        "L": int(length.group(1)) if length else None,
        "nodes": len(graph.nodes),
        "fuseopt_kernels": len(plan.kernels),
        "fuseopt_sizes": [len(k.nodes) for k in plan.kernels],
        "inductor_kernels": inductor.get("kernel_count"),
        "inductor_sizes": [len(k) for k in inductor.get("kernels", [])],
        "plan": planned,
    }


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _commit(root: str) -> str:
    proc = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or os.path.abspath(root)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--families", default="graphgen,transposed,mixed")
    ap.add_argument("--jobs", type=int, default=None, help="the planner's processes (default: the CPUs)")
    ap.add_argument("--cli", action="store_true", help="also time `fuseopt optimize` end to end")
    ap.add_argument("--repeat", type=int, default=1, help="CLI runs per graph (the median is kept)")
    ap.add_argument("--baseline", help="a checkout whose `fuseopt optimize` is timed alternately")
    ap.add_argument("--probe", nargs="*", default=[], help="captured probe graphs to plan")
    ap.add_argument("--one", nargs=2, metavar=("FAMILY", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    from fuseopt.passes.speculate import cpus

    jobs = args.jobs or cpus()
    if args.one:
        print(json.dumps(measure_one(args.one[0], int(args.one[1]), jobs)))
        return
    result: dict[str, Any] = {
        "format": RESULT_FORMAT,
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "jobs": jobs,
        "baseline": _commit(args.baseline) if args.baseline else None,
        "planner": [],
        "probe": [],
    }
    for family in args.families.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--one", family, str(n), "--jobs", str(jobs)],
                check=True,
                capture_output=True,
                text=True,
            )
            row = json.loads(proc.stdout)
            if args.cli:
                row["cli"] = measure_cli(family, n, args.repeat, args.baseline)
            print(json.dumps(row), file=sys.stderr)
            result["planner"].append(row)
    for path in args.probe:
        row = measure_probe(path)
        print(json.dumps(row), file=sys.stderr)
        result["probe"].append(row)
    text = json.dumps(result, indent=2)
    print(text)
    if args.save:
        out = os.path.join(ROOT, "benchmarks", "results", f"planner-{result['date']}.json")
        with open(out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
