"""The plan for people: rich tables of kernels, decisions and rejections (every cell `shown`:
names and meta values print as text, whatever markup they hold)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from fuseopt.plan import Plan
from fuseopt.report.escaping import shown


def _loops(loops: tuple[tuple[str, int], ...]) -> str:
    return "(" + ", ".join(f"{v}={n}" for v, n in loops) + ")" if loops else "-"


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def print_plan(console: Console, plan: Plan, meta: Mapping[str, Any] | None = None) -> None:
    m = plan.metrics
    console.print(
        f"[bold]{shown(plan.graph)}[/]: {m['kernels']} kernels, {human_bytes(m['bytes'])} moved "
        f"(unfused: {m['unfused_kernels']} kernels, {human_bytes(m['unfused_bytes'])}); "
        f"scoring={shown(plan.options.get('scoring'))}, loop_order={shown(plan.options.get('loop_order'))}"
    )
    inductor = (meta or {}).get("inductor")
    if isinstance(inductor, Mapping) and "kernels" in inductor:
        ik = inductor.get(
            "kernel_count", len(inductor["kernels"]) if isinstance(inductor["kernels"], list) else "?"
        )
        ib = inductor.get("num_bytes_accessed", "?")
        console.print(
            f"Inductor: {shown(ik)} kernels, {shown(ib)} bytes; fuseopt: {m['kernels']}, {m['bytes']}"
        )
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
            t.add_row(shown(r.node), shown(r.kind), shown(list(r.order)), shown(r.detail))
        console.print(t)
    if plan.decisions:
        t = Table(title="decisions (in order)", title_justify="left")
        for col in ("step", "round", "pair", "kind", "score"):
            t.add_column(col, overflow="fold")
        for d in plan.decisions:
            score = ", ".join(f"{k}={v}" for k, v in d.score.items())
            t.add_row(
                str(d.step), str(d.round), shown(f"{d.pair[0]} + {d.pair[1]}"), shown(d.kind), shown(score)
            )
        console.print(t)
    if plan.rejected:
        t = Table(title="not fused", title_justify="left")
        for col in ("pair", "reason", "detail"):
            t.add_column(col, overflow="fold")
        for rej in plan.rejected:
            t.add_row(shown(f"{rej.pair[0]} / {rej.pair[1]}"), shown(rej.reason), shown(rej.detail))
        console.print(t)
