"""What the zoo measures on a captured graph: generated kernels on both sides, the branch pools."""

from __future__ import annotations

from fuseopt.ir.expr import Binary, Load, Masked, walk
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.plan import Plan


def generated_kernels(graph: Graph, plan: Plan) -> int:
    """fuseopt's kernels that are generated code (pointwise, reduction, template), not library calls."""
    return sum(1 for k in plan.kernels if k.kind != "extern")


def inductor_generated_kernels(graph: Graph) -> int:
    """Inductor's fused groups (meta.inductor.kernels) that contain a node it generates code for."""
    groups = graph.meta["inductor"]["kernels"]
    extern = {n.name for n in graph.nodes if not isinstance(n, ComputeNode) and n.kind == "extern"}
    return sum(1 for group in groups if any(name not in extern for name in group))


def pool_nodes(graph: Graph) -> dict[str, tuple[int, int, int, int]]:
    """The 3x3 stride-1 average pools: pointwise nodes whose value adds nine masked loads of one
    buffer (Inductor's lowering of `avg_pool2d(x, 3, 1, 1)`; a max pool takes `maximum`s), each
    with its output's (N, H, W, C)."""
    pools: dict[str, tuple[int, int, int, int]] = {}
    for node in graph.nodes:
        if not isinstance(node, ComputeNode) or node.kind != "pointwise":
            continue
        exprs = list(walk(node.value))
        loads = []
        for e in exprs:  # a masked load, its value possibly cast (bf16 is computed in float32)
            if isinstance(e, Masked):
                inner = [x for x in walk(e.body) if isinstance(x, Load)]
                if len(inner) == 1:
                    loads.append(inner[0])
        buffers = {ld.buffer for ld in loads}
        maxes = any(isinstance(e, Binary) and e.op == "maximum" for e in exprs)
        if len(loads) == 9 and len(buffers) == 1 and not maxes:
            shape = graph.buffer(node.output).shape
            if len(shape) == 4:
                n, c, h, w = shape
                pools[node.name] = (n, h, w, c)
    return pools
