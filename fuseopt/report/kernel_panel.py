"""What the page shows beside the picture for a clicked kernel: its loops and bytes, the buffers it
reads and writes, its nodes, why it did not fuse with its neighbours, and its Triton source.

One hidden block per kernel, rendered here (every input string through `html_text`); the page's
script only shows and hides them, so no input text ever passes through JavaScript. The reasons
come from the plan's `rejected` list; a neighbour with no recorded rejection gets the `fuseopt
explain` command that says why. The source is cut out of the generated module by the comments the
code generator writes (`# plan kernel kN:` above a Triton kernel, `# kN:` above its launch).
"""

from __future__ import annotations

import re

from fuseopt.ir.expr import to_text
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.plan import Plan, Rejection
from fuseopt.report.escaping import html_text as _e
from fuseopt.report.picture import PlanEdge, kernel_head, loops_text, plan_edges

MAX_REASONS = 40  # per kernel; the tables and plan.json have them all

_JIT = re.compile(r"# plan kernel ([A-Za-z_][A-Za-z0-9_]*):")
_LAUNCH = re.compile(r" {4}# ([A-Za-z_][A-Za-z0-9_]*): ")


def split_source(src: str) -> dict[str, str]:
    """Kernel name -> its Triton kernel (if any) and its launch in `call()`, from the module text."""
    jit: dict[str, list[str]] = {}
    launch: dict[str, list[str]] = {}
    cur: list[str] | None = None
    seen_def = in_call = False
    for line in src.splitlines():
        if line.startswith("def call("):
            in_call, cur = True, None
            continue
        if in_call:
            m = _LAUNCH.match(line)
            if m:
                cur = launch.setdefault(m.group(1), [])
            elif not line.strip():
                cur = None
            if cur is not None:
                cur.append(line[4:])
            continue
        m = _JIT.match(line)
        if m:
            cur, seen_def = jit.setdefault(m.group(1), []), False
        elif cur is not None and line and not line[0].isspace() and seen_def and not line.startswith(")"):
            cur = None
        if cur is not None:
            seen_def = seen_def or line.startswith("def ")
            cur.append(line)
    out = {}
    for k in dict.fromkeys([*jit, *launch]):
        text = "\n".join(jit.get(k, [])).rstrip()
        if k in launch:
            text += ("\n\n" if text else "") + "# in call():\n" + "\n".join(launch[k]).rstrip()
        out[k] = text
    return out


def _ref(ref: str) -> str:
    kind, name = ref.split(":", 1)
    return f"<code>{_e(name)}</code>" + ("" if kind == "kernel" else f" ({_e(kind)})")


def _io(edges: list[PlanEdge], kernel: str) -> str:
    me = f"kernel:{kernel}"
    reads = [f"<code>{_e(e.buffer)}</code> from {_ref(e.src)}" for e in edges if e.dst == me]
    writes = [f"<code>{_e(e.buffer)}</code> to {_ref(e.dst)}" for e in edges if e.src == me]
    return (
        f'<p class="kio"><b>reads</b> {", ".join(reads) or "nothing from memory"}<br>'
        f"<b>writes</b> {', '.join(writes) or 'nothing read outside'}</p>"
    )


def _nodes_table(graph: Graph, transformed: Graph | None, names: tuple[str, ...]) -> str:
    rows = []
    for m in names:
        if not graph.has_node(m):
            continue
        n = graph.node(m)
        after = transformed.node(m) if transformed is not None and transformed.has_node(m) else n
        if isinstance(n, ComputeNode) and isinstance(after, ComputeNode):
            loops = loops_text((lv.name, lv.size) for lv in after.loops)
            if after.reduce:
                loops += " reduce " + loops_text((lv.name, lv.size) for lv in after.reduce)
            what = f"{to_text(after.store)} = {to_text(after.value)}"
        else:
            loops, what = (
                "-",
                f"{getattr(n, 'output', '')} = {getattr(n, 'op', '')}({', '.join(n.read_buffers())})",
            )
        rows.append(
            f"<tr><td><code>{_e(m)}</code></td><td>{_e(n.kind)}</td><td>{_e(loops)}</td>"
            f"<td><code>{_e(what)}</code></td></tr>"
        )
    return (
        '<table class="knodes"><thead><tr><th>node</th><th>kind</th><th>loops (after the loop-order '
        f"passes)</th><th>computes</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _reasons(
    kernel: str,
    neighbours: list[str],
    by_other: dict[str, list[Rejection]],
    first_pair: dict[str, tuple[str, str]],
) -> str:
    others = neighbours + [k for k in by_other if k not in neighbours]
    items, shown = [], 0
    for other in others:
        rs = by_other.get(other, [])
        tag = " <small>(neighbour)</small>" if other in neighbours else ""
        if not rs:
            a, b = first_pair[other]
            items.append(
                f"<li><code>{_e(other)}</code>{tag}: no rejection recorded (never a candidate pair, or "
                f"each was fused elsewhere first); <code>fuseopt explain GRAPH {_e(a)} {_e(b)}</code> says why</li>"
            )
            continue
        lines = []
        for r in rs:
            if shown >= MAX_REASONS:
                break
            shown += 1
            lines.append(
                f"<li><code>{_e(r.pair[0])}</code> / <code>{_e(r.pair[1])}</code> "
                f'<span class="reason">{_e(r.reason)}</span> {_e(r.detail)}</li>'
            )
        if lines:
            items.append(f"<li><code>{_e(other)}</code>{tag}<ul>{''.join(lines)}</ul></li>")
    total = sum(len(v) for v in by_other.values())
    more = f'<p class="note">{total - shown} more in the table below.</p>' if total > shown else ""
    if not items:
        return '<p class="note">No neighbours and no rejected pair.</p>'
    return f'<ul class="kreasons">{"".join(items)}</ul>{more}'


def kernel_panel(graph: Graph, transformed: Graph | None, plan: Plan, source: str | None) -> str:
    """The hidden detail block of every kernel, and the hint shown before any is clicked."""
    where = {m: k.name for k in plan.kernels for m in k.nodes}
    edges = plan_edges(graph, plan)
    neighbours: dict[str, list[str]] = {k.name: [] for k in plan.kernels}
    first_pair: dict[str, dict[str, tuple[str, str]]] = {k.name: {} for k in plan.kernels}
    writer = graph.writer()
    # Kernel pairs joined by a buffer, and one node pair of each for explain; in plan order.
    members = [graph.node(m) for k in plan.kernels for m in k.nodes if graph.has_node(m)]
    for n in members:
        for b in n.read_buffers():
            w = writer.get(b)
            if w is not None and w in where and where[w] != where[n.name]:
                ka, kb = where[w], where[n.name]
                for x, y, pair in ((ka, kb, (w, n.name)), (kb, ka, (n.name, w))):
                    if y not in neighbours[x]:
                        neighbours[x].append(y)
                        first_pair[x][y] = pair
    by_other: dict[str, dict[str, list[Rejection]]] = {k.name: {} for k in plan.kernels}
    for r in plan.rejected:
        ra, rb = where.get(r.pair[0]), where.get(r.pair[1])
        if ra is None or rb is None or ra == rb:
            continue
        by_other[ra].setdefault(rb, []).append(r)
        by_other[rb].setdefault(ra, []).append(r)
    order = {k.name: i for i, k in enumerate(plan.kernels)}
    sources = split_source(source) if source is not None else {}
    blocks = []
    for k in plan.kernels:
        head, loops = kernel_head(k)
        nb = sorted(neighbours[k.name], key=order.__getitem__)
        others = dict(sorted(by_other[k.name].items(), key=lambda kv: order[kv[0]]))
        src = sources.get(k.name)
        code = (
            f"<pre><code>{_e(src)}</code></pre>"
            if src
            else f'<p class="note">{"no generated source for this kernel" if source is not None else "no generated module"}</p>'
        )
        blocks.append(
            f'<div class="kdetail" data-detail="{_e(k.name)}" hidden><h4>{_e(head)}</h4>'
            f'<p class="kmeta">{_e(loops)} \u00b7 loops {_e(loops_text(k.loops))} \u00b7 reduce '
            f"{_e(loops_text(k.reduce))} \u00b7 {k.bytes:,} bytes moved</p>"
            + _io(edges, k.name)
            + "<h5>Nodes</h5>"
            + _nodes_table(graph, transformed, k.nodes)
            + "<h5>Not fused with</h5>"
            + _reasons(k.name, nb, others, first_pair[k.name])
            + "<h5>Triton</h5>"
            + code
            + "</div>"
        )
    hint = (
        '<p class="hint">Click a kernel to see its nodes, why it did not fuse with its neighbours '
        "and its Triton source.</p>"
    )
    return hint + "".join(blocks)
