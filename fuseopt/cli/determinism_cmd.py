"""`fuseopt check-determinism GRAPH`: same plan under valid permutations and in fresh processes?"""

from __future__ import annotations

import click
from rich.table import Table

from fuseopt.aot.determinism import (
    LABELS,
    DeterminismReport,
    check_permutations,
    check_processes,
    codegen_available,
)
from fuseopt.aot.render import print_comparison, progress
from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, shown, stderr, stdout
from fuseopt.cli.main import cli
from fuseopt.cli.options import graph_options, planning_options
from fuseopt.errors import EXIT_CHECK_FAILED
from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.report.plan_text import options_text
from fuseopt.report.words import order_difference, plural


def _print(
    report: DeterminismReport,
    graph: Graph,
    sources: dict[str, str],
    permutations: int,
    processes: int,
    codegen: bool,
) -> None:
    ok = sum(v.ok for v in report.variants)
    stdout.print(
        f"[bold]{shown(report.graph)}[/]: {plural(permutations, 'permutation')} (seed {report.seed}) and "
        f"{plural(processes, 'fresh process')}; "
        f"kernel source {'compared' if codegen else 'not compared (no code generation in this build)'}"
    )
    stdout.print(f"options: {shown(options_text(report.options, sources))}")
    if report.ok:
        stdout.print(f"[green]deterministic[/]: all {ok} variants give the reference plan")
        return
    stdout.print(
        f"[bold red]not deterministic[/]: {len(report.variants) - ok} of {plural(len(report.variants), 'variant')} differ"
    )
    t = Table(title="variants that differ", title_justify="left")
    for col in ("variant", "difference"):
        t.add_column(col, overflow="fold")
    for v in report.variants:
        if not v.ok:
            t.add_row(shown(v.label), shown(v.summary))
    stdout.print(t)
    first = report.first_failure
    assert first is not None
    stdout.print(f"first difference: [bold]{shown(first.label)}[/]")
    if first.node_order:
        nodes = order_difference([n.name for n in graph.nodes], first.node_order)
        buffers = order_difference([b.name for b in graph.buffers], first.buffer_order)
        stdout.print(f"  node order: {shown(nodes)}")
        stdout.print(f"  buffer order: {shown(buffers)} (--format json prints the whole orders)")
    if first.comparison is not None:
        print_comparison(stdout, first.comparison, LABELS)
    else:
        stdout.print(f"  {shown(first.difference)}")


@cli.command("check-determinism", short_help=SUMMARIES["check-determinism"])
@click.argument("graph", type=click.Path(dir_okay=False))
@click.option(
    "--permutations",
    type=click.IntRange(0, 100_000),
    default=20,
    show_default=True,
    help="Random valid orders of the node list (topological) and of the buffer list to plan.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the permutations.")
@click.option(
    "--processes",
    type=click.IntRange(0, 64),
    default=3,
    show_default=True,
    help="Fresh `fuseopt optimize` processes (on this fuseopt), PYTHONHASHSEED=0,1,...; plans must be byte-identical.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@planning_options
def check_determinism(
    graph: str,
    permutations: int,
    seed: int,
    processes: int,
    fmt: str,
    scoring: str | None,
    max_fusion_size: int | None,
    no_loop_order: bool | None,
) -> None:
    """Plan GRAPH under random valid permutations and in fresh processes; exit 1 on any difference.

    Permutations keep program order valid and compare kernels (as node sets) and decisions (with
    their scores); a difference names the decision that changed and the score term that flipped.
    """
    g = load_graph(graph)
    resolved = graph_options(g, scoring, max_fusion_size, no_loop_order)
    opts = resolved.options
    with progress(stderr) as bar:
        task = bar.add_task("planning", total=permutations + processes)

        def tick() -> None:
            bar.advance(task)

        reference, variants = check_permutations(g, opts, permutations, seed, tick)
        # dump_json is what `optimize --format json` prints: the processes must print the same text.
        variants += check_processes(graph, opts, dump_json(reference.to_json()), range(processes), tick)
    report = DeterminismReport(g.name, opts.to_json(), seed, reference, tuple(variants))
    if fmt == "json":
        click.echo(dump_json(report.to_json()), nl=False)
    else:
        _print(report, g, dict(resolved.sources), permutations, processes, codegen_available())
    if not report.ok:
        raise SystemExit(EXIT_CHECK_FAILED)
