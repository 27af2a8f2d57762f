"""The plan as an SVG picture: kernels as boxes holding their nodes, graph inputs and outputs as
nodes of their own, every buffer passed between them an edge labelled with its name and bytes.

Two levels of `fuseopt.report.layout.layered`: each kernel's nodes first (edges inside a kernel
are values passed in registers), then the kernels, inputs and outputs with the kernel boxes at the
size their insides need. Every drawn box carries `data-box` and every edge `data-from`/`data-to`
(the ids of the boxes it joins) and `data-label` (the id of the box that names its buffer), which
is what the page's self-check (`#verify`) and the tests read. Input text reaches the SVG only
through `html_text`; ids are built from the prefix and checked names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fuseopt.ir.expr import to_text
from fuseopt.ir.graph import ComputeNode, Graph, Node
from fuseopt.plan import Kernel, Plan
from fuseopt.report.escaping import html_text as _e
from fuseopt.report.layout import LABEL_LINE, MARGIN, Box, Label, Layout, LEdge, LNode, layered, svg_path
from fuseopt.report.plan_text import human_bytes
from fuseopt.report.words import plural

CHAR_W = 7  # px per character of the 11-12 px monospace text (box widths, clipping)
NODE_H, IO_H, LABEL_H = 38, 36, 16
MIN_W, MAX_W = 72, 260
PAD, HEAD = 10, 34  # inside a kernel box: padding, and the two header lines

_KIND_SHORT = {"pointwise": "pw", "reduction": "red", "extern": "extern", "template": "template"}


def _w(*texts: str) -> int:
    """A box width that holds the longest text (capped; longer text is clipped), even."""
    w = max(MIN_W, min(MAX_W, max((len(t) for t in texts), default=0) * CHAR_W + 16))
    return w + w % 2


def _clip(text: str, width: int) -> str:
    n = max(4, (width - 16) // CHAR_W)
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def loops_text(loops: Iterable[tuple[str, int]]) -> str:
    items = list(loops)
    return "(" + ", ".join(f"{v}={n}" for v, n in items) + ")" if items else "-"


def kernel_head(k: Kernel) -> tuple[str, str]:
    """The two header lines of a kernel box: name, kind, bytes; its loops."""
    space = "\u00d7".join(str(n) for _, n in k.loops) or "-"
    if k.reduce:
        space += " \u00b7 reduce " + "\u00d7".join(str(n) for _, n in k.reduce)
    return f"{k.name} \u00b7 {k.kind} \u00b7 {human_bytes(k.bytes)}", f"loops {space}"


def node_sub(n: Node) -> str:
    if isinstance(n, ComputeNode):
        size = f"{n.numel:,}" + (f" \u00d7 {n.rnumel:,}" if n.reduce else "")
        red = f" {n.reduction}" if n.reduction else ""
        return f"{_KIND_SHORT.get(n.kind, n.kind)}{red} {size}"
    return f"{n.kind} {n.op}"


def node_title(n: Node, after: Node | None) -> str:
    if isinstance(n, ComputeNode):
        lines = [f"{n.name} ({n.kind})", f"loops {loops_text((lv.name, lv.size) for lv in n.loops)}"]
        if n.reduce:
            lines.append(f"reduce {loops_text((lv.name, lv.size) for lv in n.reduce)}")
        if isinstance(after, ComputeNode) and after.loops != n.loops:
            lines.append(
                f"loops after loop-order passes {loops_text((lv.name, lv.size) for lv in after.loops)}"
            )
        lines.append(f"store {to_text(n.store)}")
        lines.append(f"value {to_text(n.value)}")
        return "\n".join(lines)
    return f"{n.name} ({n.kind} {n.op})\ninputs {', '.join(n.inputs)}\noutput {n.output}"


def buffer_sub(graph: Graph, name: str) -> str:
    b = graph.buffer(name)
    return f"{b.dtype.value}{list(b.shape)} \u00b7 {human_bytes(b.nbytes)}"


@dataclass(frozen=True)
class PlanEdge:
    """One drawn edge: between boxes (`kernel:`, `input:`, `output:` or, inside a kernel, `node:`
    ids) carrying one buffer."""

    src: str
    dst: str
    buffer: str
    inner: str | None = None  # the kernel it runs inside


def plan_edges(graph: Graph, plan: Plan) -> list[PlanEdge]:
    """Every buffer passed: input -> each kernel reading it, kernel -> each other kernel reading
    what it writes, kernel -> output, and node -> node inside a kernel. In plan order (kernels,
    then their nodes), never the input's list order, so a permuted graph gives the same picture."""
    where = {m: k.name for k in plan.kernels for m in k.nodes}
    writer = {b: n for b, n in graph.writer().items() if n in where}
    out: dict[PlanEdge, None] = {}
    outputs: dict[PlanEdge, None] = {}
    for kernel in plan.kernels:
        k = kernel.name
        for m in kernel.nodes:
            if not graph.has_node(m):
                continue
            n = graph.node(m)
            for b in n.read_buffers():
                w = writer.get(b)
                if w is None:
                    if graph.has_buffer(b):
                        out[PlanEdge(f"input:{b}", f"kernel:{k}", b)] = None
                elif where[w] == k:
                    if w != m:
                        out[PlanEdge(f"node:{w}", f"node:{m}", b, k)] = None
                else:
                    out[PlanEdge(f"kernel:{where[w]}", f"kernel:{k}", b)] = None
            for b in n.outputs:
                if graph.has_buffer(b) and graph.buffer(b).role == "output":
                    outputs[PlanEdge(f"kernel:{k}", f"output:{b}", b)] = None
    return [*out, *outputs]


@dataclass(frozen=True)
class Picture:
    outer: Layout
    inner: Mapping[str, tuple[Box, Layout]]  # kernel -> (its box, its nodes' layout placed inside)
    edges: tuple[PlanEdge, ...]


def _label(graph: Graph, buffer: str, inner: bool) -> Label:
    w = len(label_text(graph, buffer, inner)) * CHAR_W + LABEL_LINE + 10
    return Label(buffer, w + w % 2, LABEL_H)


def label_text(graph: Graph, buffer: str, inner: bool) -> str:
    return buffer if inner else f"{buffer} \u00b7 {human_bytes(graph.buffer(buffer).nbytes)}"


def picture(graph: Graph, plan: Plan) -> Picture:
    edges = plan_edges(graph, plan)
    inner_edges: dict[str, list[LEdge]] = {}
    for e in edges:
        if e.inner is not None:
            inner_edges.setdefault(e.inner, []).append(LEdge(e.src, e.dst, _label(graph, e.buffer, True)))
    inputs = [
        LNode(src, _w(b, buffer_sub(graph, b)), IO_H)
        for src, b in dict.fromkeys((e.src, e.buffer) for e in edges if e.src.startswith("input:"))
    ]
    outputs = [
        LNode(e.dst, _w(e.buffer, buffer_sub(graph, e.buffer)), IO_H)
        for e in edges
        if e.dst.startswith("output:")
    ]
    inner_layouts: dict[str, Layout] = {}
    kernels: list[LNode] = []
    for k in plan.kernels:
        members = [
            LNode(f"node:{m}", _w(m, node_sub(graph.node(m))), NODE_H) for m in k.nodes if graph.has_node(m)
        ]
        lay = layered(members, inner_edges.get(k.name, []))
        inner_layouts[k.name] = lay
        w = max(lay.width - 2 * MARGIN + 2 * PAD, *(len(t) * CHAR_W + 2 * PAD for t in kernel_head(k)))
        kernels.append(LNode(f"kernel:{k.name}", w + w % 2, lay.height - 2 * MARGIN + 2 * PAD + HEAD))
    outer_edges = [
        LEdge(e.src, e.dst, None if e.src.startswith("input:") else _label(graph, e.buffer, False))
        for e in edges
        if e.inner is None
    ]
    outer_nodes = [*inputs, *kernels, *outputs]
    outer = layered(outer_nodes, outer_edges)
    inner: dict[str, tuple[Box, Layout]] = {}
    for k in plan.kernels:
        box = outer.boxes[f"kernel:{k.name}"]
        lay = inner_layouts[k.name]
        dx = box.x + (box.w - (lay.width - 2 * MARGIN)) // 2 - MARGIN
        dy = box.y + HEAD + PAD - MARGIN
        inner[k.name] = (
            box,
            Layout(
                lay.width,
                lay.height,
                {n: b.moved(dx, dy) for n, b in lay.boxes.items()},
                {n: b.moved(dx, dy) for n, b in lay.labels.items()},
                tuple(r.moved(dx, dy) for r in lay.routes),
            ),
        )
    return Picture(outer, inner, tuple(edges))


def _box_id(prefix: str, ref: str) -> str:
    kind, name = ref.split(":", 1)
    return f"{prefix}-{kind[0]}-{name}"


def graph_svg(graph: Graph, plan: Plan, prefix: str, transformed: Graph | None = None) -> str:
    """The picture; element ids start with `prefix` (unique per page)."""
    pic = picture(graph, plan)
    lay = pic.outer
    out = [
        f'<svg class="dag" xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{lay.height}" '
        f'viewBox="0 0 {lay.width} {lay.height}" role="img" aria-label="{_e(graph.name)}: '
        f'{plural(len(plan.kernels), "kernel")}">',
        f'<defs><marker id="{prefix}-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>',
    ]
    for ref, box in lay.boxes.items():
        if ref.startswith(("input:", "output:")):
            kind, b = ref.split(":", 1)
            out.append(
                f'<g class="io {kind}" data-io="{_e(b)}"><title>{_e(kind)} {_e(b)}: {_e(buffer_sub(graph, b))}</title>'
                f'<rect id="{_e(_box_id(prefix, ref))}" data-box="{kind}" x="{box.x}" y="{box.y}" width="{box.w}" '
                f'height="{box.h}" rx="{box.h // 2}"/>'
                f'<text class="nname" x="{box.x + 10}" y="{box.y + 15}">{_e(_clip(b, box.w))}</text>'
                f'<text class="nsub" x="{box.x + 10}" y="{box.y + 29}">{_e(_clip(buffer_sub(graph, b), box.w))}</text></g>'
            )
    for k in plan.kernels:
        box, inner = pic.inner[k.name]
        kid = _box_id(prefix, f"kernel:{k.name}")
        head, loops = kernel_head(k)
        out.append(
            f'<g class="kernel kind-{_e(k.kind)}" id="{prefix}-{_e(k.name)}" data-kernel="{_e(k.name)}">'
            f"<title>{_e(k.name)}: {_e(' '.join(k.nodes))}\nloops {_e(loops_text(k.loops))} reduce "
            f"{_e(loops_text(k.reduce))}\n{k.bytes:,} bytes</title>"
            f'<rect class="cluster" id="{_e(kid)}" data-box="kernel" x="{box.x}" y="{box.y}" width="{box.w}" '
            f'height="{box.h}" rx="8"/>'
            f'<text class="khead" x="{box.x + PAD}" y="{box.y + PAD + 9}">{_e(head)}</text>'
            f'<text class="kloops" x="{box.x + PAD}" y="{box.y + PAD + 22}">{_e(loops)}</text>'
        )
        for m in k.nodes:
            nb = inner.boxes.get(f"node:{m}")
            if nb is None:
                continue
            n = graph.node(m)
            after = transformed.node(m) if transformed is not None and transformed.has_node(m) else None
            out.append(
                f'<g class="node" data-node="{_e(m)}"><title>{_e(node_title(n, after))}</title>'
                f'<rect id="{_e(_box_id(prefix, "node:" + m))}" data-box="node" data-in="{_e(kid)}" x="{nb.x}" '
                f'y="{nb.y}" width="{nb.w}" height="{nb.h}" rx="5"/>'
                f'<text class="nname" x="{nb.x + 8}" y="{nb.y + 15}">{_e(_clip(m, nb.w))}</text>'
                f'<text class="nsub" x="{nb.x + 8}" y="{nb.y + 30}">{_e(_clip(node_sub(n), nb.w))}</text></g>'
            )
        out.append(_edges_svg(graph, prefix, inner, kid))
        out.append("</g>")
    out.append(_edges_svg(graph, prefix, lay, None))
    out.append("</svg>")
    return "".join(out)


def _edges_svg(graph: Graph, prefix: str, lay: Layout, kernel_id: str | None) -> str:
    """The edges and edge labels of one level: the kernels' (kernel_id None) or one kernel's inside."""
    inner = kernel_id is not None
    where = f' data-in="{_e(kernel_id)}"' if inner else ""
    parts = [f'<g class="{"edges inner" if inner else "edges"}">']
    label_ids: dict[tuple[str, str], str] = {}
    labels = []
    for (src, buf), box in lay.labels.items():
        lid = f"{_box_id(prefix, src)}--{buf}"
        label_ids[(src, buf)] = lid
        text = label_text(graph, buf, inner)
        labels.append(
            f'<g class="elabel"><rect id="{_e(lid)}" data-box="label"{where} x="{box.x}" y="{box.y}" '
            f'width="{box.w}" height="{box.h}"/><text x="{box.x + LABEL_LINE + 5}" y="{box.y + 12}">'
            f"{_e(text)}</text></g>"
        )
    for r in lay.routes:
        e = r.edge
        buf = e.label.key if e.label is not None else e.src.split(":", 1)[1]
        label = label_ids.get((e.src, buf), "") if e.label is not None else _box_id(prefix, e.src)
        cls = (
            "edge inner"
            if inner
            else ("edge io" if e.src.startswith("input:") or e.dst.startswith("output:") else "edge")
        )
        parts.append(
            f'<path class="{cls}" data-from="{_e(_box_id(prefix, e.src))}" data-to="{_e(_box_id(prefix, e.dst))}" '
            f'data-buffer="{_e(buf)}" data-label="{_e(label)}"{where} d="{svg_path(r.points)}" '
            f'marker-end="url(#{prefix}-arrow)"><title>{_e(e.src.split(":", 1)[1])} \u2192 '
            f"{_e(e.dst.split(':', 1)[1])}: {_e(buf)}</title></path>"
        )
    parts.append("</g>")
    return f'<g class="labels">{"".join(labels)}</g>' + "".join(parts)
