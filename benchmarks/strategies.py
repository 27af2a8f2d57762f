"""Every kernel strategy and launch candidate that applies to each workload, timed on one GPU.

    python benchmarks/strategies.py [--only sum_f32,tsum] [--out FILE] [--jobs N]

For each workload of the suite (tests/fixtures/suite.py) and of docs/inductor.md's six
(tests/fixtures/programs.py), captured at full size: every compute launch's chosen tiling
(`codegen.choice.choose`) and each strategy of `strategies.TABLE` that applies to it, with each of
its launch candidates (`codegen.choice.candidates`). Each variant's module (the other launches as
chosen) is run once and compared with the chosen module's outputs, then timed (GPU time,
`fuseopt.bench.timing`). Variants compile first in --jobs processes (Triton's cache), then are
timed one at a time. Writes FILE (format `fuseopt-bench-strategies/1`): per variant the workload,
launch, strategy, blocks, warps, programs of a cluster, the cost model's estimate (`codegen.cost`)
and the time.
This is the data the cost model (`codegen/cost.py`) is checked against.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import datetime
import json
import multiprocessing
import os
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FORMAT = "fuseopt-bench-strategies/1"


def workloads(only: list[str]) -> list[tuple[str, str]]:
    from tests.fixtures.suite import SUITE
    from tests.fixtures.workloads import WORKLOADS

    names = [("suite", n) for n in SUITE] + [("six", n) for n in WORKLOADS]
    return [(k, n) for k, n in names if not only or n in only]


def capture(kind: str, name: str) -> Any:
    if kind == "suite":
        from tests.fixtures.suite import captured
    else:
        from tests.fixtures.programs import captured
    return captured(name)[0]


def variants(graph: Any, options: Any) -> list[dict[str, Any]]:
    """Each variant: which launch, the forced tiling's description, the module source."""
    from fuseopt.codegen import choice, wrapper
    from fuseopt.codegen.cost import estimate
    from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
    from fuseopt.passes.pipeline import optimize

    stage = optimize(graph)
    graph, plan = stage.graph, stage.plan  # the graph as the passes left it (loop orders)
    launches = [
        i
        for i, la in enumerate(build_schedule(graph, plan).launches)
        if isinstance(la, ComputeLaunch) and la.stores
    ]
    chosen = wrapper.build_module(graph, plan, options)
    out = [{"launch": None, "chosen": True, "source": chosen}]
    for index in launches:
        launch = build_schedule(graph, plan).launches[index]
        for tiling, carry in choice.candidates(graph, launch, options):
            forced = {index: (tiling, carry)}
            src = wrapper.build_module(graph, plan, options, forced=forced)
            est = estimate(graph, tiling, options).us
            out.append(
                {
                    "launch": index,
                    "chosen": src == chosen,
                    "source": src,
                    "estimated_us": est,
                    **_describe(tiling),
                }
            )
    return out


def _describe(tiling: Any) -> dict[str, Any]:
    if tiling is None:
        return {}
    cfg = tiling.config
    return {
        "strategy": type(tiling.strategy).__name__,
        "blocks": dict(cfg.blocks),
        "num_warps": cfg.num_warps,
        "num_ctas": cfg.num_ctas,
    }


def _warm(job: tuple[Any, str, list[str]]) -> str:
    """Compile every variant of one workload (run once each: Triton caches the binaries)."""
    import torch

    from fuseopt.interp import make_inputs
    from fuseopt.runtime.module import load_module, run_module

    graph, name, sources = job
    inputs = {k: v.cuda() for k, v in make_inputs(graph, seed=0).items()}
    for src in sources:
        with contextlib.suppress(Exception):  # a failure is reported by the timing pass
            run_module(load_module(src), {k: v.clone() for k, v in inputs.items()})
    torch.cuda.synchronize()
    return name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--jobs", type=int, default=8)
    args = ap.parse_args()
    import torch

    from fuseopt.bench.harness import copy_bandwidth_gbps, gpu_timer
    from fuseopt.codegen.options import CodegenOptions
    from fuseopt.interp import make_inputs
    from fuseopt.runtime.module import load_module, run_module
    from fuseopt.targets import from_properties

    dev = torch.device("cuda")
    options = CodegenOptions(target=from_properties(torch.cuda.get_device_properties(dev)))
    names = workloads([n for n in args.only.split(",") if n])
    t0 = time.perf_counter()
    made = {}
    for kind, name in names:
        made[name] = (kind, capture(kind, name))
    per = {name: variants(graph, options) for name, (_, graph) in made.items()}
    print(f"{sum(map(len, per.values()))} variants in {time.perf_counter() - t0:.0f} s", flush=True)
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(args.jobs, mp_context=ctx) as pool:
        jobs = [(made[n][1], n, [v["source"] for v in vs]) for n, vs in per.items()]
        for done in pool.map(_warm, jobs):
            print("compiled", done, f"{time.perf_counter() - t0:.0f} s", flush=True)
    timer = gpu_timer(25, 100, dev)
    copy = copy_bandwidth_gbps(dev, timer)
    rows: list[dict[str, Any]] = []
    out = args.out or os.path.join(
        ROOT, "benchmarks", "results", f"strategies-{datetime.date.today()}-h200.json"
    )
    for name, vs in per.items():
        graph = made[name][1]
        inputs = {k: v.to(dev) for k, v in make_inputs(graph, seed=0).items()}
        ref = None
        for v in vs:
            row = {k: v[k] for k in v if k != "source"}
            row["workload"] = name
            try:
                module = load_module(v["source"])
                got = run_module(module, {k: t.clone() for k, t in inputs.items()}, poison=True)
                if ref is None:
                    ref = got
                else:
                    for k, want in ref.items():
                        torch.testing.assert_close(got[k], want, rtol=3e-2, atol=3e-2, equal_nan=True)
                row["ms"] = timer.timing(lambda m=module, i=inputs: m.call(i)).ms
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:500]
            rows.append(row)
        print(name, [(r.get("strategy"), r.get("ms")) for r in rows if r["workload"] == name], flush=True)
        doc = {
            "format": FORMAT,
            "date": str(datetime.date.today()),
            "device": torch.cuda.get_device_name(dev),
            "torch": torch.__version__,
            "copy_gbps": copy,
            "variants": rows,
        }
        with open(out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
