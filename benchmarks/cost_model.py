"""The cost model (fuseopt/codegen/cost.py) against kernels timed on an H200, on the CPU.

    python benchmarks/cost_model.py [-o benchmarks/results/cost-<date>.json] [--registers]

Pairs: two ways to generate one workload's kernel that an earlier GPU run timed side by side,
read from the results files that hold them (split against looped reductions, persistent against
looped rows, a looped tile's bytes in flight). Each is captured at the measured size and
generated both ways under the H200 target; the model estimates both. A pair counts when the
measured times differ by more than `TIE` (5%); each says whether fuseopt now generates the faster
shape (`chosen_is_faster`) and how the model orders the two (`model`). `tuned_on` marks the pairs
a rule or a cost constant was set from; the others check them.

It then estimates every launch the pointwise results file swept within one 1D tile (`sweeps`):
how well the model ranks launch parameters, which it does not choose.

It then estimates again every variant of a strategies file (`benchmarks/strategies.py`, the
newest by default; `--strategies FILE`) and checks the model against the times measured there:
where the strategies of a launch differ by more than `TIE`, whether the one it takes is the
fastest; per launch, how it ranks the launch candidates.

--registers also compiles each launch candidate of the suite and the six (`codegen.choice.
candidates`) for sm_90 with Triton's ptxas, on the CPU (no GPU), and compares the registers a
thread it allocates with the model's estimate (`cost.registers_of`).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import sys
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FORMAT = "fuseopt-cost-model/1"
TIE = 0.05
RESULTS = os.path.join(ROOT, "benchmarks", "results")


@dataclasses.dataclass(frozen=True)
class Pair:
    name: str
    file: str  # under benchmarks/results/
    times: tuple[str, str]  # keys of the two variants' times in the file's table for `name`
    table: str  # the file's table of times by workload
    workload: Callable[[], Any]  # () -> (fn, args)
    variants: tuple[dict[str, Any], dict[str, Any]]  # CodegenOptions fields, Tuning fields under "tuning"
    tuned_on: bool


def pairs() -> list[Pair]:
    import torch

    import tests.fixtures.suite as s

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16

    def w(fn: Callable[..., Any], make: Callable[..., Any], **sizes: int) -> Callable[[], Any]:
        return lambda: (fn, make(**sizes))

    def lse(x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x, dim=-1)

    split, looped, persistent = (
        {"strategy": "split"},
        {"strategy": "looped_row"},
        {"strategy": "persistent_row"},
    )
    out = []
    split_file = "rules-2026-12-02-split-h200.json"
    for name, fn, make, sizes, tuned in (
        ("colsum_bf16_odd", s.col_sum, s._rows(bf16), (6000, 5001), True),
        ("tsq_f32_odd", s.sq_sum, s._rows_t(f32), (5000, 3000), True),
        ("rowsum_128x200000_f32", s.row_sum, s._rows(f32), (128, 200000), False),
        ("rowsum_64x5000_f32", s.row_sum, s._rows(f32), (64, 5000), True),
        ("rowsum_1000x30001_bf16", s.row_sum, s._rows(bf16), (1000, 30001), False),
        ("colsum_30001x1000_f32", s.col_sum, s._rows(f32), (30001, 1000), False),
        ("rowmax_256x99999_f16", s.row_max, s._rows(f16), (256, 99999), False),
        ("rownorm_2048x9999_f32", s.l2norm, s._rows(f32), (2048, 9999), False),
    ):
        rows, cols = sizes
        out.append(
            Pair(
                name,
                split_file,
                ("split", "looped"),
                "us",
                w(fn, make, rows=rows, cols=cols),
                (split, looped),
                tuned,
            )
        )
    rules = "rules-2026-12-02-h200.json"  # base: persistent rows up to 1024 points; p4096: up to 4096
    for name, fn, make, sizes in (
        ("sum_f32", s.row_sum, s._rows(f32), (8192, 4096)),
        ("mean_bf16", s.row_mean, s._rows(bf16), (16384, 4096)),
        ("max_f16_odd", s.row_max, s._rows(f16), (7777, 3333)),
        ("rms_bf16", s.rmsnorm, s._norm(bf16, bias=False), (8192, 4096)),
        ("sm_f16", s.softmax_row, s._rows(f16), (8192, 2048)),
        ("colsum_f32", s.col_sum, s._rows(f32), (4096, 8192)),
    ):
        rows, cols = sizes
        small = {"tuning": {"persistent_rnumel": 1024, "persistent_aligned_rnumel": 1024}}
        big = {
            "tuning": {
                "persistent_rnumel": 4096,
                "persistent_aligned_rnumel": 4096,
                "persistent_outer_rnumel": 4096,
            },
            **persistent,
        }
        out.append(
            Pair(name, rules, ("p4096", "base"), "us", w(fn, make, rows=rows, cols=cols), (big, small), True)
        )
    looped_file = "rules-2026-12-02-looped-h200.json"  # a looped tile's bytes in flight, off and on
    for name, fn, make, sizes, tuned in (
        ("lsm_vocab", s.log_softmax_row, s._rows(bf16), (512, 50257), True),
        ("lsm_32000_f16", s.log_softmax_row, s._rows(f16), (1024, 32000), False),
        ("sm_128256_bf16", s.softmax_row, s._rows(bf16), (256, 128256), False),
        ("rowsum_200k_f32", s.row_sum, s._rows(f32), (128, 200000), False),
        ("ce_like_f32", lse, s._rows(f32), (2048, 50257), False),
    ):
        rows, cols = sizes
        off = {"tuning": {"looped_bytes_in_flight": 0}, **looped}
        out.append(
            Pair(
                name,
                looped_file,
                ("off", "bif32k"),
                "us",
                w(fn, make, rows=rows, cols=cols),
                (off, looped),
                tuned,
            )
        )
    return out


def options_of(variant: dict[str, Any]) -> Any:
    from fuseopt.codegen.options import CodegenOptions
    from fuseopt.targets import H200

    fields = {k: v for k, v in variant.items() if k != "tuning"}
    target = dataclasses.replace(H200, tuning=dataclasses.replace(H200.tuning, **variant.get("tuning", {})))
    return CodegenOptions(target=target, split_programs=None, **fields)


def estimate_pair(pair: Pair) -> dict[str, Any]:
    from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
    from fuseopt.passes.pipeline import optimize
    from tests.fixtures.programs import captured_fn

    fn, args = pair.workload()
    graph = captured_fn(fn, args, name=pair.name)[0]
    stage = optimize(graph)
    launches = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    with open(os.path.join(RESULTS, pair.file), encoding="utf-8") as f:
        measured = json.load(f)[pair.table][pair.name]
    row: dict[str, Any] = {"pair": pair.name, "file": pair.file, "tuned_on": pair.tuned_on, "variants": []}
    for key, variant in zip(pair.times, pair.variants, strict=True):
        row["variants"].append(
            {"name": key, "measured_us": measured[key], **_estimated(stage, launches, options_of(variant))}
        )
    default = _estimated(stage, launches, options_of({}))
    a, b = row["variants"]
    fast, slow = (a, b) if a["measured_us"] < b["measured_us"] else (b, a)
    tie = 1 + options_of({}).tuning.cost_tie_pct / 100
    row["measured_differ"] = slow["measured_us"] > (1 + TIE) * fast["measured_us"]
    row["same_kernels"] = a["kernels"] == b["kernels"]
    if row["same_kernels"]:
        row["model"] = "same kernels now"
    elif slow["estimated_us"] > tie * fast["estimated_us"]:
        row["model"] = "orders them as measured"
    elif fast["estimated_us"] > tie * slow["estimated_us"]:
        row["model"] = "orders them the other way"
    else:
        row["model"] = "level (within the tie: the table order or the launch rule decides)"
    row["chosen"] = next(
        (v["name"] for v in (a, b) if v["kernels"] == default["kernels"] and not row["same_kernels"]),
        "+".join(k["strategy"] for k in default["kernels"]),
    )
    # None: fuseopt now generates neither (another strategy; its own pair may have timed it)
    chosen_one = row["chosen"] in (a["name"], b["name"]) or row["same_kernels"]
    row["chosen_is_faster"] = (row["chosen"] == fast["name"] or row["same_kernels"]) if chosen_one else None
    return row


def _estimated(stage: Any, launches: list[Any], opts: Any) -> dict[str, Any]:
    from fuseopt.codegen.choice import choose
    from fuseopt.codegen.cost import estimate

    us = 0.0
    kernels = []
    for la in launches:
        tiling, _ = choose(stage.graph, la, opts)
        e = estimate(stage.graph, tiling, opts)
        us += e.us
        kernels.append(
            {
                "strategy": type(tiling.strategy).__name__,
                **dict(tiling.config.blocks),
                "num_warps": tiling.config.num_warps,
                **e.to_json(),
            }
        )
    return {"estimated_us": round(us, 2), "kernels": kernels}


def sweeps() -> list[dict[str, Any]]:
    """Launch parameters within one strategy: the 1D pointwise tiles the pointwise results file
    swept (XBLOCK / num_warps on four suite kernels), each estimated. The model does not choose
    these (the rules of `launch_configs.py` do); this says how far it could: the rank correlation
    of its estimates with the times, and the measured time of the launch it would pick."""
    from fuseopt.codegen.cost import estimate
    from fuseopt.codegen.options import CodegenOptions, LaunchConfig
    from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
    from fuseopt.codegen.strategies import tile_1d
    from fuseopt.codegen.tile_shapes import tiling_of
    from fuseopt.passes.pipeline import optimize
    from tests.fixtures.suite import captured

    with open(os.path.join(RESULTS, "rules-2026-12-02-pointwise-h200.json"), encoding="utf-8") as f:
        sweep = json.load(f)["sweep"]
    options = CodegenOptions()
    out = []
    for name, times in sweep.items():
        stage = optimize(captured(name)[0])
        (launch,) = [
            la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
        ]
        planned = tile_1d.applies(stage.graph, launch, options)
        assert planned is not None
        rows = []
        for key, us in times.items():
            if "/" not in key:
                continue  # torch.compile's
            xb, warps = map(int, key.split("/"))
            config = LaunchConfig((("XBLOCK", xb),), warps)
            tiling = tiling_of(
                stage.graph, dataclasses.replace(planned, config=config, candidates=(config,)), options
            )
            rows.append(
                {
                    "launch": key,
                    "measured_us": us,
                    "estimated_us": round(estimate(stage.graph, tiling, options).us, 2),
                }
            )
        picked = min(rows, key=lambda r: r["estimated_us"])
        best = min(r["measured_us"] for r in rows)
        out.append(
            {
                "workload": name,
                "rank_correlation": round(
                    _spearman([r["estimated_us"] for r in rows], [r["measured_us"] for r in rows]), 2
                ),
                "model_pick": picked["launch"],
                "model_pick_measured_us": picked["measured_us"],
                "measured_best_us": best,
                "launches": rows,
            }
        )
    return out


def strategies_check(path: str) -> dict[str, Any]:
    """The model now against every variant a strategies file (`benchmarks/strategies.py`) timed:
    each variant regenerated and estimated again, so that a change to the model is checked on
    the CPU against measured kernels. Per launch with more than one strategy: the strategy the
    model takes (`choice.choose`) against the fastest strategy at its default launch, counted
    where the two differ by more than `TIE`; per launch, the rank correlation of all its
    variants' estimates with their times, and the time of the variant the model would pick."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import strategies as sweep  # type: ignore[import-not-found]

    from fuseopt.codegen.options import CodegenOptions

    with open(path, encoding="utf-8") as f:
        measured = json.load(f)["variants"]
    key = ("workload", "launch", "strategy", "blocks", "num_warps", "num_ctas")
    times = {
        tuple(json.dumps(v.get(k), sort_keys=True) for k in key): v["ms"] * 1e3
        for v in measured
        if v.get("ms")
    }
    options = CodegenOptions()
    rows: list[dict[str, Any]] = []
    names = sorted({v["workload"] for v in measured})  # the suite's and the six's it timed
    for kind, name in sweep.workloads(names) if names else []:
        variants = sweep.variants(sweep.capture(kind, name), options)
        by_launch: dict[int, list[dict[str, Any]]] = {}
        for v in variants[1:]:
            k = tuple(json.dumps(({"workload": name} | v).get(f), sort_keys=True) for f in key)
            if k in times:
                by_launch.setdefault(v["launch"], []).append(v | {"us": times[k]})
        for launch, vs in by_launch.items():
            default: dict[str, dict[str, Any]] = {}
            for v in vs:  # each strategy's first variant is its default launch
                default.setdefault(v["strategy"], v)
            chosen = next((v["strategy"] for v in vs if v["chosen"]), None)
            fastest = min(default.values(), key=lambda v: v["us"])
            times_of = sorted(v["us"] for v in default.values())
            picked = min(vs, key=lambda v: v["estimated_us"])
            rows.append(
                {
                    "workload": name,
                    "launch": launch,
                    "strategies": {s: round(v["us"], 1) for s, v in default.items()},
                    "estimated": {s: round(v["estimated_us"], 1) for s, v in default.items()},
                    "chosen": chosen,
                    "fastest": fastest["strategy"],
                    "differ": len(times_of) > 1 and times_of[1] > times_of[0] * (1 + TIE),
                    "rank_correlation": round(
                        _spearman([v["estimated_us"] for v in vs], [v["us"] for v in vs]), 2
                    ),
                    "model_pick_us": round(picked["us"], 1),
                    "best_us": round(min(v["us"] for v in vs), 1),
                }
            )
    weighed = [r for r in rows if len(r["strategies"]) > 1 and r["differ"]]
    return {
        "file": os.path.relpath(path, ROOT),
        "launches": len(rows),
        "strategies_differ": len(weighed),
        "chosen_is_fastest": sum(r["chosen"] == r["fastest"] for r in weighed),
        "rows": rows,
    }


def _spearman(a: list[float], b: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):  # ties share their mean rank
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else 0.0


def registers() -> dict[str, Any]:
    """ptxas's registers a thread (sm_90, Triton's compiler on the CPU) of every launch candidate
    of the suite and the six, beside `cost.registers_of`."""
    import re
    import subprocess
    import tempfile

    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from benchmarks.strategies import capture, workloads
    from fuseopt.codegen import choice, wrapper
    from fuseopt.codegen.cost import registers_of
    from fuseopt.codegen.options import CodegenOptions
    from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
    from fuseopt.interp import make_inputs
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import load_module

    types = {torch.float32: "*fp32", torch.float16: "*fp16", torch.bfloat16: "*bf16", torch.int64: "*i64"}
    types |= {
        torch.int32: "*i32",
        torch.bool: "*i1",
        torch.int8: "*i8",
        torch.uint8: "*u8",
        torch.float64: "*fp64",
    }
    cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    options = CodegenOptions()
    rows = []
    for kind, name in workloads([]):
        stage = optimize(capture(kind, name))
        graph, plan = stage.graph, stage.plan
        inputs = make_inputs(graph, seed=0)
        for index, launch in enumerate(build_schedule(graph, plan).launches):
            if not (isinstance(launch, ComputeLaunch) and launch.stores):
                continue
            for tiling, carry in choice.candidates(graph, launch, options):
                module = load_module(
                    wrapper.build_module(graph, plan, options, forced={index: (tiling, carry)})
                )
                calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []
                for attr in dir(module):  # record the launches instead of running them
                    fn = getattr(module, attr)
                    if attr.startswith("triton_") and isinstance(fn, triton.runtime.jit.JITFunction):
                        setattr(module, attr, _Recorder(fn, calls))
                module.call(inputs)
                fn, args, kw = calls[0]  # the launch's (first) kernel
                kw = dict(kw)
                warps, ctas = kw.pop("num_warps", 4), kw.pop("num_ctas", 1)
                kw.pop("launch_pdl", None)
                values = dict(zip(fn.arg_names, args, strict=False)) | kw
                sig, consts = {}, {}
                for i, arg in enumerate(fn.arg_names):
                    v = values[arg]
                    if (
                        i in fn.constexprs
                        or not isinstance(v, torch.Tensor | int | float)
                        or isinstance(v, bool)
                    ):
                        sig[arg], consts[arg] = "constexpr", v
                    elif isinstance(v, torch.Tensor):
                        sig[arg] = types[v.dtype]
                    else:
                        sig[arg] = "fp32" if isinstance(v, float) else "i64" if abs(v) >= 2**31 else "i32"
                compiled = triton.compile(
                    ASTSource(fn, sig, constexprs=consts),
                    target=GPUTarget("cuda", 90, 32),
                    options={"num_warps": warps, "num_ctas": ctas},
                )
                with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
                    f.write(compiled.asm["cubin"])
                usage = subprocess.run(
                    [cuobjdump, "--dump-resource-usage", f.name], capture_output=True, text=True
                )
                os.unlink(f.name)
                found = re.search(r"REG:(\d+)", usage.stdout)
                spill = re.search(r"LOCAL:(\d+)", usage.stdout)
                rows.append(
                    {
                        "workload": name,
                        "strategy": type(tiling.strategy).__name__,
                        **dict(tiling.config.blocks),
                        "num_warps": warps,
                        "ptxas": int(found.group(1)) if found else None,
                        "local_bytes": int(spill.group(1)) if spill else None,
                        "estimated": registers_of(tiling, options),
                    }
                )
    known = [r for r in rows if r["ptxas"]]
    errors = [r["estimated"] - r["ptxas"] for r in known]
    return {
        "compiler": f"triton {triton.__version__}, sm_90",
        "kernels": len(known),
        "mean_error": round(sum(errors) / len(errors), 1),
        "mean_abs_error": round(sum(map(abs, errors)) / len(errors), 1),
        "spilling": sum(1 for r in known if r["local_bytes"]),
        "rows": rows,
    }


class _Recorder:
    def __init__(self, fn: Any, calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]) -> None:
        self.fn, self.calls = fn, calls

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return lambda *args, **kw: self.calls.append((self.fn, args, kw))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=os.path.join(RESULTS, f"cost-{datetime.date.today()}.json"))
    ap.add_argument("--registers", action="store_true")
    ap.add_argument(
        "--strategies",
        default=os.path.join(RESULTS, "strategies-2026-12-05-h200.json"),
        help="a strategies.py results file to check the model against ('' to skip)",
    )
    args = ap.parse_args()
    rows = [estimate_pair(p) for p in pairs()]
    counted = [r for r in rows if r["measured_differ"]]
    summary = {
        "pairs": len(rows),
        "measured_differ": len(counted),
        "chosen_is_one_of_them": sum(r["chosen_is_faster"] is not None for r in counted),
        "chosen_is_faster": sum(r["chosen_is_faster"] is True for r in counted),
        "not_tuned_on": sum(1 for r in counted if not r["tuned_on"] and r["chosen_is_faster"] is not None),
        "chosen_is_faster_not_tuned_on": sum(
            r["chosen_is_faster"] is True for r in counted if not r["tuned_on"]
        ),
        "model": {m: sum(r["model"] == m for r in counted) for m in sorted({r["model"] for r in rows})},
    }
    doc: dict[str, Any] = {
        "format": FORMAT,
        "date": str(datetime.date.today()),
        "tie": TIE,
        "summary": summary,
        "pairs": rows,
    }
    doc["sweeps"] = sweeps()
    if args.strategies:
        doc["strategies"] = strategies_check(args.strategies)
    if args.registers:
        doc["registers"] = registers()
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    for r in rows:
        a, b = r["variants"]
        print(
            f"{r['pair']:24s} {a['name']:>7s} {a['measured_us']:7.1f} est {a['estimated_us']:7.1f} | "
            f"{b['name']:>7s} {b['measured_us']:7.1f} est {b['estimated_us']:7.1f} | chosen {r['chosen']:>7s}"
            f"{'' if r['measured_differ'] else ' (measured level)'}: {r['model']}"
            f"{'' if r['tuned_on'] else ' [not tuned on]'}"
        )
    print(json.dumps(summary))
    if args.strategies:
        st = doc["strategies"]
        print(
            f"{st['file']}: {st['launches']} launches; where strategies differ by more than {TIE:.0%}: "
            f"the model takes the fastest in {st['chosen_is_fastest']} of {st['strategies_differ']}"
        )
        for r in st["rows"]:
            if r["differ"] and r["chosen"] != r["fastest"]:
                print(f"  {r['workload']}: takes {r['chosen']}, fastest {r['fastest']} {r['strategies']}")
    for sw in doc["sweeps"]:
        print(
            f"{sw['workload']}: rank correlation {sw['rank_correlation']}, the model's pick "
            f"{sw['model_pick']} {sw['model_pick_measured_us']} us, the best {sw['measured_best_us']}"
        )


if __name__ == "__main__":
    main()
