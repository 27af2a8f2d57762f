"""Rich text for people: plan comparisons (diff-jit-aot, check-determinism) and progress bars.

Names come from graph and plan files: every one is `shown` (printed as text, markup escaped)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fuseopt.aot.compare import CanonDecision, Comparison, KernelRef
from fuseopt.report.escaping import shown


def progress(console: Console) -> Progress:
    """A transient bar on `console` (stderr in the CLI, so JSON on stdout stays clean)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


def score_text(score: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in score.items())


def _decision_row(label: str, d: CanonDecision | None) -> tuple[str, ...]:
    if d is None:
        return (label, "-", "-", "(no such fusion)", "")
    return (label, str(d.step), str(d.round), f"{d.pair[0]} + {d.pair[1]}", score_text(d.score))


def _kernels_table(title: str, ks: tuple[KernelRef, ...]) -> Table:
    t = Table(title=shown(title), title_justify="left")
    t.add_column("kernel")
    t.add_column("nodes", overflow="fold")
    for k in ks:
        t.add_row(shown(k.name), shown(" ".join(k.nodes)))
    return t


def print_comparison(
    console: Console, cmp: Comparison, labels: tuple[str, str], *, b_note: str = "", max_orders: int = 8
) -> None:
    """The verdict, the first divergent decision (both scores, the flipped term, why), node-order
    changes, and the kernels only one side has. `b_note` qualifies kernels only side b has; long
    lists are cut after `max_orders` entries (JSON output keeps them all)."""
    la, lb = labels
    if cmp.identical:
        console.print(f"[green]identical[/]: {shown(la)} and {shown(lb)} plans have the same kernels")
    else:
        console.print(f"[bold red]divergent[/]: the {shown(la)} and {shown(lb)} plans differ")
    if cmp.unmatched_a or cmp.unmatched_b:
        console.print(
            f"[yellow]nodes only in {shown(la)}[/]: {shown(' '.join(cmp.unmatched_a) or '-')}; "
            f"[yellow]only in {shown(lb)}[/]: {shown(' '.join(cmp.unmatched_b) or '-')} "
            "(if some are the same node under a new name, say so with --rename OLD=NEW)"
        )
    d = cmp.divergence
    if d is not None:
        heads = {
            "fusion": "the first fusion only one side makes",
            "score": "same fusions, first one scored differently",
            "order": "same fusions, first one applied in another order",
        }
        console.print(f"first divergent decision ({shown(heads.get(d.kind, d.kind))}):")
        t = Table(show_header=True)
        for col in ("pass", "step", "round", "pair", "score"):
            t.add_column(col, overflow="fold")
        t.add_row(*map(shown, _decision_row(la, d.a)))
        t.add_row(*map(shown, _decision_row(lb, d.b)))
        console.print(t)
        what = "score term that flipped" if d.flip is not None else "why"
        console.print(f"{what}: [bold]{shown(d.summary)}[/]")
        for line in d.explanation:
            console.print(f"  {shown(line)}")
    if cmp.order_changes:
        listed = cmp.order_changes[:max_orders]
        moved = ", ".join(f"{n} {x}->{y}" for n, x, y in listed)
        if len(cmp.order_changes) > len(listed):
            moved += f", ... ({len(cmp.order_changes) - len(listed)} more)"
        console.print(f"node order numbers ({shown(la)}->{shown(lb)}): {shown(moved)}")
    if cmp.only_in_a:
        console.print(_kernels_table(f"kernels only in {la}", cmp.only_in_a))
    if cmp.only_in_b:
        console.print(_kernels_table(f"kernels only in {lb}{b_note}", cmp.only_in_b))
    if cmp.renamed:
        names = ", ".join(f"{x}->{y} ({' '.join(s)})" for s, x, y in cmp.renamed[:max_orders])
        if len(cmp.renamed) > max_orders:
            names += f", ... ({len(cmp.renamed) - max_orders} more)"
        note = "" if cmp.strict_names else " (kernel names are positional; not counted as divergence)"
        console.print(f"same kernels, other names ({shown(la)}->{shown(lb)}): {shown(names)}{note}")
