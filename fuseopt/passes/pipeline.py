"""The pass pipeline: an ordered tuple of named passes run by one driver.

`optimize(graph, options)` runs fusion (with the loop-order pass as its reorder hook) and then the
post-fusion passes, and returns the transformed graph and the plan. `verify` can run after each
pass (`--verify`, and always in tests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fuseopt.analysis.metrics import buffer_users, kernel_bytes, unfused_metrics
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.ir.serialize import graph_sha256
from fuseopt.passes.fusion import FusionResult, ReorderHook, fuse
from fuseopt.passes.options import Options
from fuseopt.plan import Kernel, Plan


@dataclass(frozen=True)
class Stage:
    """The value threaded through the pipeline: the graph as transformed so far and the plan."""

    graph: Graph
    plan: Plan
    fusion: FusionResult | None = field(default=None, compare=False, repr=False)


Pass = Callable[[Stage, Options], Stage]


def _reorder_hook() -> ReorderHook | None:
    try:
        from fuseopt.passes.loop_order import try_reorder
    except ImportError:  # the loop-order pass is optional in this build
        return None
    return try_reorder


def fusion_pass(stage: Stage, opts: Options) -> Stage:
    result = fuse(stage.graph, opts, _reorder_hook() if opts.loop_order else None)
    return Stage(result.graph, build_plan(stage.graph, result, opts), result)


PIPELINE: tuple[tuple[str, Pass], ...] = (("fusion", fusion_pass),)


def build_plan(original: Graph, result: FusionResult, opts: Options) -> Plan:
    graph = result.graph
    users = buffer_users(graph)
    kernels = []
    for i, members in enumerate(result.groups):
        kernels.append(_kernel(graph, users, f"k{i}", members))
    unfused_k, unfused_b = unfused_metrics(original)
    metrics = {
        "kernels": len(kernels),
        "bytes": sum(k.bytes for k in kernels),
        "unfused_kernels": unfused_k,
        "unfused_bytes": unfused_b,
    }
    return Plan(
        graph=original.name,
        graph_sha256=graph_sha256(original),
        kernels=tuple(kernels),
        reorders=result.reorders,
        decisions=result.decisions,
        rejected=result.rejected,
        metrics=metrics,
        options=opts.to_json(),
    )


def _kernel(graph: Graph, users: dict[str, list[str]], name: str, members: tuple[str, ...]) -> Kernel:
    nodes = [graph.node(m) for m in members]
    compute = [n for n in nodes if isinstance(n, ComputeNode)]
    reductions = [n for n in compute if n.kind == "reduction"]
    if len(compute) < len(nodes):
        kind = next(n.kind for n in nodes if not isinstance(n, ComputeNode))
        loops: tuple[tuple[str, int], ...] = ()
        reduce: tuple[tuple[str, int], ...] = ()
    else:
        lead = reductions[0] if reductions else compute[0]
        kind = "reduction" if reductions else "pointwise"
        loops = tuple((lv.name, lv.size) for lv in lead.loops)
        reduce = tuple((lv.name, lv.size) for lv in lead.reduce)
    return Kernel(name, members, kind, loops, reduce, kernel_bytes(graph, users, members))


def optimize(
    graph: Graph,
    opts: Options | None = None,
    *,
    passes: tuple[str, ...] | None = None,
    verify_each: bool = False,
) -> Stage:
    """Run the pipeline (all passes, or those named) and return the final stage."""
    from fuseopt.passes.verify import verify

    opts = opts or Options()
    stage = Stage(graph, Plan(graph.name, graph_sha256(graph), ()))
    for name, fn in PIPELINE:
        if passes is not None and name not in passes:
            continue
        stage = fn(stage, opts)
        if verify_each:
            verify(stage.graph, stage.plan)
    return stage
