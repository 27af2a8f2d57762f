"""What each launch of the generated module runs, for machines: `launches.json` (format
`fuseopt-launches/1`, schema `schemas/launches.schema.json`), written by `fuseopt optimize -o DIR`
beside kernels.py.

Per launch of the schedule, in `call`'s order: the plan kernel and its nodes; for a library call
its op; for generated code each Triton kernel (a split reduction has two) with its strategy and
the strategy's own fields, its launch (blocks, warps, programs of a cluster, the fallback where
clusters are missing, the grid), the autotune candidates, masked axes, index width, and the cost
model's estimate with the terms behind it (`codegen.cost.Estimate`); and the strategies the cost
model weighed for the launch. The same facts as the comments above each kernel in kernels.py,
from the same tilings (`codegen.wrapper.launch_tilings`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from fuseopt.codegen.cost import estimate
from fuseopt.codegen.emitter import kernel_name
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import SplitFinish, SplitPartial, Strategy
from fuseopt.codegen.tiling import Tiling
from fuseopt.codegen.wrapper import LaunchTilings, build_module, launch_tilings
from fuseopt.ir.graph import Graph
from fuseopt.plan import Plan

FORMAT = "fuseopt-launches/1"


def launches_json(
    graph: Graph, plan: Plan, options: CodegenOptions, tilings: Sequence[LaunchTilings] | None = None
) -> dict[str, Any]:
    """The document; `tilings`: `launch_tilings` of the plan's schedule where already made (the
    module was generated from them), else made here."""
    schedule = build_schedule(graph, plan)
    made = launch_tilings(graph, schedule, options) if tilings is None else tilings
    rows: list[dict[str, Any]] = []
    position = 0  # kernels so far: a kernel's name ends with its position in the module
    for launch, (tilings_of, _) in zip(schedule.launches, made, strict=True):
        if not isinstance(launch, ComputeLaunch):
            node = launch.node
            rows.append(
                {"plan_kernel": launch.plan_kernel, "kind": "library", "nodes": [node.name], "op": node.op}
            )
            continue
        kernels = []
        for tiling in tilings_of:
            kernels.append(_kernel(graph, tiling, kernel_name(tiling, position), options))
            position += 1
        weighed = tilings_of[0].weighed if tilings_of else ()
        apart = tilings_of[0].fission if tilings_of else None
        rows.append(
            {
                "plan_kernel": launch.plan_kernel,
                "kind": launch.kind,
                "nodes": [p.node.name for p in launch.placements],
                "stores": list(launch.stores),
                "epilogue_of": launch.epilogue_of,
                "kernels": kernels,
                "weighed": [
                    {"strategy": s, "estimated_us": round(us, 3), "taken": t} for s, us, t in weighed
                ],
                "fission": None if apart is None else {"apart_us": apart[0], "fused_us": apart[1]},
            }
        )
    return {
        "format": FORMAT,
        "graph": graph.name,
        "target": options.target.name,
        "multiprocessors": options.gpu.multiprocessors,
        "autotune": options.autotune,
        "strategy": options.strategy,
        "launches": rows,
    }


def module_and_launches(graph: Graph, plan: Plan, options: CodegenOptions) -> tuple[str, dict[str, Any]]:
    """kernels.py's source and its launches.json document, from one choice of every launch's
    tilings (choosing them is most of the report's cost)."""
    tilings = launch_tilings(graph, build_schedule(graph, plan), options)
    return build_module(graph, plan, options, tilings=tilings), launches_json(graph, plan, options, tilings)


def _strategy_of(s: Strategy) -> str:
    """A variant's strategy as `--strategy` and the kernel headers name it: its module's name
    (`split` for both kernels of a split reduction)."""
    return type(s).__module__.rsplit(".", 1)[-1]


def _kernel(graph: Graph, tiling: Tiling, name: str, options: CodegenOptions) -> dict[str, Any]:
    s = tiling.strategy
    part = "partial" if isinstance(s, SplitPartial) else "finish" if isinstance(s, SplitFinish) else None
    out: dict[str, Any] = {
        "name": name,
        "strategy": _strategy_of(s),
        "part": part,
        "fields": dataclasses.asdict(s),
        "launch": _config(tiling, tiling.config),
        "fallback": None if tiling.fallback is None else _config(tiling, tiling.fallback),
        "autotune": [_config(tiling, c) for c in tiling.autotune],
        "axes": [{"name": a.name, "numel": a.numel} for a in tiling.launch.axes],
        "masked": list(tiling.masked),
        "index_dtype": tiling.index_dtype.value,
    }
    # A split's estimate covers both of its kernels; it is given once, on the first.
    out["estimate"] = None if part == "finish" else estimate(graph, tiling, options).to_json()
    return out


def _config(tiling: Tiling, c: LaunchConfig) -> dict[str, Any]:
    return {
        "blocks": dict(c.blocks),
        "num_warps": c.num_warps,
        "num_ctas": c.num_ctas,
        "grid": list(tiling.grid(c)),
    }
