"""The plan for people: rich tables of kernels, decisions and rejections (every cell `shown`:
names and meta values print as text, whatever markup they hold).

A plan of more than `FULL_ROWS` table rows (a 1,000-node graph's is thousands) prints as a
summary: counts by kind and reason, the largest kernels, one example of each reason not to fuse;
refused pairs print grouped by the pair of kernels they fall between (`Plan.kernel_rejections`);
`full=True` (`fuseopt optimize --full`) prints every table whatever the size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from fuseopt.plan import Plan, rejected_summary
from fuseopt.report.escaping import shown
from fuseopt.report.words import on_off, plural

# Most table rows (kernels + loop transformations + decisions + rejections) printed in full by default.
FULL_ROWS = 200
# Kernels listed in a summary (the ones moving the most bytes).
SUMMARY_KERNELS = 10


def _loops(loops: tuple[tuple[str, int], ...]) -> str:
    return "(" + ", ".join(f"{v}={n}" for v, n in loops) + ")" if loops else "-"


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def options_text(options: Mapping[str, Any], sources: Mapping[str, str] | None = None) -> str:
    """`scoring stable, max fusion size 2 (from the graph's meta), loop order on`."""
    parts = []
    for key in ("scoring", "max_fusion_size", "loop_order"):
        if key not in options:
            continue
        value = options[key]
        text = on_off(value) if isinstance(value, bool) else str(value)
        where = (sources or {}).get(key)
        note = {"graph meta": " (from the graph's meta)", "command line": " (command line)"}.get(
            where or "", ""
        )
        parts.append(f"{key.replace('_', ' ')} {text}{note}")
    return ", ".join(parts)


def plan_rows(plan: Plan) -> int:
    return len(plan.kernels) + len(plan.reorders) + len(plan.decisions) + len(plan.kernel_rejections())


def print_plan(
    console: Console,
    plan: Plan,
    meta: Mapping[str, Any] | None = None,
    *,
    full: bool | None = None,
    sources: Mapping[str, str] | None = None,
) -> None:
    """Every table (`full=True`, or None for a plan of at most FULL_ROWS rows), else a summary."""
    m = plan.metrics
    console.print(
        f"[bold]{shown(plan.graph)}[/]: {plural(m['kernels'], 'kernel')}, {human_bytes(m['bytes'])} moved "
        f"(unfused: {plural(m['unfused_kernels'], 'kernel')}, {human_bytes(m['unfused_bytes'])})"
    )
    console.print(f"options: {shown(options_text(plan.options, sources))}")
    inductor = (meta or {}).get("inductor")
    if isinstance(inductor, Mapping) and "kernels" in inductor:
        ik = inductor.get(
            "kernel_count", len(inductor["kernels"]) if isinstance(inductor["kernels"], list) else "?"
        )
        ib = inductor.get("num_bytes_accessed", "?")
        console.print(
            f"Inductor: {shown(ik)} kernels, {shown(ib)} bytes; fuseopt: {m['kernels']}, {m['bytes']}"
        )
    if full or (full is None and plan_rows(plan) <= FULL_ROWS):
        _print_full(console, plan)
    else:
        _print_summary(console, plan)


def _print_full(console: Console, plan: Plan) -> None:
    t = Table(title="kernels", title_justify="left", show_lines=False)
    for col in ("kernel", "kind", "nodes", "loops", "reduce", "bytes"):
        t.add_column(col, overflow="fold")
    for k in plan.kernels:
        t.add_row(
            *map(shown, (k.name, k.kind, " ".join(k.nodes), _loops(k.loops), _loops(k.reduce))),
            f"{k.bytes:,}",
        )
    console.print(t)
    if plan.reorders:
        t = Table(title="loop transformations", title_justify="left")
        for col in ("node", "kind", "order", "detail"):
            t.add_column(col, overflow="fold")
        for r in plan.reorders:
            t.add_row(shown(r.node), shown(r.kind), shown(" ".join(map(str, r.order))), shown(r.detail))
        console.print(t)
    if plan.decisions:
        t = Table(title="decisions (in order)", title_justify="left")
        for col in ("step", "round", "pair", "kind", "score"):
            t.add_column(col, overflow="fold")
        for d in plan.decisions:
            score = ", ".join(f"{k}={_value(v)}" for k, v in d.score.items())
            t.add_row(
                str(d.step), str(d.round), shown(f"{d.pair[0]} + {d.pair[1]}"), shown(d.kind), shown(score)
            )
        console.print(t)
    grouped = plan.kernel_rejections()
    if grouped:
        t = Table(title="not fused (one row per pair of kernels)", title_justify="left")
        for col in ("kernels", "node pairs", "reasons", "first pair", "its detail"):
            t.add_column(col, overflow="fold")
        for g in grouped:
            t.add_row(
                shown(f"{g.kernels[0]} / {g.kernels[1]}"),
                str(g.pairs),
                shown(", ".join(f"{n} {code}" for code, n in g.reasons)),
                shown(f"{g.pair[0]} / {g.pair[1]}"),
                shown(f"{g.reason}: {g.detail}"),
            )
        console.print(t)


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list | tuple):
        return "(" + ", ".join(_value(x) for x in v) + ")"
    return str(v)


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _print_summary(console: Console, plan: Plan) -> None:
    kinds = Counter(k.kind for k in plan.kernels)
    console.print(f"kernels: {shown(_counts(kinds))}")
    top = sorted(range(len(plan.kernels)), key=lambda i: (-plan.kernels[i].bytes, i))[:SUMMARY_KERNELS]
    t = Table(title=f"the {len(top)} kernels moving the most bytes", title_justify="left")
    for col in ("kernel", "kind", "nodes", "loops", "reduce", "bytes"):
        t.add_column(col, overflow="fold")
    for i in top:
        k = plan.kernels[i]
        nodes = " ".join(k.nodes[:6]) + (f" ... ({len(k.nodes)} in all)" if len(k.nodes) > 6 else "")
        t.add_row(*map(shown, (k.name, k.kind, nodes, _loops(k.loops), _loops(k.reduce))), f"{k.bytes:,}")
    console.print(t)
    if plan.reorders:
        console.print(
            f"loop transformations: {plural(len(plan.reorders), 'node')} "
            f"({shown(_counts(Counter(r.kind for r in plan.reorders)))})"
        )
    if plan.decisions:
        console.print(
            f"decisions: {plural(len(plan.decisions), 'fusion')} "
            f"({shown(_counts(Counter(d.kind or 'fuse' for d in plan.decisions)))})"
        )
    summary = rejected_summary(plan.kernels, plan.rejected)
    if summary:
        pairs = sum(v["pairs"] for v in summary.values())
        t = Table(
            title=f"not fused: {plural(pairs, 'node pair')} between "
            f"{plural(len(plan.kernel_rejections()), 'pair')} of kernels, by reason",
            title_justify="left",
        )
        t.add_column("reason", no_wrap=True)  # a code: searchable only when whole
        for col in ("node pairs", "kernel pairs", "first pair", "its detail"):
            t.add_column(col, overflow="fold")
        for reason, row in summary.items():
            first = row["examples"][0]
            kernels = f"{first['kernels'][0]} / {first['kernels'][1]}"
            t.add_row(
                shown(reason),
                str(row["pairs"]),
                str(row["kernel_pairs"]),
                shown(f"{first['pair'][0]} / {first['pair'][1]} ({kernels})"),
                shown(first["detail"]),
            )
        console.print(t)
    console.print(
        f"(a summary of {plural(plan_rows(plan), 'row')}: --full prints every table, --format json the whole plan)"
    )
