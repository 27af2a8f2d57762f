"""Every kernel strategy and launch candidate that applies to each workload, timed on one GPU.

    python benchmarks/strategies.py [--only sum_f32,tsum,colsum_f16 | --graph G.json ...] [--out FILE] [--jobs N]
    python benchmarks/strategies.py --constant split_min_r_blocks=1,2,4,8 [--only ...]

For each workload of the suite (tests/fixtures/suite.py; its `HELDOUT` workloads where --only names
them) and of docs/inductor.md's six (tests/fixtures/programs.py), captured at full size: every compute launch's chosen tiling
(`codegen.choice.choose`) and each strategy of `strategies.TABLE` that applies to it, with each of
its launch candidates (`codegen.choice.candidates`), and row tiles of the most warps on twice as many
(`wider`). Each variant's module (the other launches as
chosen) is run once, outputs poisoned, and checked against the reference interpreter, then timed
(GPU time, `fuseopt.bench.timing`). --small: tiny sizes on the CPU under TRITON_INTERPRET=1, checks
only. Variants compile first in --jobs processes (Triton's cache), then are
timed one at a time. Writes FILE (format `fuseopt-bench-strategies/1`): per variant the workload,
launch, strategy, blocks, warps, programs of a cluster, the cost model's estimate (`codegen.cost`)
and the time.
This is the data the cost model (`codegen/cost.py`) is checked against.

With --constant NAME=V1,V2,...: instead, each workload's whole module generated with the target's
tuned constant NAME (`fuseopt.targets.base.Tuning`) at each value, the target's own first (the row
`chosen`); values that generate the same module share a row (`values`). What a new target's
constants are measured with, one constant at a time.
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
from collections.abc import Sequence
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FORMAT = "fuseopt-bench-strategies/1"


def workloads(only: list[str], graphs: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(kind, name): the suite's and the six, and the held-out workloads where `only` names them;
    or with `graphs` those graph files (kind "file")."""
    if graphs:
        return [("file", g) for g in graphs]
    from tests.fixtures.suite import HELDOUT, SUITE
    from tests.fixtures.workloads import WORKLOADS

    names = [("suite", n) for n in SUITE] + [("six", n) for n in WORKLOADS]
    names += [("suite", n) for n in HELDOUT if n in only]
    return [(k, n) for k, n in names if not only or n in only]


def capture(kind: str, name: str, small: bool = False) -> Any:
    if kind == "file":  # a graph file (`fuseopt capture` writes one), at its own size
        from fuseopt.io.load import load_graph

        return load_graph(name)
    if kind == "suite":
        from tests.fixtures.suite import captured
    else:
        from tests.fixtures.programs import captured
    return captured(name, small=small)[0]


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
        taken, _ = choice.choose(graph, launch, options)
        for tiling, carry in choice.candidates(graph, launch, options) + wider(graph, launch, options):
            forced = {index: (tiling, carry)}
            src = wrapper.build_module(graph, plan, options, forced=forced)
            est = estimate(graph, tiling, options).us
            same = (tiling.strategy, tiling.config) == (taken.strategy, taken.config)
            out.append(
                {"launch": index, "chosen": same, "source": src, "estimated_us": est, **_describe(tiling)}
            )
    return out


def constant_variants(graph: Any, options: Any, name: str, values: Sequence[int]) -> list[dict[str, Any]]:
    """The module with the tuned constant `name` at the target's value, then at each other value
    of `values`; a value that generates a module already listed joins that row's `values`."""
    import dataclasses

    from fuseopt.codegen import wrapper
    from fuseopt.passes.pipeline import optimize

    stage = optimize(graph)
    current = getattr(options.tuning, name)
    rows: dict[str, dict[str, Any]] = {}
    for v in [current, *(v for v in values if v != current)]:
        tuning = dataclasses.replace(options.target.tuning, **{name: v})
        o = dataclasses.replace(options, target=dataclasses.replace(options.target, tuning=tuning))
        src = wrapper.build_module(stage.graph, stage.plan, o)
        row = rows.setdefault(
            src, {"launch": None, "chosen": v == current, "source": src, "constant": name, "values": []}
        )
        row["values"].append(v)
    return list(rows.values())


def parse_constant(text: str) -> tuple[str, list[int]]:
    """`NAME=V1,V2,...` of --constant: a tuned constant of `Tuning` and integer values."""
    import dataclasses

    from fuseopt.targets.base import Tuning

    name, sep, values = text.partition("=")
    known = [f.name for f in dataclasses.fields(Tuning)]
    if not sep or name not in known:
        raise ValueError(f"--constant: expected NAME=V1,V2,... with NAME one of {', '.join(known)}")
    try:
        parsed = [int(v) for v in values.split(",") if v]
    except ValueError:
        raise ValueError(f"--constant {name}: values must be integers, got {values!r}") from None
    if not parsed:
        raise ValueError(f"--constant {name}: no values")
    return name, parsed


def wider(graph: Any, launch: Any, options: Any) -> list[tuple[Any, dict[Any, Any]]]:
    """Row tiles (persistent and looped) of the most warps on twice as many, up to 16: outside
    the target's `max_warps`, where torch.compile's rows contiguous along r go (2048 points on 16
    warps), so that a run can tell whether the bound costs time."""
    import dataclasses

    from fuseopt.codegen import choice
    from fuseopt.codegen.strategies import LoopedRow, PersistentRow

    most = options.tuning.max_warps
    out = []
    for tiling, carry in choice.candidates(graph, launch, options):
        if isinstance(tiling.strategy, LoopedRow | PersistentRow) and tiling.config.num_warps == most < 16:
            config = dataclasses.replace(tiling.config, num_warps=2 * most)
            out.append((dataclasses.replace(tiling, config=config, fallback=None), carry))
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
    from fuseopt.io.load import load_text
    from fuseopt.runtime.module import load_module, run_module

    text, name, sources = job
    graph = load_text(text, f"{name}.json")  # a Graph does not pickle: its document does
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
    ap.add_argument("--graph", action="append", default=[], help="a graph file to time instead (repeatable)")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument(
        "--small", action="store_true", help="tiny sizes on the CPU (TRITON_INTERPRET=1): checks only"
    )
    ap.add_argument("--constant", default="", help="NAME=V1,V2,...: a tuned constant's values instead")
    args = ap.parse_args()
    try:
        constant = parse_constant(args.constant) if args.constant else None
    except ValueError as exc:
        ap.error(str(exc))
    run(
        [n for n in args.only.split(",") if n],
        graphs=args.graph,
        small=args.small,
        jobs=args.jobs,
        out=args.out
        or os.path.join(ROOT, "benchmarks", "results", f"strategies-{datetime.date.today()}-h200.json"),
        constant=constant,
    )


def run(
    only: list[str],
    *,
    small: bool,
    jobs: int,
    out: str,
    graphs: Sequence[str] = (),
    constant: tuple[str, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """Every variant of every workload (with `constant`, every value of that tuned constant)
    checked against the reference interpreter, then timed on the GPU (on the CPU with `small`:
    checked only); the results document, also written to `out` after each workload."""
    if small:
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from fuseopt.bench.harness import copy_bandwidth_gbps, gpu_timer
    from fuseopt.codegen.options import CodegenOptions
    from fuseopt.interp import make_inputs, run_graph
    from fuseopt.ir.serialize import graph_to_dict
    from fuseopt.runtime.compare import check_outputs
    from fuseopt.runtime.module import load_module, run_module
    from fuseopt.targets import DEFAULT, from_properties

    dev = torch.device("cpu" if small else "cuda")
    target = DEFAULT if small else from_properties(torch.cuda.get_device_properties(dev))
    options = CodegenOptions(target=target)
    t0 = time.perf_counter()
    made = {name: capture(kind, name, small) for kind, name in workloads(only, graphs)}
    per = {
        name: variants(graph, options) if constant is None else constant_variants(graph, options, *constant)
        for name, graph in made.items()
    }
    print(f"{sum(map(len, per.values()))} variants in {time.perf_counter() - t0:.0f} s", flush=True)
    if not small:
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            warm = [
                (json.dumps(graph_to_dict(made[n])), n, [v["source"] for v in vs]) for n, vs in per.items()
            ]
            for done in pool.map(_warm, warm):
                print("compiled", done, f"{time.perf_counter() - t0:.0f} s", flush=True)
    timer = None if small else gpu_timer(25, 100, dev)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "date": str(datetime.date.today()),
        "device": "cpu (interpreter)" if small else torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "copy_gbps": None if timer is None else copy_bandwidth_gbps(dev, timer),
        "variants": [],
    }
    if constant is not None:
        doc["constant"] = {"name": constant[0], "target_value": getattr(options.tuning, constant[0])}
    for name, vs in per.items():
        graph = made[name]
        inputs = make_inputs(graph, seed=0)
        expected = run_graph(graph, {k: v.clone() for k, v in inputs.items()})
        on_dev = {k: v.to(dev) for k, v in inputs.items()}
        for v in vs:
            row = {k: v[k] for k in v if k != "source"} | {"workload": name}
            try:
                module = load_module(v["source"])
                got = run_module(module, {k: t.clone() for k, t in on_dev.items()}, poison=True)
                bad = [
                    c
                    for c in check_outputs(graph, {k: t.cpu() for k, t in got.items()}, expected)
                    if not c.ok
                ]
                if bad:
                    raise AssertionError("; ".join(c.message() for c in bad))
                row["ok"] = True
                if timer is not None:
                    row["ms"] = timer.timing(lambda m=module, i=on_dev: m.call(i)).ms
            except Exception as exc:
                row["ok"], row["error"] = False, f"{type(exc).__name__}: {exc}"[:500]
            doc["variants"].append(row)
        mine = [r for r in doc["variants"] if r["workload"] == name]
        print(name, [(r.get("strategy") or r.get("values"), r.get("ms"), r["ok"]) for r in mine], flush=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
    return doc


if __name__ == "__main__":
    main()
