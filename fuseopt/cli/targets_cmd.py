"""`fuseopt targets [NAME]`: the GPUs code generation knows, their facts, and a target's tuning."""

from __future__ import annotations

import dataclasses
from typing import Any

import click
from rich.table import Table

from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, shown, stdout
from fuseopt.cli.main import cli
from fuseopt.targets import DEFAULT, Target, detect, get, names
from fuseopt.targets.base import doc

FORMAT = "fuseopt-targets/1"


@cli.command("targets", short_help=SUMMARIES["targets"])
@click.argument("name", required=False, type=click.Choice(names()))
@click.option(
    "--detect",
    "detect_gpu",
    is_flag=True,
    help="Also say which target the GPU torch sees here maps to (imports torch); none without a GPU.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def targets_cmd(name: str | None, detect_gpu: bool, fmt: str) -> None:
    """List the GPU targets of `optimize --target` and `bench --target` with their hardware facts;
    with NAME, also every tuned constant of that target: its value, why, and the results file
    that shows it."""
    shown_targets = [get(name)] if name else [get(n) for n in names()]
    found = detect() if detect_gpu else None
    if fmt == "json":
        report: dict[str, Any] = {
            "format": FORMAT,
            "default": DEFAULT.name,
            "targets": [t.to_json() for t in shown_targets],
        }
        if detect_gpu:
            report["detected"] = None if found is None else found.to_json()
        click.echo(dump_json(report), nl=False)
        return
    stdout.print(_facts_table(shown_targets if found is None else [*shown_targets, found]))
    if detect_gpu:
        what = "no GPU" if found is None else f"{found.name}: {found.description}"
        stdout.print(f"detected: {shown(what)}")
    if name:
        stdout.print(_tuning_table(get(name)))


def _size(n: int) -> str:
    """Bytes as KiB or MiB where whole."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return str(n)


def _fact(t: Target, field: str) -> str:
    value = getattr(t, field)
    if field in ("shared_memory_per_block", "shared_memory_per_multiprocessor", "l2_bytes"):
        return _size(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if field == "compute_capability":
        return ".".join(map(str, value))
    if field == "device_names":
        return ", ".join(value)
    return str(value)


def _facts_table(targets: list[Target]) -> Table:
    t = Table(title=f"GPU targets (default {DEFAULT.name})", title_justify="left")
    t.add_column("fact")
    for target in targets:
        t.add_column(shown(target.name), overflow="fold")
    t.add_column("meaning", overflow="fold")
    facts = [f.name for f in dataclasses.fields(Target) if f.name not in ("name", "tuning", "provenance")]
    for field in facts:
        t.add_row(field, *(shown(_fact(x, field)) for x in targets), shown(doc(Target, field)))
    t.add_row(
        "tuning", *(shown(_tuned_on(x)) for x in targets), "every tuned constant (`fuseopt targets NAME`)"
    )
    return t


def _tuned_on(target: Target) -> str:
    on = sorted({w.measured_on for _, w in target.provenance})
    return "measured on it" if on == [target.name] else f"{', '.join(on)}'s, not measured on it"


def _tuning_table(target: Target) -> Table:
    t = Table(title=f"tuned constants of {shown(target.name)}", title_justify="left")
    for col in ("constant", "value", "why", "results"):
        t.add_column(col, overflow="fold")
    for name, why in target.provenance:
        t.add_row(name, str(getattr(target.tuning, name)), shown(why.why), shown(why.results))
    return t
