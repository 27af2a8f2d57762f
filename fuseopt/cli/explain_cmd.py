"""`fuseopt explain GRAPH A B`: do A and B share a kernel, and if not, why not?"""

from __future__ import annotations

import click

from fuseopt.cli.console import dump_json, shown, stdout
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
        stdout.print(f"[green]{shown(ex.a)} and {shown(ex.b)} share kernel {shown(ex.kernel_a)}[/]")
        for d in ex.decisions:
            pair = f"{d.pair[0]} + {d.pair[1]}"
            stdout.print(f"  step {d.step} (round {d.round}): fused {shown(pair)} ({shown(d.kind)})")
    else:
        stdout.print(
            f"[yellow]{shown(ex.a)} is in {shown(ex.kernel_a)}, {shown(ex.b)} is in {shown(ex.kernel_b)}: "
            "not fused[/]"
        )
        stdout.print(f"  reason: [bold]{shown(ex.reason)}[/]")
        stdout.print(f"  detail: {shown(ex.detail)}")
        if ex.suggestion:
            stdout.print(f"  to fuse them: {shown(ex.suggestion)}")
    for r in ex.reorders:
        stdout.print(f"  loop transformation: {shown(r)}")
