"""The CI report for people: a rich table (one row per graph, one column per check), then every
finding with its file:line:column, then a one-line verdict."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fuseopt.ci.model import ERROR, FAILED, PASSED, SKIPPED, CiReport, GraphResult
from fuseopt.report.escaping import shown
from fuseopt.report.html import human_bytes
from fuseopt.report.words import clip, plural

_CELL = {
    PASSED: "[green]ok[/]",
    FAILED: "[bold red]FAIL[/]",
    ERROR: "[bold red]ERROR[/]",
    SKIPPED: "[dim]skip[/]",
}
_BASELINE = {
    "same": "[green]same[/]",
    "improvement": "[cyan]better[/]",
    "changed": "[cyan]changed[/]",
    "new": "[yellow]new[/]",
    "regression": "[bold red]WORSE[/]",
}
# Columns for the table when stdout is not a terminal.
WIDE = 160
_LEVEL = {"error": "[bold red]error[/]", "warning": "[yellow]warning[/]", "note": "[cyan]note[/]"}


def _cell(g: GraphResult, check: str) -> str:
    c = g.check(check)
    if c is None:
        return "[dim]-[/]"
    if check == "baseline" and c.status in (PASSED, FAILED) and "status" in c.data:
        text = _BASELINE.get(str(c.data["status"]), shown(str(c.data["status"])))
        return text + (" [dim](updated)[/]" if c.data.get("updated") else "")
    return _CELL.get(c.status, shown(c.status))


def print_report(console: Console, report: CiReport) -> None:
    t = Table(title="fuseopt ci", title_justify="left")
    t.add_column("graph", overflow="fold")
    for check in report.checks:
        t.add_column(check)
    t.add_column("kernels", justify="right")
    t.add_column("bytes", justify="right")
    for g in report.graphs:
        m = g.metrics
        t.add_row(
            shown(g.key),
            *(_cell(g, c) for c in report.checks),
            str(m["kernels"]) if m else "-",
            human_bytes(m["bytes"]) if m else "-",
        )
    if console.is_terminal:
        console.print(t)
    else:  # a CI log: rich would assume 80 columns and fold the graph names
        wide = Console(
            file=console.file, width=max(console.width, WIDE), highlight=False, soft_wrap=True, emoji=False
        )
        wide.print(t)
    for g in report.graphs:
        for c in g.checks:
            for f in c.findings:
                console.print(
                    f"{_LEVEL[f.level]}: {shown(f.where())}: [bold]{shown(f.rule)}[/] ({shown(c.check)}): "
                    f"{shown(clip(f.text().splitlines()[0]))}"
                )
                rest = f.text().splitlines()[1:]
                if rest:
                    console.print(shown("\n".join("    " + clip(line) for line in rest)))
    for path in report.updated:
        console.print(f"[cyan]updated[/] {shown(path)}")
    s = report.summary()
    counts = (
        f"{plural(s['graphs'], 'graph')}, {plural(s['checks'], 'check')}: {s['passed']} passed, "
        f"{s['failed']} failed, {plural(s['errors'], 'error')}, {s['skipped']} skipped"
    )
    if report.baseline is not None:
        counts += f"; {plural(s['regressions'], 'regression')}, {plural(s['improvements'], 'improvement')}"
    if report.ok:
        console.print(f"[bold green]ok[/]: {counts}")
    else:
        console.print(
            f"[bold red]failed[/]: {s['graphs_failed']} of {plural(s['graphs'], 'graph')}; {counts}"
        )
