"""The pass pipeline: an ordered tuple of named passes run by one driver.

`optimize(graph, options)` runs fusion (with the loop-order pass as its reorder hook) and then the
post-fusion passes, and returns the transformed graph and the plan. `verify` can run after each
pass (`--verify`, and always in tests). The caller's own work on the result (`finish`: the CLI's
check and plan JSON) is part of the run: at the size cap, while a forked child makes the natural
plan, the fusion pass runs the rest of the pipeline and `finish` on the packed plan, and the
result is kept when that plan is (`_fusion`). The unfused plan is made on first use (`Baseline`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from fuseopt.analysis.metrics import AccessTable
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.ir.serialize import graph_sha256
from fuseopt.passes.fusion import FusionResult, fuse
from fuseopt.passes.loop_order import LoopOrder, merge_loops, normalize_loops
from fuseopt.passes.loop_transform import simplify_graph
from fuseopt.passes.options import Options
from fuseopt.plan import Kernel, Plan, Reorder
from fuseopt.util import gc_paused


class Baseline:
    """The unfused plan of the graph as loaded (every node its own kernel): its content hash,
    kernels and metrics, made on first use. At the size cap the fusion pass asks for it while a
    forked child makes the natural plan (`fuse(meanwhile=...)`), where it costs no wall time;
    otherwise the first plan built from it does."""

    def __init__(self, graph: Graph, table: AccessTable) -> None:
        self._graph, self._table = graph, table
        self._plan: Plan | None = None

    def plan(self) -> Plan:
        if self._plan is None:
            graph, table = self._graph, self._table
            kernels = tuple(_kernel(graph, table, f"k{i}", (n.name,)) for i, n in enumerate(graph.nodes))
            total = sum(k.bytes for k in kernels)
            metrics = {
                "kernels": len(kernels),
                "bytes": total,
                "unfused_kernels": len(kernels),
                "unfused_bytes": total,
            }
            self._plan = Plan(graph.name, graph_sha256(graph), kernels, metrics=metrics)
        return self._plan


@dataclass(frozen=True)
class Stage:
    """The value threaded through the pipeline: the graph as transformed so far and the plan
    (`planned`; before any pass that plans, the unfused plan with the loop reorders so far)."""

    graph: Graph
    baseline: Baseline = field(compare=False, repr=False)
    planned: Plan | None = None
    reorders: tuple[Reorder, ...] = ()  # loop reorders of the passes before fusion
    fusion: FusionResult | None = field(default=None, compare=False, repr=False)
    source: Graph | None = field(default=None, compare=False, repr=False)  # the graph as loaded
    # Per-node access counts: loop transformations keep them, so one table serves every pass.
    access: AccessTable | None = field(default=None, compare=False, repr=False)

    @property
    def plan(self) -> Plan:
        if self.planned is not None:
            return self.planned
        base = self.baseline.plan()
        return dataclasses.replace(base, reorders=self.reorders) if self.reorders else base

    @property
    def plan_source(self) -> Graph:
        return self.source if self.source is not None else self.graph

    def table(self) -> AccessTable:
        return self.access if self.access is not None else AccessTable(self.plan_source)


Pass = Callable[[Stage, Options], Stage]


def normalize_pass(stage: Stage, opts: Options) -> Stage:
    """Before fusion: each node's loops in its store's stride order (part of loop-order unification)."""
    if not opts.loop_order:
        return stage
    graph, records = normalize_loops(stage.graph)
    if not records:
        return stage
    if opts.scoring == "stable":  # by node, not by list position
        records = sorted(records, key=lambda r: r.node)
    if stage.planned is not None:
        plan = dataclasses.replace(stage.planned, reorders=(*stage.planned.reorders, *records))
        return dataclasses.replace(stage, graph=graph, planned=plan)
    return dataclasses.replace(stage, graph=graph, reorders=(*stage.reorders, *records))


def fusion_pass(stage: Stage, opts: Options) -> Stage:
    """Fusion, with the loop-order pass as its reorder hook (unless --no-loop-order)."""
    fused, _ = _fusion(stage, opts, None)
    assert fused is not None
    return fused


def _fusion(
    stage: Stage, opts: Options, then: Callable[[Stage], Stage] | None
) -> tuple[Stage | None, Stage | None]:
    """The fusion pass's stage, or (None, `then` of it) where `then` already ran on it: at the size
    cap, while a forked child plans, this process makes the unfused plan (the hash above all) and
    runs `then` (the rest of the pipeline) on the plan it expects to keep; the result is reused
    when that plan is kept, and dropped otherwise."""
    before = stage.planned.reorders if stage.planned is not None else stage.reorders
    speculated: list[tuple[FusionResult, Stage]] = []

    def meanwhile(result: FusionResult) -> None:
        stage.baseline.plan()
        if then is not None:
            speculated.append((result, then(_fused(stage, result, before, opts))))

    result = fuse(stage.graph, opts, LoopOrder() if opts.loop_order else None, meanwhile=meanwhile)
    if speculated and speculated[0][0] is result:
        return None, speculated[0][1]
    return _fused(stage, result, before, opts), None


def _fused(stage: Stage, result: FusionResult, before: tuple[Reorder, ...], opts: Options) -> Stage:
    result = dataclasses.replace(result, reorders=(*before, *result.reorders))
    return dataclasses.replace(
        stage, graph=result.graph, planned=build_plan(stage, result, opts), fusion=result
    )


def merge_pass(stage: Stage, opts: Options) -> Stage:
    """After fusion: merge chaining loops so indices flatten (part of loop-order unification)."""
    if not opts.loop_order or stage.fusion is None:
        return stage
    groups = tuple(k.nodes for k in stage.plan.kernels)
    graph, merges = merge_loops(stage.graph, groups)
    if not merges:
        return stage
    fusion = dataclasses.replace(stage.fusion, graph=graph, reorders=(*stage.fusion.reorders, *merges))
    return dataclasses.replace(stage, graph=graph, planned=build_plan(stage, fusion, opts), fusion=fusion)


PIPELINE: tuple[tuple[str, Pass], ...] = (
    ("normalize_loops", normalize_pass),
    ("fusion", fusion_pass),
    ("merge_loops", merge_pass),
)


def build_plan(stage: Stage, result: FusionResult, opts: Options) -> Plan:
    """The plan of a fusion result; hash and unfused metrics come from the stage's unfused plan."""
    graph = result.graph
    table = stage.table()
    base = stage.baseline.plan()
    kernels = tuple(_kernel(graph, table, f"k{i}", members) for i, members in enumerate(result.groups))
    metrics = {
        "kernels": len(kernels),
        "bytes": sum(k.bytes for k in kernels),
        "unfused_kernels": base.metrics["unfused_kernels"],
        "unfused_bytes": base.metrics["unfused_bytes"],
    }
    return Plan(
        graph=base.graph,
        graph_sha256=base.graph_sha256,
        kernels=kernels,
        reorders=result.reorders,
        decisions=result.decisions,
        rejected=result.rejected,
        metrics=metrics,
        options=opts.to_json(),
    )


def _kernel(graph: Graph, table: AccessTable, name: str, members: tuple[str, ...]) -> Kernel:
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
    return Kernel(name, members, kind, loops, reduce, table.kernel_bytes(members))


def initial_stage(graph: Graph) -> Stage:
    """Every node its own kernel: the plan before any pass (the unfused baseline, made on first
    use), over the graph with its indices as simple as each node's loop box allows
    (`simplify_graph`: the same addresses, so the same bytes and hash as the graph loaded)."""
    table = AccessTable(graph)
    return Stage(simplify_graph(graph), Baseline(graph, table), source=graph, access=table)


def optimize(
    graph: Graph,
    opts: Options | None = None,
    *,
    passes: tuple[str, ...] | None = None,
    verify_each: bool = False,
    finish: Callable[[Stage], None] | None = None,
) -> Stage:
    """Run the pipeline (all passes, or those named) and return the final stage.

    `finish`: the caller's work on the final stage (checking it, rendering it), called once on
    the stage returned. At the size cap it may also run on a stage that is then dropped: the
    fusion pass runs the rest of the pipeline and `finish` on the plan it expects to keep while
    a forked child makes the other (`_fusion`)."""
    opts = opts or Options()
    selected = tuple((name, fn) for name, fn in PIPELINE if passes is None or name in passes)
    with gc_paused():
        return _run(initial_stage(graph), selected, opts, verify_each, finish)


def _run(
    stage: Stage,
    passes: tuple[tuple[str, Pass], ...],
    opts: Options,
    verify_each: bool,
    finish: Callable[[Stage], None] | None,
) -> Stage:
    """`passes` in order from `stage`, the options recorded, then `finish`."""
    from fuseopt.passes.verify import verify

    for i, (_, fn) in enumerate(passes):
        if fn is fusion_pass:
            return _fusion_then(stage, passes[i + 1 :], opts, verify_each, finish)
        stage = fn(stage, opts)
        if verify_each:
            verify(stage.graph, stage.plan)
    if stage.plan.options != opts.to_json():
        stage = dataclasses.replace(stage, planned=dataclasses.replace(stage.plan, options=opts.to_json()))
    if finish is not None:
        finish(stage)
    return stage


def _fusion_then(
    stage: Stage,
    rest: tuple[tuple[str, Pass], ...],
    opts: Options,
    verify_each: bool,
    finish: Callable[[Stage], None] | None,
) -> Stage:
    """The fusion pass, then `rest` and `finish` (`_run`): on the stage the fusion pass
    returns, unless it already ran them on the plan kept (`_fusion`)."""
    from fuseopt.passes.verify import verify

    def then(fused: Stage) -> Stage:
        if verify_each:
            verify(fused.graph, fused.plan)
        return _run(fused, rest, opts, verify_each, finish)

    fused, final = _fusion(stage, opts, then)
    if final is not None:
        return final
    assert fused is not None
    return then(fused)
