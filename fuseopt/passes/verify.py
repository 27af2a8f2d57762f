"""The one invariant checker every test (and `--verify`) runs on a plan.

Invariants: every node is in exactly one kernel; the kernel graph is acyclic; each kernel's
iteration space is consistent; every fused read inside a kernel addresses the element its
producer writes at the same point (`access_match.match_read`: the planner's and code
generation's check too).
"""

from __future__ import annotations

from fuseopt.analysis.access_match import match_read, space_of
from fuseopt.analysis.shapes import split_loops
from fuseopt.errors import CheckFailed, Diagnostic
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.plan import Plan


def verify(graph: Graph, plan: Plan) -> None:
    problems = list(check(graph, plan))
    if problems:
        raise CheckFailed([Diagnostic(p, code="verify") for p in problems])


def check(graph: Graph, plan: Plan) -> list[str]:
    out: list[str] = []
    where: dict[str, int] = {}
    for i, k in enumerate(plan.kernels):
        for member in k.nodes:
            if member in where:
                out.append(f"node {member} is in kernels {plan.kernels[where[member]].name} and {k.name}")
            where[member] = i
    for n in graph.nodes:
        if n.name not in where:
            out.append(f"node {n.name} is in no kernel")
    if out:
        return out
    writer = graph.writer()
    # Kernel-level edges must go forward in the plan's kernel order (which makes the kernel graph acyclic).
    for n in graph.nodes:
        for b in n.read_buffers():
            w = writer.get(b)
            if w is not None and where[w] > where[n.name]:
                out.append(
                    f"kernel {plan.kernels[where[w]].name} (writes {b}) runs after its reader "
                    f"{n.name} in {plan.kernels[where[n.name]].name}: the kernel graph has a cycle"
                )
    for k in plan.kernels:
        nodes = [graph.node(m) for m in k.nodes]
        compute = [n for n in nodes if isinstance(n, ComputeNode)]
        if len(compute) != len(nodes):
            lib = [n for n in nodes if not isinstance(n, ComputeNode)]
            if len(lib) > 1 or (compute and lib[0].kind != "template"):
                out.append(f"kernel {k.name} mixes library calls with other nodes")
            continue
        reds = [n for n in compute if n.kind == "reduction"]
        if reds:
            numel, rnumel = reds[0].numel, reds[0].rnumel
            for r in reds:
                if (r.numel, r.rnumel) != (numel, rnumel):
                    out.append(f"kernel {k.name}: reductions of different (numel, rnumel)")
            for p in compute:
                if p.kind == "pointwise" and p.numel not in (numel, numel * rnumel):
                    out.append(
                        f"kernel {k.name}: {p.name} has numel {p.numel}, not {numel} or {numel * rnumel}"
                    )
                if (
                    p.kind == "pointwise"
                    and p.numel == numel * rnumel
                    and rnumel > 1
                    and split_loops([lv.size for lv in p.loops], numel) is None
                ):
                    out.append(f"kernel {k.name}: {p.name}'s loops do not split into ({numel}, {rnumel})")
        elif len({p.numel for p in compute}) > 1:
            out.append(f"kernel {k.name}: pointwise nodes of different numel")
        inside = set(k.nodes)
        space = space_of(compute)
        if space is None:
            continue
        for n in compute:
            for ld in n.reads():
                w = writer.get(ld.buffer)
                if w is None or w not in inside or w == n.name:
                    continue
                producer = graph.node(w)
                assert isinstance(producer, ComputeNode)
                m = match_read(producer, ld, n, space)
                if not m.ok:
                    out.append(f"kernel {k.name}: {m.reason}")
    return out
