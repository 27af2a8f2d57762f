"""The plan as one self-contained HTML page: the graph as an SVG picture, kernels, decisions, Triton.

No network: CSS and JS are inline and a Content-Security-Policy forbids every fetch. The picture
(`fuseopt.report.picture`, a layered layout from `fuseopt.report.layout`) shows kernels as boxes
holding their nodes, graph inputs and outputs, and every buffer passed as a labelled edge; clicking
a kernel shows its details (`fuseopt.report.kernel_panel`) beside it. Opened with `#verify`, the
page checks its own picture in the browser (boxes disjoint, no edge through a box it does not join,
every edge drawn with its label) and writes the verdict as JSON into `#layout-verdict`. The same
graph and plan give byte-identical HTML. `fuseopt optimize --html F` writes `plan_page`;
`fuseopt ci --html F` writes `ci_page`, one section per graph (`graph_section`, rendered by the CI
workers).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from fuseopt import __version__
from fuseopt.errors import FuseoptError
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.plan import Plan
from fuseopt.report.escaping import html_text
from fuseopt.report.kernel_panel import kernel_panel
from fuseopt.report.picture import graph_svg
from fuseopt.report.picture import loops_text as _loops
from fuseopt.report.plan_text import human_bytes, options_text
from fuseopt.report.words import plural

if TYPE_CHECKING:
    from fuseopt.ci.model import CheckResult, CiReport
    from fuseopt.passes.pipeline import Stage

__all__ = [
    "ci_page",
    "graph_section",
    "graph_svg",
    "human_bytes",
    "kernel_source",
    "plan_page",
    "render_page",
]

# Above this many nodes the picture is left out (the tables still list everything).
MAX_PICTURE_NODES = 2000
# Rows shown per table (decisions, rejections); plan.json has them all.
MAX_ROWS = 1000


def _e(text: object) -> str:
    """Every piece of text on the page goes through here (input text included): HTML-escaped,
    quotes too (attribute values are always double-quoted), unprintable characters escaped."""
    return html_text(text)


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
        f"<b>{plural(m['kernels'], 'kernel')}</b> (unfused {m['unfused_kernels']}) \u00b7 "
        f"<b>{_e(human_bytes(m['bytes']))}</b> moved (unfused {_e(human_bytes(m['unfused_bytes']))}) \u00b7 "
        + _e(options_text(plan.options))
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
    src, why = kernel_source(stage.graph, plan) if triton else (None, "")
    if len(graph.nodes) <= MAX_PICTURE_NODES:
        legend = (
            '<figcaption><span class="sw pointwise"></span>pointwise <span class="sw reduction"></span>reduction '
            '<span class="sw extern"></span>extern <span class="sw template"></span>template kernel \u00b7 '
            "ovals: graph inputs and outputs \u00b7 dashed edges: a buffer through memory, labelled with its "
            "bytes; solid: a value passed inside a kernel \u00b7 click a kernel for its nodes, why it did not "
            "fuse with its neighbours, and its Triton source</figcaption>"
        )
        panel = kernel_panel(graph, stage.graph, plan, src)
        parts.append(
            f'<figure class="picture"><div class="view"><div class="scroll">'
            f"{graph_svg(graph, plan, prefix, stage.graph)}</div>"
            f'<aside class="panel" id="{prefix}-panel">{panel}</aside></div>{legend}</figure>'
        )
    else:
        parts.append(f'<p class="note">No picture: more than {MAX_PICTURE_NODES} nodes.</p>')
    parts.append(_plan_tables(plan, stage.graph))
    if triton:
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
figure.picture{margin:8px 0}.view{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.scroll{flex:0 1 auto;max-width:100%;overflow:auto;max-height:80vh;border:1px solid var(--line);border-radius:6px;background:#fff}
.panel{flex:1 1 360px;min-width:320px;max-height:80vh;overflow:auto;border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--alt)}
.panel h4{margin:2px 0 4px;font-size:14px}.panel h5{margin:10px 0 4px;font-size:13px}.panel .hint{color:var(--muted)}.panel table{font-size:12px}
.panel ul{padding-left:18px;margin:4px 0}.kmeta,.kio{margin:4px 0;font-size:12px}figcaption{color:var(--muted);font-size:12px;margin-top:4px}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 3px 0 8px;vertical-align:middle}.sw.pointwise{background:var(--pw)}.sw.reduction{background:var(--red)}.sw.extern{background:var(--ext)}.sw.template{background:var(--tpl)}
svg.dag text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}svg.dag .khead{font-size:11px;font-weight:600;fill:#24292f}svg.dag .kloops{font-size:11px;fill:#59636e}
svg.dag .cluster{fill:rgba(37,99,235,.06);stroke:var(--pw);stroke-width:1.5}svg.dag .kind-reduction .cluster{fill:rgba(217,119,6,.07);stroke:var(--red)}
svg.dag .kind-extern .cluster{fill:rgba(107,114,128,.08);stroke:var(--ext)}svg.dag .kind-template .cluster{fill:rgba(124,58,237,.07);stroke:var(--tpl)}
svg.dag .kernel{cursor:pointer}svg.dag .kernel.hl .cluster{stroke-width:3;fill:rgba(255,212,0,.18)}svg.dag .kernel.sel .cluster{stroke-width:3.5}
svg.dag .node rect{fill:#fff;stroke:#8c959f}svg.dag .nname{font-size:12px;fill:#1f2328}svg.dag .nsub{font-size:11px;fill:#59636e}
svg.dag .io rect{fill:#f0fff4;stroke:var(--ok)}svg.dag .io.output rect{fill:#fff5f5;stroke:var(--bad)}
svg.dag .elabel rect{fill:none;stroke:none}svg.dag .elabel text{font-size:11px;fill:#57606a}
svg.dag .edge{fill:none;stroke:#8c959f;stroke-width:1.3;stroke-dasharray:5 3}svg.dag .edge.io{stroke:#9fb8a6}svg.dag .edge.inner{stroke:#24292f;stroke-dasharray:none}svg.dag .arrowhead{fill:#57606a}
table.summary td.passed{color:var(--ok)}table.summary td.failed,table.summary td.error{color:var(--bad);font-weight:600}table.summary td.skipped{color:var(--muted)}
"""

_JS = """
(function(){
  document.querySelectorAll('section.graph').forEach(function(sec){
    function mark(k,on){sec.querySelectorAll('[data-kernel="'+CSS.escape(k)+'"]').forEach(function(e){e.classList.toggle('hl',on);});}
    function show(k){
      sec.querySelectorAll('.kdetail').forEach(function(d){d.hidden=d.getAttribute('data-detail')!==k;});
      sec.querySelectorAll('.panel .hint').forEach(function(h){h.hidden=true;});
      sec.querySelectorAll('svg.dag .kernel').forEach(function(g){g.classList.toggle('sel',g.getAttribute('data-kernel')===k);});
    }
    sec.querySelectorAll('[data-kernel]').forEach(function(el){
      var k=el.getAttribute('data-kernel');
      el.addEventListener('mouseenter',function(){mark(k,true);});
      el.addEventListener('mouseleave',function(){mark(k,false);});
      el.addEventListener('click',function(){
        show(k);
        if(el.tagName.toLowerCase()==='tr'){var p=sec.querySelector('.panel');if(p){p.scrollIntoView({block:'nearest'});}}
      });
    });
  });
  // #verify: the picture checks itself as drawn (boxes disjoint and inside their kernels, no edge
  // through a box it does not join, every edge from box to box with its buffer's label).
  function verify(){
    var out={graphs:[]};
    function inside(b,p,m){return p.x>b.x+m&&p.x<b.x+b.w-m&&p.y>b.y+m&&p.y<b.y+b.h-m;}
    function meet(a,b){return a.x+0.5<b.x+b.w&&b.x+0.5<a.x+a.w&&a.y+0.5<b.y+b.h&&b.y+0.5<a.y+a.h;}
    // Points every ~2 px along a path of M, L and C commands (the only ones the picture draws).
    function samples(d){var t=d.match(/[MLC]|-?[0-9.]+/g)||[],out=[],cur=null,i=0;
      function num(){return parseFloat(t[i++]);}
      while(i<t.length){var c=t[i++];
        if(c==='M'){cur={x:num(),y:num()};out.push(cur);}
        else if(c==='L'){var q={x:num(),y:num()},n=Math.max(1,Math.ceil(Math.hypot(q.x-cur.x,q.y-cur.y)/2));
          for(var j=1;j<=n;j++){out.push({x:cur.x+(q.x-cur.x)*j/n,y:cur.y+(q.y-cur.y)*j/n});}cur=q;}
        else if(c==='C'){var a={x:num(),y:num()},b={x:num(),y:num()},e={x:num(),y:num()};
          var m=Math.max(2,Math.ceil((Math.hypot(a.x-cur.x,a.y-cur.y)+Math.hypot(b.x-a.x,b.y-a.y)+Math.hypot(e.x-b.x,e.y-b.y))/2));
          for(var j=1;j<=m;j++){var s=j/m,r=1-s;out.push({x:r*r*r*cur.x+3*r*r*s*a.x+3*r*s*s*b.x+s*s*s*e.x,
            y:r*r*r*cur.y+3*r*r*s*a.y+3*r*s*s*b.y+s*s*s*e.y});}cur=e;}
        else{return [];}}
      return out;}
    function touches(b,p){if(!b){return false;}var dx=Math.max(b.x-p.x,0,p.x-b.x-b.w),dy=Math.max(b.y-p.y,0,p.y-b.y-b.h);
      return dx<=1.5&&dy<=1.5&&!inside(b,p,1.5);}
    document.querySelectorAll('svg.dag').forEach(function(svg){
      var sec=svg.closest('section'),v={graph:sec?sec.getAttribute('data-graph'):'',boxes:[],edges:[],overlaps:[],crossings:[],outside:[]};
      var boxes=[],byId={};
      svg.querySelectorAll('[data-box]').forEach(function(r){var b=r.getBBox();
        var o={id:r.id,kind:r.getAttribute('data-box'),inn:r.getAttribute('data-in')||'',x:b.x,y:b.y,w:b.width,h:b.height};
        boxes.push(o);byId[o.id]=o;v.boxes.push([o.id,o.kind]);});
      for(var i=0;i<boxes.length;i++){for(var j=i+1;j<boxes.length;j++){
        if(boxes[i].inn===boxes[j].inn&&meet(boxes[i],boxes[j])){v.overlaps.push([boxes[i].id,boxes[j].id]);}}}
      boxes.forEach(function(b){var k=byId[b.inn];
        if(b.inn&&!(k&&b.x>=k.x&&b.y>=k.y&&b.x+b.w<=k.x+k.w&&b.y+b.h<=k.y+k.h)){v.outside.push(b.id);}});
      svg.querySelectorAll('path.edge').forEach(function(p){
        var e={from:p.getAttribute('data-from'),to:p.getAttribute('data-to'),buffer:p.getAttribute('data-buffer'),
               inner:p.getAttribute('data-in')||'',label:false};
        var lab=document.getElementById(p.getAttribute('data-label')||'');
        if(lab){var words=(lab.parentNode.textContent||'').split(/[^A-Za-z0-9_]+/);e.label=words.indexOf(e.buffer)>=0;}
        var pts=samples(p.getAttribute('d')||'');e.length=pts.length;
        e.starts=pts.length>1&&touches(byId[e.from],pts[0]);e.ends=pts.length>1&&touches(byId[e.to],pts[pts.length-1]);
        var own=lab?lab.id:'';
        var near=boxes.filter(function(b){return b.id!==e.inner&&b.id!==own;});
        for(var i=0;i<pts.length;i++){for(var k=0;k<near.length;k++){
          if(inside(near[k],pts[i],1)){v.crossings.push([e.from,e.to,e.buffer,near[k].id]);i=pts.length;break;}}}
        v.edges.push(e);
      });
      out.graphs.push(v);
    });
    var pre=document.createElement('pre');pre.id='layout-verdict';pre.textContent=JSON.stringify(out);document.body.appendChild(pre);
  }
  var pick=location.hash.match(/^#kernel=([A-Za-z0-9_]+)$/);  // a link to one kernel: the name is matched, never evaluated
  if(pick){var g=document.querySelector('svg.dag .kernel[data-kernel="'+pick[1]+'"]');if(g){g.dispatchEvent(new Event('click'));}}
  if(location.hash==='#verify'){verify();}
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
    verdict = (
        "all checks passed" if report.ok else f"{s['graphs_failed']} of {plural(s['graphs'], 'graph')} failed"
    )
    summary = (
        f'<p class="metrics"><b>{_e(verdict)}</b> \u00b7 {s["passed"]} checks passed, {s["failed"]} failed, '
        f"{plural(s['errors'], 'error')}, {s['skipped']} skipped \u00b7 {s['regressions']} regressions, "
        f"{s['improvements']} improvements</p>"
    )
    options = ", ".join(f"{k}={v}" for k, v in report.options.items())
    sub = f"fuseopt {_e(__version__)} \u00b7 {_e(options)}" + (
        f" \u00b7 baseline <code>{_e(report.baseline)}</code>" if report.baseline else ""
    )
    body = "<h2>Summary</h2>" + summary + "".join(table) + "".join(sections)
    return render_page(f"fuseopt ci: {plural(s['graphs'], 'graph')}", body, subtitle=sub)
