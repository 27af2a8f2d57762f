"""`fuseopt bench GRAPH...`: check, then time, the generated kernels on a GPU (or check on the CPU)."""

from __future__ import annotations

import os
from typing import Any

import click
from rich.table import Table

from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, shown, stderr, stdout
from fuseopt.cli.located import located
from fuseopt.cli.main import cli
from fuseopt.cli.options import FISSION, limit_options, options_from, planning_options, strategy_option
from fuseopt.cli.output import write_outputs
from fuseopt.errors import EXIT_CHECK_FAILED, FuseoptError, InputError, NoGPUError
from fuseopt.targets import names


@cli.command("bench", short_help=SUMMARIES["bench"])
@click.argument("graphs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--interpret",
    is_flag=True,
    help="No GPU: run the same checks on the CPU (TRITON_INTERPRET=1), no timing.",
)
@click.option(
    "--warmup",
    type=int,
    default=25,
    show_default=True,
    help="Warm-up calls before timing, ms. Times are GPU time, the host's launches kept out (docs/bench.md).",
)
@click.option(
    "--rep", type=int, default=100, show_default=True, help="Timed calls, ms; the median is reported."
)
@click.option(
    "--json", "json_file", type=click.Path(dir_okay=False), help="Also write the results as JSON here."
)
@click.option(
    "--source",
    "source",
    metavar="FILE.py:FUNCTION",
    help="Time eager and torch.compile on this program (imports and runs FILE.py; one captured GRAPH "
    "only): called with the arguments meta.source records, on its own weights, which fuseopt's module "
    "gets too (found by the module paths meta.capture.call records, else by capturing the program "
    "again). Default: a torch rendering of the graph.",
)
@click.option(
    "--kernels",
    "kernels_top",
    type=click.IntRange(0, 1000),
    default=10,
    show_default=True,
    help="On a GPU, list this many slowest kernels of fuseopt's module and of torch.compile's "
    "(device time per run, torch.profiler); 0: none.",
)
@click.option(
    "--target",
    type=click.Choice(names()),
    default=None,
    help="Generate the kernels for this GPU (`fuseopt targets`). Default: the GPU bench runs on, "
    "detected (a GPU no target names gets the H200's tuning with its own facts); with --interpret, h200.",
)
@strategy_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@limit_options
@planning_options
def bench_cmd(
    graphs: tuple[str, ...],
    interpret: bool,
    source: str | None,
    warmup: int,
    rep: int,
    json_file: str | None,
    kernels_top: int,
    target: str | None,
    strategy: str | None,
    fission: str,
    fmt: str,
    max_memory: int,
    max_points: int,
    scoring: str,
    max_fusion_size: int,
    no_loop_order: bool,
) -> None:
    """Compile the plan's kernels, check them against the reference, and time them side by side
    with the unfused plan, torch eager and torch.compile: of the program given with --source, else
    of a torch rendering of the graph (`baseline` in the JSON). A graph file never makes fuseopt
    import anything: its meta.source is only reported.

    A captured graph with --source is a whole model: the program is called with its own arguments
    on its own weights, which fuseopt's module gets as its weight buffers (`weights` in the JSON),
    and the library calls (convolutions, matmuls, attention) are the same ATen calls in every
    variant, so the difference is the generated kernels. On a GPU, TF32 is off for all variants
    (as the reference computes), each variant's peak memory is reported, and the slowest kernels
    of fuseopt's module and torch.compile's (--kernels).

    Exit 0 when every variant matched the reference, 1 when one did not, 2 for bad input or a
    graph over --max-memory / --max-points (checked before anything is allocated), 3 without a
    GPU (use --interpret to check on the CPU).
    """
    if source is not None and len(graphs) != 1:
        raise click.UsageError("--source is the program of one graph: give exactly one GRAPH")
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    from fuseopt.interp import Limits, check_limits
    from fuseopt.io.load import load_graph

    loaded = [(path, load_graph(path)) for path in graphs]
    limits = Limits(max_memory, max_points)
    for path, g in loaded:  # every graph, before anything is allocated or imported
        try:
            check_limits(g, limits)
        except FuseoptError as err:
            raise located(err, path) from None
    import torch

    if not interpret and not torch.cuda.is_available():
        raise NoGPUError(
            "fuseopt bench needs a CUDA GPU; none is available (use --interpret for a CPU check)"
        )
    from rich.progress import Progress

    from fuseopt.bench.harness import bench_graph, copy_bandwidth_gbps, gpu_timer
    from fuseopt.bench.model import BoundProgram
    from fuseopt.bench.source import describe_source, program_from_source, recorded_source, rendered_program
    from fuseopt.targets import get

    opts = options_from(scoring, max_fusion_size, no_loop_order)
    chosen = None if target is None else get(target)
    programs: dict[str, tuple[Any, str]] = {}  # graph file -> (its program, FILE.py:FUNCTION)
    if source is not None:
        what = describe_source(source)  # checked, nothing imported yet
        stderr.print(
            f"[bold]importing[/] {shown(what)} (runs that file's code) for the eager and torch.compile "
            f"baselines of {shown(graphs[0])}"
        )
        try:
            programs[graphs[0]] = (program_from_source(source, loaded[0][1]), what)
        except InputError as err:  # the graph is not this program's: say which file
            raise err.with_location(file=graphs[0]) from None
    for path, g in loaded:
        recorded = recorded_source(g)
        if path not in programs and recorded is not None:
            stderr.print(
                f"{shown(path)}: meta.source names {shown(recorded)}; not imported (a graph file never "
                "runs code): eager and torch.compile run a torch rendering of the graph, or pass "
                "--source FILE.py:FUNCTION"
            )
    copy = None if interpret else copy_bandwidth_gbps(torch.device("cuda"), gpu_timer(warmup, rep))
    results = []
    with Progress(console=stdout, transient=True) as progress:
        task = progress.add_task("bench", total=len(loaded))
        for path, g in loaded:
            if path in programs:
                program, source_of = programs[path]
            else:
                program, source_of = rendered_program(g), None
            inputs = None
            if isinstance(program, BoundProgram):
                inputs = program.input_storages()  # the model's own weights for every variant
                program.to(torch.device("cpu" if interpret else "cuda"))
            res = bench_graph(
                g,
                program,
                options=opts,
                interpret=interpret,
                warmup=warmup,
                rep=rep,
                copy_gbps=copy,
                inputs=inputs,
                kernels_top=kernels_top,
                target=chosen,
                strategy=strategy,
                fission=FISSION[fission],
                limits=limits,
            )
            res["baseline"] = "rendered" if source_of is None else "source"
            if source_of is not None:
                res["source"] = source_of
                if isinstance(program, BoundProgram):
                    res["weights"] = list(program.weights)
            results.append(res)
            progress.advance(task)
    report = {
        "format": "fuseopt-bench/1",
        "device": "cpu (interpret)" if interpret else torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "copy_gbps": copy,
        "results": results,
    }
    if json_file:
        path = os.path.abspath(json_file)
        write_outputs(os.path.dirname(path), {os.path.basename(path): dump_json(report)})
    if fmt == "json":
        click.echo(dump_json(report), nl=False)
    else:
        _print(report)
    if not all(r["ok"] for r in results):
        raise SystemExit(EXIT_CHECK_FAILED)


def _print(report: dict) -> None:  # type: ignore[type-arg]
    """One table per graph (its variants), then its speed-ups on one line."""
    copy = f", copy {report['copy_gbps']:.0f} GB/s" if report["copy_gbps"] else ""
    made = sorted({r["target"] for r in report["results"]})
    stdout.print(f"fuseopt bench on {shown(report['device'])}{copy}; kernels for {shown(', '.join(made))}")
    for r in report["results"]:
        if r.get("baseline") == "rendered":
            runs = "a torch rendering of the graph"
        else:
            runs = r.get("source", "its source program")
        title = shown(f"{r['graph']} (eager and torch.compile run {runs})")
        t = Table(title=title, title_justify="left")
        for col in ("variant", "ok", "kernels", "ms", "GB/s", "% copy", "% same-size copy", "note"):
            t.add_column(col, overflow="fold")
        for v in r["variants"]:
            t.add_row(
                shown(v["name"]),
                "yes" if v["ok"] else "[red]NO[/]",
                "" if v["kernels"] is None else str(v["kernels"]),
                "" if v["ms"] is None else f"{v['ms']:.4f}",
                "" if v["gbps"] is None else f"{v['gbps']:.0f}",
                _pct(v["pct_copy"]),
                _pct(v["pct_copy_same_size"]),
                shown(v["error"][:200]),
            )
        stdout.print(t)
        for variant, rows in sorted(r.get("slowest_kernels", {}).items()):
            if rows:
                estimated = " (estimated)" if variant == "fuseopt" else ""
                stdout.print(f"  slowest kernels of {shown(variant)} (us per run{estimated}):")
                for row in rows:
                    est = row.get("estimated_us")
                    guess = "" if est is None else f" ({est:.1f})"
                    stdout.print(
                        f"    {row['us_per_run']:10.1f}{guess}  x{row['calls_per_run']:g}  {shown(row['kernel'])}"
                    )
        if r["speedups"]:
            stdout.print(
                "  fuseopt speed-up: "
                + ", ".join(f"{s:.2f}x {k.removeprefix('vs_')}" for k, s in r["speedups"].items())
            )


def _pct(p: float | None) -> str:
    """A share of a copy's bandwidth: whole percent, one decimal below 10% (tiny graphs)."""
    if p is None:
        return ""
    return f"{p:.1f}%" if p < 10 else f"{p:.0f}%"
