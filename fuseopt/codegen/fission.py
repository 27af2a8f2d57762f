"""Loop fission: a looped reduction kernel whose r loops follow one another (a value of a later
loop needs a reduction an earlier one finishes: a BatchNorm's mean, then its variance, then the
normalized output) run as one launch a loop instead, where the cost model says that is faster.

A looped kernel runs one program per x tile, so a kernel of few rows (64 channels of a BatchNorm
in training) leaves most multiprocessors idle, while a launch of one loop alone can be a split
reduction (`strategies.split`): its chunks fill the GPU. Each loop's launch holds the reductions
of that loop (`loop_phases.phases`), the epilogues that follow it, and the pointwise values they
need, recomputed where an earlier loop computed them too (as the fused kernel's later loops do);
a loop of pointwise values alone (the normalized output) becomes a pointwise launch over every
point. A reduction's or an epilogue's result that a later launch reads is stored by the launch
that computes it, in a buffer the wrapper allocates for the group (a value a row, a few bytes).
Online sums (`loop_phases.online_sums`) do not apply across launches: each loop reads its data
once, so fission moves more bytes than the fused kernel and wins only on parallelism; the cost
model (`codegen.cost`) weighs both."""

from __future__ import annotations

from dataclasses import replace

from fuseopt.codegen.cost import estimate
from fuseopt.codegen.loop_phases import phases
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import Axis, ComputeLaunch, Placement, pointwise_segments
from fuseopt.codegen.strategies import LoopedRow, SplitPartial
from fuseopt.codegen.tile_shapes import choose_tiling, finish_tiling
from fuseopt.codegen.tiling import Tiling
from fuseopt.ir.graph import Graph


def loops_apart(launch: ComputeLaunch) -> tuple[ComputeLaunch, ...] | None:
    """The launch's r loops as launches of their own, in order (None: one loop, or a loop that
    would be left with epilogues and no reduction).

    Each node has a home, the launch of its own loop (an epilogue: of the loop it follows);
    that launch stores what the fused launch stored of it, and what a later launch reads of it.
    A pointwise value of the loop a later launch needs is computed there again, not stored."""
    if launch.kind != "reduction":
        return None
    phase, post = phases(launch, {})
    loops = max(phase.values(), default=0) + 1
    if loops < 2:
        return None
    home = {**phase, **post}
    produced = launch.producer()
    placed = {p.node.name: p for p in launch.placements}
    members: list[dict[str, None]] = [{} for _ in range(loops)]

    def need(k: int, p: Placement) -> None:
        if p.node.name in members[k]:
            return
        for b in p.node.read_buffers():
            d = produced.get(b)
            if d is not None and (d.role == "inner" or home[d.node.name] == k):
                need(k, d)
        members[k][p.node.name] = None

    stored = set(launch.stores)
    for p in launch.placements:
        k = home[p.node.name]
        if p.role != "inner" or p.node.output in stored:
            need(k, p)
    # what a launch reads from a node another launch computes (not inner: those are recomputed)
    across = {
        b
        for k in range(loops)
        for n in members[k]
        for b in placed[n].node.read_buffers()
        if b in produced and home[produced[b].node.name] != k and produced[b].role != "inner"
    }
    parts: list[ComputeLaunch] = []
    for k in range(loops):
        ps = tuple(p for p in launch.placements if p.node.name in members[k])
        stores = tuple(
            p.node.output
            for p in ps
            if home[p.node.name] == k and (p.node.output in stored or p.node.output in across)
        )
        roles = {p.role for p in ps}
        if not stores or ("epilogue" in roles and "reduction" not in roles):
            return None
        if "reduction" in roles:
            parts.append(ComputeLaunch(launch.plan_kernel, "reduction", ps, launch.axes, stores))
            continue
        x = Axis("x", launch.axes[0].numel * launch.axes[1].numel)
        flat = tuple(Placement(p.node, "pointwise", pointwise_segments(p.node, x, None)) for p in ps)
        parts.append(ComputeLaunch(launch.plan_kernel, "pointwise", flat, (x,), stores))
    return tuple(parts)


def fission(
    graph: Graph, launch: ComputeLaunch, fused: Tiling, options: CodegenOptions
) -> tuple[Tiling, ...] | None:
    """The tilings of the launch's loops apart (a split's two kernels each), where the fused
    launch is a looped reduction, some loop apart takes a split, and the cost model estimates
    the launches apart faster than the fused one by `fission_min_gain_pct` percent (it
    underestimates a chain of launches: estimated gains below 2x ran 0.82-1.16x on an H100);
    `options.fission`: True, wherever the loops come apart; False, never. None otherwise."""
    if options.fission is False or not isinstance(fused.strategy, LoopedRow) or options.strategy is not None:
        return None
    parts = loops_apart(launch)
    if parts is None:
        return None
    tilings = [choose_tiling(graph, part, options) for part in parts]
    if options.fission is None:
        if not any(isinstance(t.strategy, SplitPartial) for t in tilings):
            return None  # as few programs apart as fused: only more bytes
        apart = sum(estimate(graph, t, options).us for t in tilings)
        together = estimate(graph, fused, options).us
        if apart * (1 + options.tuning.fission_min_gain_pct / 100) > together:
            return None  # the model's resolution for a chain of launches: the fused one moves fewer bytes
        # the first kernel's header (and launches.json) says why
        tilings[0] = replace(tilings[0], fission=(round(apart, 3), round(together, 3)))
    out: list[Tiling] = []
    for t in tilings:
        out.extend((t, finish_tiling(t, options)) if isinstance(t.strategy, SplitPartial) else (t,))
    return tuple(out)
