"""`fuseopt validate FILE...`: check graph files against docs/format.md and report every error found."""

from __future__ import annotations

from typing import cast

import click

from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, print_diagnostics, shown, stdout
from fuseopt.cli.main import cli
from fuseopt.errors import EXIT_BAD_INPUT, Diagnostic, InputError
from fuseopt.io.load import load_graph
from fuseopt.report.words import plural


@cli.command("validate", short_help=SUMMARIES["validate"])
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def validate(files: tuple[str, ...], fmt: str) -> None:
    """Validate graph files; exit 2 if any is invalid (all errors of all files are reported)."""
    results: list[dict[str, object]] = []
    all_diags: list[Diagnostic] = []
    for f in files:
        try:
            g = load_graph(f)
        except InputError as err:
            all_diags.extend(err.diagnostics)
            results.append({"file": f, "valid": False, "errors": [d.to_json() for d in err.diagnostics]})
            continue
        results.append(
            {"file": f, "valid": True, "graph": g.name, "nodes": len(g.nodes), "buffers": len(g.buffers)}
        )
    if fmt == "json":
        click.echo(dump_json({"format": "fuseopt-validate/1", "results": results}), nl=False)
    else:
        for r in results:
            if r["valid"]:
                stdout.print(
                    f"[green]ok[/] {shown(r['file'])}: graph {shown(r['graph'])}, {plural(cast(int, r['nodes']), 'node')}, "
                    f"{plural(cast(int, r['buffers']), 'buffer')}"
                )
        print_diagnostics(all_diags)
    if all_diags:
        raise SystemExit(EXIT_BAD_INPUT)
