"""`fuseopt diff-jit-aot`: would AOT compilation's second scheduler pass fuse like its first?"""

from __future__ import annotations

from collections.abc import Mapping

import click

from fuseopt.aot.diff import LABELS, DiffReport, diff_finalized, diff_graphs, diff_plans
from fuseopt.aot.finalize import FINALIZE_MODES
from fuseopt.aot.planfile import load_plan
from fuseopt.aot.render import print_comparison
from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, shown, stdout
from fuseopt.cli.main import cli
from fuseopt.cli.options import graph_options, planning_options
from fuseopt.errors import EXIT_CHECK_FAILED, Diagnostic, InputError
from fuseopt.io.load import load_graph
from fuseopt.report.plan_text import options_text
from fuseopt.report.words import plural

SHOW_TEMPLATES = 8


def _renames(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, p in enumerate(pairs):
        old, sep, new = p.partition("=")
        if not sep or not old or not new:
            raise InputError(
                [Diagnostic(f"--rename expects OLD=NEW, got {p!r}", f"/rename/{i}", "<command line>")]
            )
        out[old] = new
    return out


def _print(report: DiffReport, sources: Mapping[str, str] | None) -> None:
    if report.finalized is not None:
        fin = report.finalized
        stdout.print(
            f"[bold]{shown(report.jit.graph)}[/]: pass 1 (jit) plans the graph as given; pass 2 (aot) "
            f"plans it with {plural(len(fin.templates), 'template')} finalized [bold]{shown(fin.mode)}[/]"
        )
        listed = fin.templates[:SHOW_TEMPLATES]
        for t in listed:
            moved = ""
            if t in fin.node_renames:
                moved = f", renamed {fin.node_renames[t]} and moved to the end of the node and buffer lists"
            stdout.print(f"  finalized {shown(t)} -> choice {shown(fin.choices[t])}{shown(moved)}")
        if len(fin.templates) > len(listed):
            stdout.print(f"  ... and {len(fin.templates) - len(listed)} more (--format json lists them all)")
    else:
        what = "plans" if report.mode == "plans" else "graphs"
        stdout.print(f"comparing the jit and aot {what} of [bold]{shown(report.jit.graph)}[/]")
        for old, new in report.node_renames.items():
            stdout.print(f"  node {shown(old)} (jit) is {shown(new)} (aot)")
    if report.options:
        stdout.print(f"  options: {shown(options_text(report.options, sources))}")
    stdout.print(
        f"  jit: {plural(len(report.jit.kernels), 'kernel')}, {plural(len(report.jit.decisions), 'decision')}; "
        f"aot: {plural(len(report.aot.kernels), 'kernel')}, {plural(len(report.aot.decisions), 'decision')}"
    )
    print_comparison(
        stdout, report.comparison, LABELS, b_note=" (pass 2 asks for them; pass 1 never compiled them)"
    )


@cli.command("diff-jit-aot", short_help=SUMMARIES["diff-jit-aot"])
@click.argument("graphs", nargs=-1, type=click.Path(dir_okay=False), metavar="[GRAPH | JIT_GRAPH AOT_GRAPH]")
@click.option(
    "--plans",
    "plans",
    nargs=2,
    type=click.Path(dir_okay=False),
    default=None,
    metavar="PLAN_A PLAN_B",
    help="Compare two plan.json files (PLAN_A from the JIT pass, PLAN_B from the AOT pass).",
)
@click.option(
    "--finalize",
    type=click.Choice(FINALIZE_MODES),
    default="append",
    show_default=True,
    help="With one GRAPH: append = Inductor before the fix (moved to the end, renamed <name>_final); "
    "in-place = after the fix (position and name kept).",
)
@click.option(
    "--rename",
    "rename",
    multiple=True,
    metavar="OLD=NEW",
    help="A node named OLD in the JIT graph/plan is NEW in the AOT one (repeatable; extern/template "
    "nodes with the same op and inputs are matched automatically).",
)
@click.option("--strict-names", is_flag=True, help="Count kernels that differ only in name as a divergence.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@planning_options
def diff_jit_aot(
    graphs: tuple[str, ...],
    plans: tuple[str, str] | None,
    finalize: str,
    rename: tuple[str, ...],
    strict_names: bool,
    fmt: str,
    scoring: str | None,
    max_fusion_size: int | None,
    no_loop_order: bool | None,
) -> None:
    """Plan GRAPH twice, as AOT compilation does, and compare the two plans.

    With one GRAPH: pass 1 plans it as given; every template is then finalized to its best choice
    (--finalize) and pass 2 plans the result. With JIT_GRAPH AOT_GRAPH: plan two dumps of a real
    compiler's passes. With --plans PLAN_A PLAN_B: compare two plan.json files. Reports the first
    divergent decision, which score term flipped, and the kernels only one plan has.
    Exit 0 identical, 1 divergent, 2 bad input.
    """
    renames = _renames(rename)
    sources: Mapping[str, str] | None = None
    if plans is not None:
        if graphs:
            raise click.UsageError("give either GRAPH arguments or --plans PLAN_A PLAN_B, not both")
        report = diff_plans(load_plan(plans[0]), load_plan(plans[1]), renames, strict_names=strict_names)
    else:
        if len(graphs) == 1:
            if renames:
                raise click.UsageError("--rename applies to JIT_GRAPH AOT_GRAPH or --plans")
            g = load_graph(graphs[0])
            resolved = graph_options(g, scoring, max_fusion_size, no_loop_order)
            report = diff_finalized(g, resolved.options, finalize, strict_names=strict_names)
        elif len(graphs) == 2:
            jit, aot = load_graph(graphs[0]), load_graph(graphs[1])
            resolved = graph_options(jit, scoring, max_fusion_size, no_loop_order)  # the JIT graph's meta
            report = diff_graphs(jit, aot, resolved.options, renames, strict_names=strict_names)
        else:
            raise click.UsageError("expected GRAPH, JIT_GRAPH AOT_GRAPH, or --plans PLAN_A PLAN_B")
        sources = resolved.sources
    if fmt == "json":
        click.echo(dump_json(report.to_json()), nl=False)
    else:
        _print(report, sources)
    if not report.identical:
        raise SystemExit(EXIT_CHECK_FAILED)
