"""`fuseopt explain GRAPH A B`: do A and B share a kernel, and if not, why not?"""

from __future__ import annotations

import click
from rich.markup import escape

from fuseopt.cli.console import dump_json, stdout
from fuseopt.cli.main import cli
from fuseopt.cli.options import options_from, planning_options
from fuseopt.io.load import load_graph
from fuseopt.passes.explain import explain
from fuseopt.passes.pipeline import optimize


@cli.command("explain")
@click.argument("graph", type=click.Path(dir_okay=False))
@click.argument("node_a")
@click.argument("node_b")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@planning_options
def explain_cmd(
    graph: str, node_a: str, node_b: str, fmt: str, scoring: str, max_fusion_size: int, no_loop_order: bool
) -> None:
    """Say whether NODE_A and NODE_B share a kernel; if not, the first failing condition and a fix."""
    g = load_graph(graph)
    opts = options_from(scoring, max_fusion_size, no_loop_order)
    ex = explain(optimize(g, opts), node_a, node_b, opts)
    if fmt == "json":
        click.echo(dump_json(ex.to_json()), nl=False)
        return
    if ex.fused:
        stdout.print(f"[green]{ex.a} and {ex.b} share kernel {ex.kernel_a}[/]")
        for d in ex.decisions:
            stdout.print(f"  step {d.step} (round {d.round}): fused {d.pair[0]} + {d.pair[1]} ({d.kind})")
    else:
        stdout.print(f"[yellow]{ex.a} is in {ex.kernel_a}, {ex.b} is in {ex.kernel_b}: not fused[/]")
        stdout.print(f"  reason: [bold]{ex.reason}[/]")
        stdout.print(f"  detail: {escape(ex.detail)}")
        if ex.suggestion:
            stdout.print(f"  to fuse them: {escape(ex.suggestion)}")
    for r in ex.reorders:
        stdout.print(f"  loop transformation: {escape(r)}")
