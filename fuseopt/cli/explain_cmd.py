"""`fuseopt explain GRAPH A B`: do A and B share a kernel, and if not, why not?

Node names are checked here first: an unknown one is an error naming the file, with the nearest
node names (difflib) as suggestions; A and B must be two different nodes.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

import click

from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, shown, stdout
from fuseopt.cli.main import cli
from fuseopt.cli.options import graph_options, planning_options
from fuseopt.errors import Diagnostic, InputError
from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.passes.explain import explain
from fuseopt.passes.pipeline import optimize
from fuseopt.passes.speculate import cpus
from fuseopt.report.plan_text import options_text

EXPLAIN_FORMAT = "fuseopt-explain/1"
# Nearest node names suggested for an unknown one.
SUGGESTIONS = 3


def check_pair(graph: Graph, path: str, a: str, b: str) -> None:
    """InputError (exit 2) naming `path` for an unknown node (with the nearest names) or A == B."""
    names = [n.name for n in graph.nodes]
    diags = []
    for which, name in (("NODE_A", a), ("NODE_B", b)):
        if graph.has_node(name):
            continue
        near = difflib.get_close_matches(name, names, n=SUGGESTIONS, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
        diags.append(
            Diagnostic(
                f"{which}: no node named {name!r} in graph {graph.name!r} ({len(names)} nodes){hint}",
                "/nodes",
                path,
                code="name",
            )
        )
    if not diags and a == b:
        diags.append(
            Diagnostic(
                f"NODE_A and NODE_B are both {a!r}: name two different nodes", "/nodes", path, code="usage"
            )
        )
    if diags:
        raise InputError(diags)


@cli.command("explain", short_help=SUMMARIES["explain"])
@click.argument("graph", type=click.Path(dir_okay=False))
@click.argument("node_a")
@click.argument("node_b")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--jobs",
    type=click.IntRange(1, 256),
    default=None,
    help="Processes planning may use (default: the CPUs this process may run on), as for optimize; "
    "the plan, and so the answer, is the same for any value.",
)
@planning_options
def explain_cmd(
    graph: str,
    node_a: str,
    node_b: str,
    fmt: str,
    jobs: int | None,
    scoring: str | None,
    max_fusion_size: int | None,
    no_loop_order: bool | None,
) -> None:
    """Say whether NODE_A and NODE_B share a kernel; if not, the first failing condition and a fix."""
    g = load_graph(graph)
    check_pair(g, graph, node_a, node_b)
    resolved = graph_options(g, scoring, max_fusion_size, no_loop_order)
    opts = dataclasses.replace(resolved.options, jobs=jobs or cpus())
    ex = explain(optimize(g, opts), node_a, node_b, opts)
    if fmt == "json":
        doc: dict[str, Any] = {"format": EXPLAIN_FORMAT, "graph": g.name, "options": opts.to_json()}
        doc.update(ex.to_json())
        click.echo(dump_json(doc), nl=False)
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
    stdout.print(f"  options: {shown(options_text(opts.to_json(), resolved.sources))}")
