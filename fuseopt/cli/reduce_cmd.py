"""`fuseopt reduce GRAPH --until PREDICATE -o SMALL`: delta-debug a graph down to a minimal repro."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from fuseopt.aot.finalize import FINALIZE_MODES
from fuseopt.aot.reduce import Predicate, diverges, kernels_exceed, nondeterministic, reduce_graph
from fuseopt.aot.render import progress
from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, stderr, stdout
from fuseopt.cli.main import cli
from fuseopt.cli.options import graph_options, planning_options
from fuseopt.errors import CheckFailed, Diagnostic, InputError
from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.ir.recorded_options import RECORDED
from fuseopt.ir.serialize import dump_yaml, graph_sha256
from fuseopt.passes.options import Options
from fuseopt.report.escaping import shown
from fuseopt.report.plan_text import options_text
from fuseopt.report.words import plural

UNTIL_HELP = "diverges | nondeterministic | kernels-exceed=N (or 'kernels-exceed N')"


def parse_until(text: str) -> tuple[str, int | None]:
    """'diverges', 'nondeterministic', 'kernels-exceed=N' or 'kernels-exceed N' -> (name, N)."""
    words = text.replace("=", " ").split()
    if words in (["diverges"], ["nondeterministic"]):
        return words[0], None
    if len(words) == 2 and words[0] == "kernels-exceed" and words[1].isdigit():
        return "kernels-exceed", int(words[1])
    raise InputError(
        [Diagnostic(f"--until {text!r}: expected {UNTIL_HELP}", "/until", "<command line>", code="usage")]
    )


def make_predicate(
    name: str, limit: int | None, opts: Options, finalize: str, permutations: int, seed: int
) -> Predicate:
    if name == "diverges":
        return diverges(opts, finalize)
    if name == "nondeterministic":
        return nondeterministic(opts, permutations, seed)
    assert limit is not None
    return kernels_exceed(limit, opts)


def _write(path: str, text: str) -> None:
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=".fuseopt-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError([Diagnostic(f"cannot write output: {exc}", "", path, code="io")]) from None


def _labelled(small: Graph, source: Graph, until: str, nodes_before: int, opts: Options) -> Graph:
    """The reduced graph, described, with the planning options the predicate held under recorded in
    its meta (so `fuseopt diff-jit-aot SMALL` shows the problem without flags)."""
    desc = f"{source.name} reduced by `fuseopt reduce --until {until}` from {nodes_before} to {len(small.nodes)} nodes"
    meta: dict[str, object] = {key: getattr(opts, key) for key in RECORDED}
    meta |= {
        "reduced_from": {"graph": source.name, "sha256": graph_sha256(source), "nodes": nodes_before},
        "until": until,
    }
    return small.replace(description=desc, meta=meta)


@cli.command("reduce", short_help=SUMMARIES["reduce"])
@click.argument("graph", type=click.Path(dir_okay=False))
@click.option(
    "--until", "until", required=True, metavar="PREDICATE", help=f"What must keep holding: {UNTIL_HELP}."
)
@click.option(
    "-o",
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Write the reduced graph (YAML) here.",
)
@click.option(
    "--finalize",
    type=click.Choice(FINALIZE_MODES),
    default="append",
    show_default=True,
    help="For --until diverges: how diff-jit-aot finalizes templates.",
)
@click.option(
    "--permutations",
    type=click.IntRange(1, 10_000),
    default=8,
    show_default=True,
    help="For --until nondeterministic: permutations tried per test.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="For --until nondeterministic.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@planning_options
def reduce_cmd(
    graph: str,
    until: str,
    out: str,
    finalize: str,
    permutations: int,
    seed: int,
    fmt: str,
    scoring: str | None,
    max_fusion_size: int | None,
    no_loop_order: bool | None,
) -> None:
    """Shrink GRAPH (ddmin over its nodes) to a minimal valid graph on which PREDICATE still holds.

    The planning options apply to the predicate. Exit 0 with the result written, 1 if PREDICATE
    does not hold on GRAPH, 2 bad input.
    """
    name, limit = parse_until(until)
    g = load_graph(graph)
    resolved = graph_options(g, scoring, max_fusion_size, no_loop_order)
    opts = resolved.options
    predicate = make_predicate(name, limit, opts, finalize, permutations, seed)
    with progress(stderr) as bar:
        task = bar.add_task(f"reducing ({len(g.nodes)} nodes)", total=len(g.nodes))

        def report(size: int, tests: int) -> None:
            bar.update(
                task,
                completed=len(g.nodes) - size,
                description=f"reducing: {plural(size, 'node')}, {plural(tests, 'test')}",
            )

        try:
            result = reduce_graph(g, predicate, report)
        except ValueError:
            raise CheckFailed(
                [
                    Diagnostic(
                        f"--until {until} does not hold on the input graph (options: "
                        f"{options_text(opts.to_json(), resolved.sources)}): nothing to reduce",
                        "",
                        graph,
                    )
                ]
            ) from None
    until_text = name if limit is None else f"{name}={limit}"
    small = _labelled(result.graph, g, until_text, result.nodes_before, opts)
    _write(out, dump_yaml(small))
    kept = [n.name for n in small.nodes]
    summary: dict[str, object] = {
        "format": "fuseopt-reduce/1",
        "graph": g.name,
        "until": until_text,
        "output": out,
        "nodes_before": result.nodes_before,
        "nodes_after": len(small.nodes),
        "buffers_after": len(small.buffers),
        "tests": result.tests,
        "options": opts.to_json(),
        "crashes": result.crashes,
        "nodes": kept,
    }
    if fmt == "json":
        click.echo(dump_json(summary), nl=False)
        return
    stdout.print(
        f"[green]reduced[/] {shown(g.name)} from {result.nodes_before} to {plural(len(small.nodes), 'node')} "
        f"({plural(len(small.buffers), 'buffer')}) in {plural(result.tests, 'test')}; "
        f"--until {shown(until_text)} still holds"
    )
    stdout.print(f"  options: {shown(options_text(opts.to_json(), resolved.sources))}")
    stdout.print(f"  nodes: {shown(' '.join(kept))}")
    if result.crashes:
        stdout.print(
            f"  [yellow]{plural(result.crashes, 'candidate graph')} made the planner raise[/]; "
            "they were treated as not satisfying the predicate"
        )
    stdout.print(f"  wrote {shown(out)}")
