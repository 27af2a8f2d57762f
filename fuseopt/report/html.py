"""The plan as one self-contained HTML page: the graph as an SVG picture, kernels, decisions, Triton.

No network: CSS and JS are inline and a Content-Security-Policy forbids every fetch. The picture
is laid out here, deterministically: kernels are boxes (clusters) placed in bands by their depth
in the kernel graph (a kernel sits below every kernel it reads from), and inside a box the nodes
sit in rows by their depth among the kernel's own nodes; program order breaks ties. Every edge
(a buffer a node writes and another reads) therefore points down. The same graph and plan give
byte-identical HTML. `fuseopt optimize --html F` writes `plan_page`; `fuseopt ci --html F` writes
`ci_page`, one section per graph (`graph_section`, rendered by the CI workers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fuseopt import __version__
from fuseopt.errors import FuseoptError
from fuseopt.ir.expr import to_text
from fuseopt.ir.graph import ComputeNode, Graph, Node
from fuseopt.plan import Plan
from fuseopt.report.escaping import html_text
from fuseopt.report.plan_text import human_bytes

if TYPE_CHECKING:
    from fuseopt.ci.model import CheckResult, CiReport
    from fuseopt.passes.pipeline import Stage

# Above this many nodes the picture is left out (the tables still list everything).
MAX_PICTURE_NODES = 2000
# Rows shown per table (decisions, rejections); plan.json has them all.
MAX_ROWS = 1000

NODE_W, NODE_H = 168, 42
GAP_X, GAP_Y = 16, 26
PAD, HEAD = 12, 22
KGAP_X, KGAP_Y = 28, 40
MARGIN = 16
CHAR_W = 7  # px per character of the 12 px monospace labels (for truncation and box widths)

_KIND_SHORT = {"pointwise": "pw", "reduction": "red", "extern": "extern", "template": "template"}


def _e(text: object) -> str:
    """Every piece of text on the page goes through here (input text included): HTML-escaped,
    quotes too (attribute values are always double-quoted), unprintable characters escaped."""
    return html_text(text)


def _loops(loops: Iterable[tuple[str, int]]) -> str:
    items = list(loops)
    return "(" + ", ".join(f"{v}={n}" for v, n in items) + ")" if items else "-"


def _clip(text: str, width: int) -> str:
    n = max(4, width // CHAR_W)
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def kernel_source(graph: Graph, plan: Plan) -> tuple[str | None, str]:
    """(the generated Triton module, "") or (None, why there is none)."""
    try:
        from fuseopt.codegen.triton import emit_module
    except ImportError:
        return None, "code generation is not available in this build"
    try:
        return emit_module(graph, plan), ""
    except FuseoptError as err:
        first = err.diagnostics[0].message if err.diagnostics else type(err).__name__
        return None, f"code generation failed: {first}"


# -- layout -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Box:
    x: int
    y: int
    w: int
    h: int


@dataclass(frozen=True)
class _Layout:
    width: int
    height: int
    kernels: tuple[tuple[int, _Box], ...]  # (kernel index, box)
    nodes: Mapping[str, _Box]
    edges: tuple[tuple[str, str, tuple[str, ...]], ...]  # producer, consumer, buffers


def _edges(graph: Graph) -> list[tuple[str, str, tuple[str, ...]]]:
    writer = graph.writer()
    out: dict[tuple[str, str], list[str]] = {}
    for n in graph.nodes:
        for b in n.read_buffers():
            w = writer.get(b)
            if w is not None and w != n.name:
                out.setdefault((w, n.name), []).append(b)
    return [(a, b, tuple(bufs)) for (a, b), bufs in out.items()]


def _kernel_depths(n_kernels: int, kedges: Sequence[tuple[int, int]]) -> list[int]:
    """Longest-path depth of each kernel in the kernel graph (Kahn; kernels on a cycle -- a broken
    plan -- go below everything else, in plan order)."""
    preds: list[set[int]] = [set() for _ in range(n_kernels)]
    succs: list[list[int]] = [[] for _ in range(n_kernels)]
    for a, b in kedges:
        if a != b and a not in preds[b]:
            preds[b].add(a)
            succs[a].append(b)
    depth = [0] * n_kernels
    remaining = [len(p) for p in preds]
    ready = [k for k in range(n_kernels) if remaining[k] == 0]
    done = [False] * n_kernels
    while ready:
        k = ready.pop(0)
        done[k] = True
        for s in sorted(succs[k]):
            depth[s] = max(depth[s], depth[k] + 1)
            remaining[s] -= 1
            if remaining[s] == 0:
                ready.append(s)
        ready.sort()
    bottom = max(depth, default=0) + 1
    for k in range(n_kernels):
        if not done[k]:
            depth[k] = bottom
    return depth


def _layout(graph: Graph, plan: Plan) -> _Layout:
    where = {m: i for i, k in enumerate(plan.kernels) for m in k.nodes}
    edges = [e for e in _edges(graph) if e[0] in where and e[1] in where]
    depth = _kernel_depths(len(plan.kernels), [(where[a], where[b]) for a, b, _ in edges])
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    # Rows inside each kernel: depth among the kernel's own nodes, program order within a row.
    row: dict[str, int] = {}
    inner_preds: dict[str, list[str]] = {}
    for a, b, _ in edges:
        if where[a] == where[b]:
            inner_preds.setdefault(b, []).append(a)
    for n in graph.nodes:
        if n.name in where:
            row[n.name] = max((row.get(p, 0) + 1 for p in inner_preds.get(n.name, ())), default=0)
    sizes: list[tuple[int, int, list[list[str]]]] = []
    for i, k in enumerate(plan.kernels):
        members = sorted((m for m in k.nodes if m in order), key=order.__getitem__)
        rows: list[list[str]] = [[] for _ in range(max((row[m] for m in members), default=0) + 1)]
        for m in members:
            rows[row[m]].append(m)
        widest = max((len(r) for r in rows), default=1)
        w = max(widest * (NODE_W + GAP_X) - GAP_X, len(_kernel_head(plan, i)) * CHAR_W) + 2 * PAD
        h = HEAD + len(rows) * (NODE_H + GAP_Y) - GAP_Y + 2 * PAD
        sizes.append((w, h, rows))
    bands: dict[int, list[int]] = {}
    for i in range(len(plan.kernels)):
        bands.setdefault(depth[i], []).append(i)
    band_w = {d: sum(sizes[i][0] for i in ks) + KGAP_X * (len(ks) - 1) for d, ks in bands.items()}
    width = max(band_w.values(), default=NODE_W) + 2 * MARGIN
    kboxes: list[tuple[int, _Box]] = []
    nboxes: dict[str, _Box] = {}
    y = MARGIN
    for d in sorted(bands):
        x = MARGIN + (width - 2 * MARGIN - band_w[d]) // 2
        for i in bands[d]:
            w, h, rows = sizes[i]
            kboxes.append((i, _Box(x, y, w, h)))
            for r, names in enumerate(rows):
                rw = len(names) * (NODE_W + GAP_X) - GAP_X
                nx = x + (w - rw) // 2
                ny = y + PAD + HEAD + r * (NODE_H + GAP_Y)
                for j, name in enumerate(names):
                    nboxes[name] = _Box(nx + j * (NODE_W + GAP_X), ny, NODE_W, NODE_H)
            x += w + KGAP_X
        y += max(sizes[i][1] for i in bands[d]) + KGAP_Y
    height = y - KGAP_Y + MARGIN if bands else 2 * MARGIN
    return _Layout(width, height, tuple(kboxes), nboxes, tuple(edges))


def _kernel_head(plan: Plan, i: int) -> str:
    k = plan.kernels[i]
    return f"{k.name} \u00b7 {k.kind} \u00b7 {human_bytes(k.bytes)}"


def _node_sub(n: Node) -> str:
    if isinstance(n, ComputeNode):
        size = f"{n.numel:,}" + (f" \u00d7 {n.rnumel:,}" if n.reduce else "")
        red = f" {n.reduction}" if n.reduction else ""
        return f"{_KIND_SHORT.get(n.kind, n.kind)}{red} {size}"
    return f"{n.kind} {n.op}"


def _node_title(n: Node, after: Node | None) -> str:
    if isinstance(n, ComputeNode):
        lines = [f"{n.name} ({n.kind})", f"loops {_loops((lv.name, lv.size) for lv in n.loops)}"]
        if n.reduce:
            lines.append(f"reduce {_loops((lv.name, lv.size) for lv in n.reduce)}")
        if isinstance(after, ComputeNode) and after.loops != n.loops:
            lines.append(f"loops after loop-order passes {_loops((lv.name, lv.size) for lv in after.loops)}")
        lines.append(f"store {to_text(n.store)}")
        lines.append(f"value {to_text(n.value)}")
        return "\n".join(lines)
    return f"{n.name} ({n.kind} {n.op})\ninputs {', '.join(n.inputs)}\noutput {n.output}"


def graph_svg(graph: Graph, plan: Plan, prefix: str, transformed: Graph | None = None) -> str:
    """The graph as an SVG picture, kernels as clusters; ids start with `prefix` (unique per page)."""
    lay = _layout(graph, plan)
    out = [
        f'<svg class="dag" xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{lay.height}" '
        f'viewBox="0 0 {lay.width} {lay.height}" role="img" aria-label="{_e(graph.name)}: '
        f'{len(plan.kernels)} kernels">',
        f'<defs><marker id="{prefix}-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>',
    ]
    where = {m: k.name for k in plan.kernels for m in k.nodes}
    out.append('<g class="edges">')
    for a, b, bufs in lay.edges:
        pa, pb = lay.nodes.get(a), lay.nodes.get(b)
        if pa is None or pb is None:
            continue
        x1, y1 = pa.x + pa.w // 2, pa.y + pa.h
        x2, y2 = pb.x + pb.w // 2, pb.y
        dy = max(16, (y2 - y1) // 2)
        cls = "edge inner" if where[a] == where[b] else "edge"
        out.append(
            f'<path class="{cls}" data-from="{_e(a)}" data-to="{_e(b)}" d="M{x1},{y1} C{x1},{y1 + dy} '
            f'{x2},{y2 - dy} {x2},{y2 - 2}" marker-end="url(#{prefix}-arrow)"><title>{_e(a)} \u2192 '
            f"{_e(b)}: {_e(', '.join(bufs))}</title></path>"
        )
    out.append("</g>")
    for i, box in lay.kernels:
        k = plan.kernels[i]
        out.append(
            f'<g class="kernel kind-{_e(k.kind)}" id="{prefix}-{_e(k.name)}" data-kernel="{_e(k.name)}">'
            f"<title>{_e(k.name)}: {_e(' '.join(k.nodes))}</title>"
            f'<rect class="cluster" x="{box.x}" y="{box.y}" width="{box.w}" height="{box.h}" rx="8"/>'
            f'<text class="khead" x="{box.x + PAD}" y="{box.y + PAD + 11}">{_e(_kernel_head(plan, i))}</text>'
        )
        for m in k.nodes:
            nb = lay.nodes.get(m)
            if nb is None or not graph.has_node(m):
                continue
            n = graph.node(m)
            after = transformed.node(m) if transformed is not None and transformed.has_node(m) else None
            out.append(
                f'<g class="node" data-node="{_e(m)}"><title>{_e(_node_title(n, after))}</title>'
                f'<rect x="{nb.x}" y="{nb.y}" width="{nb.w}" height="{nb.h}" rx="5"/>'
                f'<text class="nname" x="{nb.x + 8}" y="{nb.y + 17}">{_e(_clip(m, nb.w - 16))}</text>'
                f'<text class="nsub" x="{nb.x + 8}" y="{nb.y + 33}">{_e(_clip(_node_sub(n), nb.w - 16))}</text></g>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


# -- tables -----------------------------------------------------------------------------------------
def _table(
    cls: str, head: Sequence[str], rows: Iterable[Sequence[str]], row_attrs: Sequence[str] = ()
) -> str:
    """Cells are HTML already (escape before); `row_attrs[i]` goes into row i's <tr>."""
    body = []
    for i, r in enumerate(rows):
        attrs = f" {row_attrs[i]}" if i < len(row_attrs) and row_attrs[i] else ""
        body.append(f"<tr{attrs}>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>")
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _capped(items: Sequence[Any]) -> tuple[Sequence[Any], str]:
    if len(items) <= MAX_ROWS:
        return items, ""
    return items[:MAX_ROWS], f'<p class="note">{len(items) - MAX_ROWS} more rows are in plan.json.</p>'


def _kernels_table(plan: Plan, graph: Graph | None) -> str:
    reorders: dict[str, list[str]] = {}
    for r in plan.reorders:
        reorders.setdefault(r.node, []).append(r.kind + (f" {list(r.order)}" if r.kind != "merge" else ""))
    rows, attrs = [], []
    for k in plan.kernels:
        items = []
        for m in k.nodes:
            n = graph.node(m) if graph is not None and graph.has_node(m) else None
            loops = _loops((lv.name, lv.size) for lv in n.loops) if isinstance(n, ComputeNode) else ""
            how = f' <span class="tf">{_e(", ".join(reorders[m]))}</span>' if m in reorders else ""
            items.append(f"<li><code>{_e(m)}</code> {_e(loops)}{how}</li>")
        rows.append(
            [
                f"<code>{_e(k.name)}</code>",
                _e(k.kind),
                f'<ul class="members">{"".join(items)}</ul>',
                _e(_loops(k.loops)),
                _e(_loops(k.reduce)),
                f'<span title="{k.bytes:,} bytes">{_e(human_bytes(k.bytes))}</span>',
            ]
        )
        attrs.append(f'data-kernel="{_e(k.name)}"')
    return _table(
        "kernels",
        ("kernel", "kind", "nodes (loops after the loop-order passes)", "loops", "reduce", "bytes"),
        rows,
        attrs,
    )


def _plan_tables(plan: Plan, transformed: Graph | None) -> str:
    parts = ["<h3>Kernels</h3>", _kernels_table(plan, transformed)]
    if plan.reorders:
        rows = [
            [f"<code>{_e(r.node)}</code>", _e(r.kind), _e(list(r.order)), _e(r.detail), _e(_loops(r.loops))]
            for r in plan.reorders
        ]
        parts += [
            "<h3>Loop transformations</h3>",
            _table("reorders", ("node", "kind", "order", "detail", "loops after"), rows),
        ]
    decisions, more = _capped(plan.decisions)
    rows = [
        [
            str(d.step),
            str(d.round),
            f"<code>{_e(d.pair[0])}</code> + <code>{_e(d.pair[1])}</code>",
            _e(d.kind),
            _e(", ".join(f"{k}={v}" for k, v in d.score.items())),
        ]
        for d in decisions
    ]
    parts += ["<h3>Decisions <small>(in the order applied)</small></h3>"]
    parts += [
        _table("decisions", ("step", "round", "pair", "kind", "score"), rows) + more
        if rows
        else '<p class="note">No fusion was made.</p>'
    ]
    rejected, more = _capped(plan.rejected)
    rows = [
        [
            f"<code>{_e(r.pair[0])}</code> / <code>{_e(r.pair[1])}</code>",
            f'<span class="reason">{_e(r.reason)}</span>',
            _e(r.detail),
        ]
        for r in rejected
    ]
    parts += ["<h3>Not fused <small>(candidate pairs and why)</small></h3>"]
    parts += [
        _table("rejected", ("pair", "reason", "detail"), rows) + more
        if rows
        else '<p class="note">No candidate pair was rejected.</p>'
    ]
    return "".join(parts)


def _metrics(plan: Plan) -> str:
    m = plan.metrics
    return (
        '<p class="metrics">'
        f"<b>{m['kernels']}</b> kernels (unfused {m['unfused_kernels']}) \u00b7 "
        f"<b>{_e(human_bytes(m['bytes']))}</b> moved (unfused {_e(human_bytes(m['unfused_bytes']))}) \u00b7 "
        + _e(", ".join(f"{k}={v}" for k, v in plan.options.items()))
        + "</p>"
    )


def _checks_html(checks: Sequence[CheckResult]) -> str:
    if not checks:
        return ""
    rows = [
        [_e(c.check), f'<span class="status {c.status}">{_e(c.status)}</span>', _e(c.summary)] for c in checks
    ]
    parts = ["<h3>Checks</h3>", _table("checks", ("check", "status", "summary"), rows)]
    findings = [f for c in checks for f in c.findings]
    if findings:
        items = []
        for f in findings:
            detail = f"<pre>{_e(f.detail)}</pre>" if f.detail else ""
            items.append(
                f'<li class="finding {f.level}"><code class="where">{_e(f.where())}</code> '
                f'<span class="rule">{_e(f.rule)}</span> {_e(f.text().splitlines()[0])}{detail}</li>'
            )
        parts.append(f'<ul class="findings">{"".join(items)}</ul>')
    return "".join(parts)


def graph_section(
    index: int,
    file: str,
    graph: Graph | None,
    stage: Stage | None,
    *,
    checks: Sequence[CheckResult] = (),
    title: str | None = None,
    triton: bool = True,
) -> str:
    """One graph's part of a page: checks, metrics, picture, tables, Triton source."""
    prefix = f"g{index}"
    failed = any(not c.ok for c in checks)
    name = graph.name if graph is not None else (title or file)
    head = f"<h2>{_e(title or name)} <small><code>{_e(file)}</code>"
    if graph is not None and title and title != graph.name:
        head += f" graph <code>{_e(graph.name)}</code>"
    head += "</small></h2>"
    parts = [
        f'<section class="graph" id="{prefix}" data-graph="{_e(name)}" '
        f'data-status="{"failed" if failed else "passed"}">',
        head,
    ]
    if graph is not None and graph.description:
        parts.append(f'<p class="description">{_e(graph.description.strip())}</p>')
    parts.append(_checks_html(checks))
    if graph is None or stage is None:
        why = "the graph did not load" if graph is None else "there is no plan"
        parts.append(f'<p class="note">No picture: {why}.</p></section>')
        return "".join(parts)
    plan = stage.plan
    parts.append(_metrics(plan))
    if len(graph.nodes) <= MAX_PICTURE_NODES:
        legend = (
            '<figcaption><span class="sw pointwise"></span>pointwise <span class="sw reduction"></span>reduction '
            '<span class="sw extern"></span>extern <span class="sw template"></span>template kernel \u00b7 '
            "solid arrows: a buffer passed inside a kernel; dashed: through memory between kernels \u00b7 "
            "hover a kernel to find it in the table, click to jump to it</figcaption>"
        )
        parts.append(
            f'<figure class="picture"><div class="scroll">{graph_svg(graph, plan, prefix, stage.graph)}</div>{legend}</figure>'
        )
    else:
        parts.append(f'<p class="note">No picture: more than {MAX_PICTURE_NODES} nodes.</p>')
    parts.append(_plan_tables(plan, stage.graph))
    if triton:
        src, why = kernel_source(stage.graph, plan)
        if src is not None:
            lines = src.count("\n") + (0 if src.endswith("\n") else 1)
            parts.append(
                f'<h3>Triton</h3><details class="triton"><summary>kernels.py ({lines} lines)</summary>'
                f"<pre><code>{_e(src)}</code></pre></details>"
            )
        else:
            parts.append(f'<h3>Triton</h3><p class="note">{_e(why)}.</p>')
    parts.append("</section>")
    return "".join(parts)


# -- pages ------------------------------------------------------------------------------------------
_CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--alt:#f6f8fa;--pw:#2563eb;--red:#d97706;--ext:#6b7280;--tpl:#7c3aed;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:16px 24px;border-bottom:1px solid var(--line);background:var(--alt)}header h1{margin:0 0 4px;font-size:20px}
main{padding:8px 24px 40px}h2{margin:28px 0 8px;font-size:18px;border-bottom:1px solid var(--line);padding-bottom:4px}h2 small,h3 small{font-weight:400;color:var(--muted)}
h3{margin:18px 0 6px;font-size:15px}code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{background:var(--alt);border:1px solid var(--line);border-radius:6px;padding:8px 10px;overflow:auto;margin:4px 0}
table{border-collapse:collapse;margin:4px 0 8px;width:auto;max-width:100%}th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--alt);font-weight:600}tbody tr:nth-child(even){background:#fbfcfd}tr.hl td{background:#fff8c5}
ul.members{margin:0;padding-left:16px}.tf{color:var(--muted);font-size:12px}.reason{font-family:ui-monospace,monospace;font-size:12px}
.note,.meta,.description{color:var(--muted)}.description{white-space:pre-line}.metrics{margin:6px 0}.status{font-weight:600}.status.passed{color:var(--ok)}.status.failed,.status.error{color:var(--bad)}.status.skipped{color:var(--muted)}
ul.findings{padding-left:18px}li.finding.error .rule{color:var(--bad)}li.finding.warning .rule{color:var(--warn)}li.finding.note .rule{color:var(--muted)}.rule{font-weight:600;margin:0 4px}
figure.picture{margin:8px 0}.scroll{overflow:auto;max-height:78vh;border:1px solid var(--line);border-radius:6px;background:#fff}figcaption{color:var(--muted);font-size:12px;margin-top:4px}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 3px 0 8px;vertical-align:middle}.sw.pointwise{background:var(--pw)}.sw.reduction{background:var(--red)}.sw.extern{background:var(--ext)}.sw.template{background:var(--tpl)}
svg.dag text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}svg.dag .khead{font-size:11px;font-weight:600;fill:#24292f;paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}
svg.dag .cluster{fill:rgba(37,99,235,.06);stroke:var(--pw);stroke-width:1.5}svg.dag .kind-reduction .cluster{fill:rgba(217,119,6,.07);stroke:var(--red)}
svg.dag .kind-extern .cluster{fill:rgba(107,114,128,.08);stroke:var(--ext)}svg.dag .kind-template .cluster{fill:rgba(124,58,237,.07);stroke:var(--tpl)}
svg.dag .kernel{cursor:pointer}svg.dag .kernel.hl .cluster{stroke-width:3;fill:rgba(255,212,0,.18)}
svg.dag .node rect{fill:#fff;stroke:#8c959f}svg.dag .nname{font-size:12px;fill:#1f2328}svg.dag .nsub{font-size:11px;fill:#59636e}
svg.dag .edge{fill:none;stroke:#8c959f;stroke-width:1.3;stroke-dasharray:5 3}svg.dag .edge.inner{stroke:#24292f;stroke-dasharray:none}svg.dag .arrowhead{fill:#57606a}
table.summary td.passed{color:var(--ok)}table.summary td.failed,table.summary td.error{color:var(--bad);font-weight:600}table.summary td.skipped{color:var(--muted)}
"""

_JS = """
(function(){
  document.querySelectorAll('section.graph').forEach(function(sec){
    function mark(k,on){sec.querySelectorAll('[data-kernel="'+CSS.escape(k)+'"]').forEach(function(e){e.classList.toggle('hl',on);});}
    sec.querySelectorAll('[data-kernel]').forEach(function(el){
      var k=el.getAttribute('data-kernel');
      el.addEventListener('mouseenter',function(){mark(k,true);});
      el.addEventListener('mouseleave',function(){mark(k,false);});
      if(el.tagName.toLowerCase()==='g'){el.addEventListener('click',function(){
        var row=sec.querySelector('tr[data-kernel="'+CSS.escape(k)+'"]');if(row){row.scrollIntoView({block:'center'});}
      });}
    });
  });
  document.body.setAttribute('data-ready','1');
})();
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def render_page(title: str, body: str, *, subtitle: str = "") -> str:
    """A whole, self-contained HTML document around `body` (HTML)."""
    sub = f'<p class="meta">{subtitle}</p>' if subtitle else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n"
        f"<body><header><h1>{_e(title)}</h1>{sub}</header>\n<main>{body}</main>\n<script>{_JS}</script></body></html>\n"
    )


def plan_page(file: str, graph: Graph, stage: Stage) -> str:
    """The page `fuseopt optimize --html` writes."""
    section = graph_section(0, file, graph, stage)
    return render_page(
        f"fuseopt plan: {graph.name}",
        section,
        subtitle=f"fuseopt {_e(__version__)} \u00b7 <code>{_e(file)}</code>",
    )


def ci_page(report: CiReport, sections: Sequence[str]) -> str:
    """The page `fuseopt ci --html` writes: a summary table, then one section per graph."""
    s = report.summary()
    head = ["graph", *report.checks, "kernels", "bytes"]
    rows, attrs = [], []
    for g in report.graphs:
        cells = [f'<td><a href="#g{g.index}">{_e(g.key)}</a></td>']
        for name in report.checks:
            c = g.check(name)
            status = c.status if c is not None else "-"
            cells.append(f'<td class="{_e(status)}">{_e(status)}</td>')
        m = g.metrics
        cells.append(
            f"<td>{m['kernels']}</td><td>{_e(human_bytes(m['bytes']))}</td>" if m else "<td>-</td><td>-</td>"
        )
        rows.append("".join(cells))
        attrs.append(f'data-status="{"passed" if g.ok else "failed"}"')
    table = [
        '<table class="summary"><thead><tr>',
        *(f"<th>{_e(h)}</th>" for h in head),
        "</tr></thead><tbody>",
    ]
    table += [f"<tr {a}>{r}</tr>" for r, a in zip(rows, attrs, strict=True)]
    table.append("</tbody></table>")
    verdict = "all checks passed" if report.ok else f"{s['graphs_failed']} of {s['graphs']} graphs failed"
    summary = (
        f'<p class="metrics"><b>{_e(verdict)}</b> \u00b7 {s["passed"]} checks passed, {s["failed"]} failed, '
        f"{s['errors']} errors, {s['skipped']} skipped \u00b7 {s['regressions']} regressions, "
        f"{s['improvements']} improvements</p>"
    )
    options = ", ".join(f"{k}={v}" for k, v in report.options.items())
    sub = f"fuseopt {_e(__version__)} \u00b7 {_e(options)}" + (
        f" \u00b7 baseline <code>{_e(report.baseline)}</code>" if report.baseline else ""
    )
    body = "<h2>Summary</h2>" + summary + "".join(table) + "".join(sections)
    return render_page(f"fuseopt ci: {s['graphs']} graphs", body, subtitle=sub)
