"""Run issue #25's benchmark suite (tests/fixtures/suite.py) through `fuseopt bench`'s harness, on one GPU.

    python benchmarks/suite.py [--small] [--only sum_f32,zoo_attn] [--out DIR] [--no-compile]

Every workload is captured (`fuseopt.capture`), then fuseopt's plan, the unfused plan, torch eager
and torch.compile (Inductor) of the same program are each checked against the reference
interpreter and timed (`fuseopt.bench.harness.bench_graph`, as benchmarks/run_gpu.py does), with
the device's copy and read bandwidths measured in the same run. Writes
<DIR>/suite-<date>-<device>.json (format `fuseopt-bench-suite/1`; the device named without its
vendor), rewritten after each workload so that a run cut short keeps what it finished. --small
uses the tiny sizes (CPU smoke test under TRITON_INTERPRET=1, which is set when there is no GPU:
correctness only, no timing).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FORMAT = "fuseopt-bench-suite/1"


def run_one(
    name: str, *, small: bool, interpret: bool, copy_gbps: float | None, with_compile: bool
) -> dict[str, Any]:
    """One workload captured and benched; a failure of any step is recorded, not raised."""
    from fuseopt.bench.harness import bench_graph
    from tests.fixtures.suite import captured, workload

    t0 = time.perf_counter()
    try:
        graph, program = captured(name, small=small)
        res = bench_graph(graph, program, interpret=interpret, copy_gbps=copy_gbps, with_compile=with_compile)
    except Exception as exc:  # keep going: one broken workload must not lose the others
        res = {"graph": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
    work = workload(name)
    res["workload"] = name
    res["sizes"] = dict(work.small if small else work.full)
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    res["summary"] = summary(res)
    return res


def summary(res: dict[str, Any]) -> dict[str, Any]:
    """The row of the results table: ms, % of copy and peak MiB of each variant, the ratio."""
    by = {v["name"]: v for v in res.get("variants", [])}

    def field(variant: str, key: str) -> Any:
        return by.get(variant, {}).get(key)

    return {
        "workload": res.get("workload", res.get("graph")),
        "ok": res.get("ok", False),
        "fuseopt_ms": field("fuseopt", "ms"),
        "compile_ms": field("torch.compile", "ms"),
        "eager_ms": field("eager", "ms"),
        "unfused_ms": field("unfused", "ms"),
        "vs_compile": res.get("speedups", {}).get("vs_torch_compile"),
        "pct_copy": field("fuseopt", "pct_copy"),
        "compile_pct_copy": field("torch.compile", "pct_copy"),
        "bytes": res.get("io_bytes"),
        "peak_mib": {name: v.get("peak_mib") for name, v in by.items()},
        "kernels": res.get("kernels"),
        "errors": {name: v["error"] for name, v in by.items() if v.get("error")}
        or ({"capture": res["error"]} if "error" in res else {}),
    }


def report(
    results: Sequence[dict[str, Any]],
    *,
    device: str,
    copy_gbps: float | None,
    read_gbps: float | None,
    versions: dict[str, str],
) -> dict[str, Any]:
    from fuseopt.bench.harness import geomean

    rows = [r["summary"] for r in results]
    ratios = [r["vs_compile"] for r in rows if r["vs_compile"]]
    return {
        "format": FORMAT,
        "date": datetime.date.today().isoformat(),
        "device": device,
        **versions,
        "copy_gbps": copy_gbps,
        "read_gbps": read_gbps,
        "workloads": len(rows),
        "ok": sum(bool(r["ok"]) for r in rows),
        "geomean_vs_torch_compile": geomean(ratios),
        "geomean_vs_eager": geomean(
            [r["speedups"]["vs_eager"] for r in results if "vs_eager" in r.get("speedups", {})]
        ),
        "below_1x_torch_compile": [r["workload"] for r in rows if r["vs_compile"] and r["vs_compile"] < 1.0],
        "table": rows,
        "results": list(results),
    }


def bandwidths(interpret: bool) -> tuple[float | None, float | None]:
    """The device's copy and read bandwidths (GB/s, 1 GiB each); None when interpreting."""
    if interpret:
        return None, None
    import torch

    from fuseopt.bench.harness import copy_bandwidth_gbps, gpu_timer, read_bandwidth_gbps

    dev = torch.device("cuda")
    return copy_bandwidth_gbps(dev, gpu_timer(25, 100)), read_bandwidth_gbps(dev, gpu_timer(25, 100))


def run_suite(
    names: Sequence[str],
    *,
    small: bool,
    interpret: bool,
    copy_gbps: float | None = None,
    with_compile: bool = True,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every named workload in order; `on_result` sees each result as it comes."""
    results = []
    for name in names:
        res = run_one(name, small=small, interpret=interpret, copy_gbps=copy_gbps, with_compile=with_compile)
        results.append(res)
        if on_result is not None:
            on_result(res)
    return results


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (faster)")
    args = ap.parse_args()
    import torch

    interpret = not torch.cuda.is_available()
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    import triton
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from tests.fixtures.suite import HELDOUT, SUITE

    only = [n for n in args.only.split(",") if n]
    unknown = sorted(set(only) - set(SUITE) - set(HELDOUT))
    if unknown:
        known = ", ".join([*SUITE, *HELDOUT])
        ap.error(f"--only: unknown workloads {', '.join(unknown)} (known: {known})")
    # the suite, or the workloads --only names of it and of HELDOUT (never tuned on)
    names = [n for n in SUITE if not only or n in only] + [n for n in HELDOUT if n in only]
    small = args.small or interpret
    device = "cpu-interpret" if interpret else torch.cuda.get_device_name().replace(" ", "-").lower()
    versions = {"torch": torch.__version__, "triton": triton.__version__}
    os.makedirs(args.out, exist_ok=True)
    slug = device.removeprefix("nvidia-")
    path = os.path.join(args.out, f"suite-{datetime.date.today().isoformat()}-{slug}.json")
    console = Console(stderr=True)
    copy, read = bandwidths(interpret)
    done: list[dict[str, Any]] = []

    def finish(results: list[dict[str, Any]]) -> dict[str, Any]:
        doc = report(results, device=device, copy_gbps=copy, read_gbps=read, versions=versions)
        _write(path, doc)
        return doc

    with Progress(console=console) as progress:
        task = progress.add_task("suite", total=len(names))

        def on_result(res: dict[str, Any]) -> None:
            done.append(res)
            s = res["summary"]
            console.print(
                f"{s['workload']:18s} ok={s['ok']} fuseopt={_fmt(s['fuseopt_ms'], '.4f')} ms "
                f"compile={_fmt(s['compile_ms'], '.4f')} ms x{_fmt(s['vs_compile'], '.3f')} "
                f"%copy={_fmt(s['pct_copy'], '.1f')} kernels={s['kernels']} {str(s['errors'])[:300]}"
            )
            finish(done)  # rewritten after each workload: a run cut short keeps what it finished
            progress.advance(task)

        run_suite(
            names,
            small=small,
            interpret=interpret,
            copy_gbps=copy,
            with_compile=not args.no_compile,
            on_result=on_result,
        )
    final = finish(done)
    table = Table(title=f"{device}: copy {_fmt(copy, '.0f')} GB/s")
    for col in ("workload", "fuseopt ms", "compile ms", "vs compile", "% copy", "ok"):
        table.add_column(col)
    for s in final["table"]:
        table.add_row(
            s["workload"],
            _fmt(s["fuseopt_ms"], ".4f"),
            _fmt(s["compile_ms"], ".4f"),
            _fmt(s["vs_compile"], ".3f"),
            _fmt(s["pct_copy"], ".1f"),
            str(s["ok"]),
        )
    console.print(table)
    keys = ("geomean_vs_torch_compile", "geomean_vs_eager", "below_1x_torch_compile", "ok", "workloads")
    print(json.dumps({"written": path, **{k: final[k] for k in keys}}))


def _write(path: str, doc: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)


if __name__ == "__main__":
    main()
