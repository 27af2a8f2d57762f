"""fuseopt's planner against Inductor's own `Scheduler.__init__`, in one process, on the same program.

    python benchmarks/planner_vs_inductor.py [--lengths 400] [--repeat 3] [--save]

The program is issue #23's scheduler-time probe (`probe` below: L steps of `sin(x) + y.t() * k`, a
row-sum every 4th step, a transposed copy out every 8th) on float32[64, 64] inputs. For each L:

* Inductor: the program is compiled with torch.compile as `fuseopt capture` compiles it (GPU
  emulation, the same library fallbacks, no grad, static shapes, one graph), with
  `Scheduler.__init__` wrapped: the wall time of that call alone (node creation, dependencies,
  fusion, everything Inductor's scheduler does before code generation) is recorded, along with its
  `fuse_nodes` share, and the compile is stopped when it returns (no kernel is generated).
* fuseopt: the program is captured (`capture_program`), its graph written as JSON text, then timed:
  load (`load_text`: parse and validate) + plan (`optimize`, stable scoring, the default options) +
  the plan's JSON text, all in process, best of --repeat.
  Both sides are warmed up first on L = 8 (lazy imports and first-call caches are not timed). Peak memory of the planning alone is
  tracemalloc's peak; the process's maximum resident set is recorded too.

Wall times (`*_s`) and this process's CPU times (`*_cpu_s`, time.process_time: what a loaded
machine inflates least) are both recorded, with the load average.

Prints JSON (format `fuseopt-bench-vs-inductor/1`); --save writes
benchmarks/results/planner_vs_inductor-<date>.json.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from fuseopt.capture import capture_program  # noqa: E402
from fuseopt.capture.driver import _library_fallbacks  # noqa: E402
from fuseopt.capture.emulate import gpu_emulation  # noqa: E402
from fuseopt.io.load import load_text  # noqa: E402
from fuseopt.ir.serialize import dump_json  # noqa: E402
from fuseopt.passes.options import Options  # noqa: E402
from fuseopt.passes.pipeline import optimize  # noqa: E402

RESULT_FORMAT = "fuseopt-bench-vs-inductor/1"


def probe(length: int) -> Callable[[torch.Tensor, torch.Tensor], Any]:
    """Issue #23's probe with L = `length` (248 scheduler nodes at L = 400)."""

    def f(x: torch.Tensor, y: torch.Tensor) -> Any:
        outs = []
        for i in range(length):
            x = torch.sin(x) + y.t() * (i + 1)
            if i % 4 == 3:
                x = x - x.sum(-1, keepdim=True)
            if i % 8 == 7:
                outs.append(x.t().contiguous())
                x = x.t().contiguous().t()
        return x, outs

    f.__name__ = f"probe_{length}"
    return f


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)


class _Stop(Exception):
    """Raised once Scheduler.__init__ has returned: nothing after it is measured."""


@contextmanager
def _timed_scheduler(times: dict[str, Any]) -> Iterator[None]:
    from torch._inductor import scheduler

    init, fuse = scheduler.Scheduler.__init__, scheduler.Scheduler.fuse_nodes

    def timed_init(self: Any, nodes: list[Any]) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        init(self, nodes)
        times["scheduler_init_s"] = time.perf_counter() - t0
        times["scheduler_init_cpu_s"] = time.process_time() - c0
        times["scheduler_nodes"] = len(nodes)
        times["inductor_kernels"] = len(self.nodes)
        raise _Stop()

    def timed_fuse(self: Any, nodes: list[Any]) -> list[Any]:
        t0 = time.perf_counter()
        out = fuse(self, nodes)
        times["fuse_nodes_s"] = times.get("fuse_nodes_s", 0.0) + time.perf_counter() - t0
        return out

    scheduler.Scheduler.__init__ = timed_init  # type: ignore[method-assign]
    scheduler.Scheduler.fuse_nodes = timed_fuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        scheduler.Scheduler.__init__ = init  # type: ignore[method-assign]
        scheduler.Scheduler.fuse_nodes = fuse  # type: ignore[method-assign]


def time_inductor(length: int) -> dict[str, Any]:
    times: dict[str, Any] = {}
    fn = probe(length)
    torch._dynamo.reset()
    try:
        with gpu_emulation(), _library_fallbacks(), _timed_scheduler(times), torch.no_grad():
            torch.compile(fn, backend="inductor", fullgraph=True, dynamic=False)(*_inputs())
    except Exception as exc:  # the compile ends in _Stop, wrapped by Dynamo
        if "scheduler_init_s" not in times:
            raise RuntimeError(f"Inductor did not reach Scheduler.__init__'s end: {exc}") from exc
    finally:
        torch._dynamo.reset()
    return times


def time_fuseopt(length: int, repeat: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    cap = capture_program(probe(length), *_inputs())
    capture_s = time.perf_counter() - t0
    text = dump_json(cap.graph)
    best: dict[str, float] = {}
    kernels = 0
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        graph = load_text(text, f"probe_{length}.json")
        t1 = time.perf_counter()
        stage = optimize(graph, Options())
        t2 = time.perf_counter()
        out = json.dumps(stage.plan.to_json(), indent=2)
        t3, c3 = time.perf_counter(), time.process_time()
        for key, value in (
            ("total_cpu_s", c3 - c0),
            ("load_s", t1 - t0),
            ("plan_s", t2 - t1),
            ("json_s", t3 - t2),
            ("total_s", t3 - t0),
        ):
            best[key] = min(best.get(key, float("inf")), value)
        kernels = len(stage.plan.kernels)
        assert out
    graph = load_text(text, f"probe_{length}.json")
    tracemalloc.start()
    optimize(graph, Options())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    inductor_kernels = cap.graph.meta.get("inductor", {}).get("kernel_count")
    return {
        "capture_s": round(capture_s, 3),
        **{k: round(v, 4) for k, v in best.items()},
        "plan_peak_mib": round(peak / 2**20, 2),
        "graph_nodes": len(cap.graph.nodes),
        "graph_json_bytes": len(text),
        "fuseopt_kernels": kernels,
        "inductor_kernels_in_capture": inductor_kernels,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--lengths", default="400")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    time_inductor(8)  # warm-up: Inductor's and fuseopt's lazy imports and first-call caches
    time_fuseopt(8, 1)
    rows = []
    for length in (int(s) for s in args.lengths.split(",")):
        ind = time_inductor(length)
        ours = time_fuseopt(length, args.repeat)
        rows.append(
            {
                "L": length,
                "inductor": {k: round(v, 4) if isinstance(v, float) else v for k, v in ind.items()},
                "fuseopt": ours,
                "speedup_load_plan": round(ind["scheduler_init_s"] / (ours["load_s"] + ours["plan_s"]), 1),
                "speedup_end_to_end": round(ind["scheduler_init_s"] / ours["total_s"], 1),
                "speedup_end_to_end_cpu": round(ind["scheduler_init_cpu_s"] / ours["total_cpu_s"], 1),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    doc = {
        "format": RESULT_FORMAT,
        "benchmark": "planner_vs_inductor",
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "results": rows,
    }
    text = json.dumps(doc, indent=2) + "\n"
    print(text, end="")
    if args.save:
        path = os.path.join(os.path.dirname(__file__), "results", f"planner_vs_inductor-{doc['date']}.json")
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
