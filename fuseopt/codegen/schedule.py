"""From a Plan to launches: which node runs where in which kernel, and which buffers exist.

Contract with the planner (checked here, a `CodegenError` otherwise): every graph node is in
exactly one kernel; a kernel lists its nodes in a topological order (the plan's, which code follows)
and kernels come in an order that respects data dependencies; a pointwise kernel's nodes have one numel; a reduction kernel's
reductions share (numel, rnumel) and its pointwise nodes have numel*rnumel points (run inside the
reduction loop) or numel points (epilogue); extern kernels hold one library node; a template
kernel is a library node followed by pointwise epilogue nodes (emitted as the torch call plus a
pointwise Triton kernel). A fused read of a buffer written earlier in the same kernel addresses
the element the producer wrote at the same point (`access_match.match_read`, which the planner
made sure of: the kernel emitter's check failing is a planner bug, `FusedReadMismatch`).

Guarantee: a buffer is materialised (allocated, stored) iff it is an input, an output, written by
a library node, or read by a node of another launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from fuseopt.analysis.access_match import Space, space_of
from fuseopt.codegen.common import CodegenError, prod
from fuseopt.codegen.indexing import Digit, Flat, decompose, split_loops
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, LoopVar
from fuseopt.passes.loop_transform import simplify_indices
from fuseopt.plan import Kernel, Plan


@dataclass(frozen=True)
class Axis:
    """One flat axis of a kernel's tile: x, y (2D pointwise tiles) or r0_ (reductions)."""

    name: str  # "x" | "y" | "r0_"
    numel: int

    @property
    def index(self) -> str:
        return f"{self.name}index"

    @property
    def mask(self) -> str:
        return f"{self.name}mask" if self.name != "r0_" else "r0_mask"

    @property
    def numel_arg(self) -> str:
        return f"{self.name}numel"

    @property
    def block(self) -> str:
        return {"x": "XBLOCK", "y": "YBLOCK", "r0_": "R0_BLOCK"}[self.name]


@dataclass(frozen=True)
class Segment:
    """A run of a node's loops laid row-major over one axis, or over several axes flattened."""

    axes: tuple[str, ...]
    loops: tuple[LoopVar, ...]


@dataclass(frozen=True)
class Placement:
    """A node inside a compute kernel.

    role: pointwise (a pointwise kernel's node), inner (numel*rnumel points inside a reduction
    loop), reduction, or epilogue (numel points, after the reduction it may read).
    """

    node: ComputeNode
    role: str
    segments: tuple[Segment, ...]

    @property
    def axes(self) -> tuple[str, ...]:
        """The axes the node's points span (the reduction's own r0_ is not among a store's axes)."""
        out: dict[str, None] = {}
        for seg in self.segments:
            if self.role == "reduction" and seg.axes == ("r0_",):
                continue
            out.update(dict.fromkeys(seg.axes))
        return tuple(out)


@dataclass(frozen=True)
class ComputeLaunch:
    """One Triton kernel: placements in program order over `axes`."""

    plan_kernel: str
    kind: str  # pointwise | reduction
    placements: tuple[Placement, ...]
    axes: tuple[Axis, ...]
    stores: tuple[str, ...]  # materialised buffers written here, in node order
    epilogue_of: str | None = None  # the template node whose epilogue this is

    def producer(self) -> dict[str, Placement]:
        """Each buffer written here -> its placement (computed once: read, do not change it)."""
        return self.producers

    @cached_property
    def producers(self) -> dict[str, Placement]:
        return {p.node.output: p for p in self.placements}

    @cached_property
    def space(self) -> Space:
        """The plan kernel's iteration space, whatever the tile (fused reads are matched in it)."""
        space = space_of(p.node for p in self.placements)
        assert space is not None, f"plan kernel {self.plan_kernel!r}: a launch without nodes"
        return space

    def with_axes(self, axes: tuple[Axis, ...], placements: tuple[Placement, ...]) -> ComputeLaunch:
        return ComputeLaunch(self.plan_kernel, self.kind, placements, axes, self.stores, self.epilogue_of)


@dataclass(frozen=True)
class LibraryLaunch:
    plan_kernel: str
    node: LibraryNode


Launch = ComputeLaunch | LibraryLaunch


@dataclass(frozen=True)
class Schedule:
    launches: tuple[Launch, ...]
    materialised: tuple[str, ...]  # non-input buffers to allocate, by name (not the graph's list order)


def digits_of(p: Placement, axes: Mapping[str, int]) -> dict[str, Digit | None]:
    """Each loop variable of the placed node as a digit of an axis index (or a flat combination).

    A segment over several axes uses the base name `flat:<axes>` (the emitter computes that flat
    index); its extent is the product of those axes.
    """
    out: dict[str, Digit | None] = {}
    for seg in p.segments:
        base = axes_base(seg.axes)
        extent = prod(axes[a] for a in seg.axes)
        for lv, d in zip(seg.loops, decompose([lv.size for lv in seg.loops], base, extent), strict=True):
            out[lv.name] = d
    return out


@dataclass(frozen=True)
class Frame:
    """What an index of a launch's node means in its kernel: each node's loop variables as
    digits of the axes (`digits_of`), every base's extent, and the flat bases of segments over
    several axes (a flat index of its outer and inner axis)."""

    digits: Mapping[str, Mapping[str, Digit | None]]  # node -> loop variable -> digit
    extents: Mapping[str, int]
    flats: Mapping[str, Flat]


def frame_of(launch: ComputeLaunch, unroll: int = 0) -> Frame:
    """The launch's Frame; `unroll`: points of a reduction unrolled into a pointwise tile (its
    reduce loops are then digits of `r0_index`, bound to one point at a time)."""
    axes = {a.name: a for a in launch.axes}
    sizes = {a.name: a.numel for a in launch.axes}
    if unroll:
        sizes["r0_"] = unroll
    extents = {axes_base((a.name,)): a.numel for a in launch.axes}
    flats: dict[str, Flat] = {}
    for p in launch.placements:
        for seg in p.segments:
            if len(seg.axes) > 1:
                outer, inner = axes[seg.axes[0]], axes[seg.axes[-1]]
                extents[axes_base(seg.axes)] = outer.numel * inner.numel
                flats[axes_base(seg.axes)] = Flat(outer.index, inner.index, inner.numel)
    return Frame({p.node.name: digits_of(p, sizes) for p in launch.placements}, extents, flats)


def axes_base(names: tuple[str, ...]) -> str:
    return f"{names[0]}index" if len(names) == 1 else "flat_" + "_".join(n.rstrip("_") for n in names)


def pointwise_segments(node: ComputeNode, outer: Axis, inner: Axis | None) -> tuple[Segment, ...]:
    """A pointwise node over `outer` (x or y) and optionally `inner`: split at a loop boundary
    when one exists, else one segment over both axes (flattened)."""
    if inner is None:
        return (Segment((outer.name,), node.loops),)
    k = split_loops([lv.size for lv in node.loops], outer.numel)
    if k is None:
        return (Segment((outer.name, inner.name), node.loops),)
    return (Segment((outer.name,), node.loops[:k]), Segment((inner.name,), node.loops[k:]))


def build_schedule(graph: Graph, plan: Plan) -> Schedule:
    kernel_of: dict[str, int] = {}
    for ki, k in enumerate(plan.kernels):
        for n in k.nodes:
            if not graph.has_node(n):
                raise CodegenError(f"plan kernel {k.name!r} lists {n!r}, which is not a node of the graph")
            if n in kernel_of:
                raise CodegenError(
                    f"node {n!r} is in two plan kernels ({plan.kernels[kernel_of[n]].name!r} and {k.name!r})"
                )
            kernel_of[n] = ki
    missing = [n.name for n in graph.nodes if n.name not in kernel_of]
    if missing:
        raise CodegenError(f"nodes not in any plan kernel: {', '.join(missing)}")
    writer = graph.writer()

    launches: list[Launch] = []
    for ki, k in enumerate(plan.kernels):
        listed = {n: i for i, n in enumerate(k.nodes)}
        for n in k.nodes:
            node = graph.node(n)
            for b in node.read_buffers():
                src = writer.get(b)
                if src is not None and src in listed and listed[src] > listed[n]:
                    raise CodegenError(
                        f"plan kernel {k.name!r} lists {n!r}, which reads {b!r}, before {src!r}, which writes it"
                    )
                if src is not None and kernel_of[src] > ki:
                    raise CodegenError(
                        f"plan kernel {k.name!r} runs {n!r}, which reads {b!r}, before kernel "
                        f"{plan.kernels[kernel_of[src]].name!r} writes it"
                    )
        launches.extend(_lower_kernel(graph, k))

    launch_of: dict[str, int] = {}
    for li, launch in enumerate(launches):
        names = (
            [launch.node.name]
            if isinstance(launch, LibraryLaunch)
            else [p.node.name for p in launch.placements]
        )
        for n in names:
            launch_of[n] = li
    readers: dict[str, list[str]] = {}
    for node in graph.nodes:
        for b in node.read_buffers():
            readers.setdefault(b, []).append(node.name)
    materialised: list[str] = []
    for buf in sorted(graph.buffers, key=lambda b: b.name):
        if buf.role == "input":
            continue
        src = writer[buf.name]
        if (
            buf.role == "output"
            or isinstance(graph.node(src), LibraryNode)
            or any(launch_of[r] != launch_of[src] for r in readers.get(buf.name, []))
        ):
            materialised.append(buf.name)
    keep = set(materialised)
    final: list[Launch] = []
    for launch in launches:
        if isinstance(launch, ComputeLaunch):
            stores = tuple(p.node.output for p in launch.placements if p.node.output in keep)
            launch = ComputeLaunch(
                launch.plan_kernel, launch.kind, launch.placements, launch.axes, stores, launch.epilogue_of
            )
        final.append(launch)
    return Schedule(tuple(final), tuple(materialised))


def _lower_kernel(graph: Graph, k: Kernel) -> list[Launch]:
    nodes = [_simplified(graph.node(n)) for n in k.nodes]
    if not nodes:
        raise CodegenError(f"plan kernel {k.name!r} has no nodes")
    if k.kind in ("extern", "template"):
        # The library call runs first, then its epilogue; the plan may list an epilogue member that
        # does not read the call's output before it (stable plans list members by depth and name).
        library = [n for n in nodes if isinstance(n, LibraryNode)]
        if len(library) != 1:
            raise CodegenError(f"{k.kind} kernel {k.name!r} must hold one library node, got {len(library)}")
        head = library[0]
        rest = [n for n in nodes if n is not head]
        fed = sorted({b for n in rest for b in n.outputs} & set(head.read_buffers()))
        if fed:
            raise CodegenError(
                f"{k.kind} kernel {k.name!r}: its library node {head.name!r} reads {fed[0]!r}, which a "
                "member of the same kernel writes (a prologue)"
            )
        if k.kind == "extern" and rest:
            raise CodegenError(f"extern kernel {k.name!r} holds one library node, got {len(nodes)} nodes")
        out: list[Launch] = [LibraryLaunch(k.name, head)]
        if rest:
            compute = _compute_nodes(k, rest)
            if any(n.kind != "pointwise" for n in compute):
                raise CodegenError(f"template kernel {k.name!r}: epilogue nodes must be pointwise")
            out.append(_pointwise_launch(k, compute, epilogue_of=head.name))
        return out
    compute = _compute_nodes(k, nodes)
    if k.kind == "pointwise":
        if any(n.kind != "pointwise" for n in compute):
            raise CodegenError(f"pointwise kernel {k.name!r} contains a reduction node")
        return [_pointwise_launch(k, compute)]
    if k.kind == "reduction":
        return [_reduction_launch(k, compute)]
    raise CodegenError(f"plan kernel {k.name!r} has unknown kind {k.kind!r}")


def _simplified(node: ComputeNode | LibraryNode) -> ComputeNode | LibraryNode:
    """A compute node with its indices as simple as its loop box allows (`simplify_indices`: an
    index printed as the graph writes it costs its `//` and `%`, and hides its contiguity)."""
    return simplify_indices(node) if isinstance(node, ComputeNode) else node


def _compute_nodes(k: Kernel, nodes: list[ComputeNode | LibraryNode]) -> list[ComputeNode]:
    out: list[ComputeNode] = []
    for n in nodes:
        if isinstance(n, LibraryNode):
            raise CodegenError(f"{k.kind} kernel {k.name!r} contains library node {n.name!r}")
        out.append(n)
    return out


def _pointwise_launch(k: Kernel, nodes: list[ComputeNode], epilogue_of: str | None = None) -> ComputeLaunch:
    numel = nodes[0].numel
    for n in nodes:
        if n.numel != numel:
            raise CodegenError(
                f"pointwise kernel {k.name!r}: {n.name!r} has {n.numel} points, {nodes[0].name!r} has {numel}"
            )
    if k.kind == "pointwise" and k.loops and prod(s for _, s in k.loops) != numel:
        raise CodegenError(f"pointwise kernel {k.name!r}: loops {list(k.loops)} do not cover {numel} points")
    x = Axis("x", numel)
    placements = tuple(Placement(n, "pointwise", pointwise_segments(n, x, None)) for n in nodes)
    return ComputeLaunch(k.name, "pointwise", placements, (x,), (), epilogue_of)


def _reduction_launch(k: Kernel, nodes: list[ComputeNode]) -> ComputeLaunch:
    reds = [n for n in nodes if n.kind == "reduction"]
    if not reds:
        raise CodegenError(f"reduction kernel {k.name!r} has no reduction node")
    numel, rnumel = reds[0].numel, reds[0].rnumel
    for n in reds:
        if (n.numel, n.rnumel) != (numel, rnumel):
            raise CodegenError(
                f"reduction kernel {k.name!r}: {n.name!r} reduces {n.numel}x{n.rnumel}, "
                f"{reds[0].name!r} {numel}x{rnumel}"
            )
    if k.loops and prod(s for _, s in k.loops) != numel:
        raise CodegenError(f"reduction kernel {k.name!r}: loops {list(k.loops)} do not cover {numel} points")
    if k.reduce and prod(s for _, s in k.reduce) != rnumel:
        raise CodegenError(
            f"reduction kernel {k.name!r}: reduce {list(k.reduce)} does not cover {rnumel} points"
        )
    x, r = Axis("x", numel), Axis("r0_", rnumel)
    placements: list[Placement] = []
    for n in nodes:
        if n.kind == "reduction":
            segs = (Segment(("x",), n.loops), Segment(("r0_",), n.reduce))
            placements.append(Placement(n, "reduction", segs))
        elif n.numel == numel * rnumel and rnumel > 1:
            placements.append(Placement(n, "inner", pointwise_segments(n, x, r)))
        elif n.numel == numel:
            placements.append(Placement(n, "epilogue", (Segment(("x",), n.loops),)))
        else:
            raise CodegenError(
                f"reduction kernel {k.name!r}: pointwise node {n.name!r} has {n.numel} points; "
                f"it must have {numel * rnumel} (inside the reduction) or {numel} (epilogue)"
            )
    return ComputeLaunch(k.name, "reduction", tuple(placements), (x, r), ())
