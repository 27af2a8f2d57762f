"""`fuseopt optimize GRAPH`: run the pass pipeline, print the plan, write plan.json (and kernels).

Everything is rendered first (plan, kernels, HTML, the text for the terminal); files are written
only then, all of them or none (`write_files`).
"""

from __future__ import annotations

import dataclasses
import os

import click

from fuseopt.aot.render import progress
from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, shown, stderr, stdout
from fuseopt.cli.main import cli
from fuseopt.cli.options import FISSION, graph_options, planning_options, strategy_option
from fuseopt.cli.output import write_files
from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import PIPELINE, Stage, optimize
from fuseopt.passes.speculate import cpus
from fuseopt.passes.verify import verify as verify_plan
from fuseopt.plan import Plan
from fuseopt.report.plan_text import FULL_ROWS, print_plan
from fuseopt.targets import DEFAULT, get, names  # no torch, no emitter: --emit none needs neither


def emit_kernels(
    graph: Graph,
    plan: Plan,
    autotune: bool,
    multiprocessors: int | None = None,
    target: str = DEFAULT.name,
    strategy: str | None = None,
    fission: bool | None = None,
) -> dict[str, str]:
    """kernels.py (Triton source for the plan) and launches.json (what each launch runs, and
    why: `fuseopt.report.launches`), generated for the target called `target` (its
    multiprocessors overridden where given; `strategy` taken wherever it applies; `fission`:
    `CodegenOptions.fission`); nothing when
    code generation is not available in this build."""
    try:
        from fuseopt.codegen.tiling import CodegenOptions
        from fuseopt.report.launches import module_and_launches
    except ImportError:
        return {}
    options = CodegenOptions(
        target=get(target),
        multiprocessors=multiprocessors,
        strategy=strategy,
        fission=fission,
        autotune=autotune,
    )
    source, launches = module_and_launches(graph, plan, options)
    return {"kernels.py": source, "launches.json": dump_json(launches)}


@cli.command("optimize", short_help=SUMMARIES["optimize"])
@click.argument("graph", type=click.Path(dir_okay=False))
@click.option(
    "-o", "--out", "out_dir", type=click.Path(file_okay=False), help="Write plan.json (and kernels.py) here."
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--emit",
    type=click.Choice(["triton", "none"]),
    default="triton",
    show_default=True,
    help="With -o: also write DIR/kernels.py (Triton kernels and a call() wrapper) and "
    "DIR/launches.json (each kernel's strategy, launch and cost estimate).",
)
@click.option(
    "--autotune", is_flag=True, help="Emit triton.autotune configs instead of fixed launch parameters."
)
@click.option(
    "--target",
    type=click.Choice(names()),
    default=DEFAULT.name,
    show_default=True,
    help="The GPU the kernels are for (`fuseopt targets` lists them): its multiprocessors, clusters and "
    "tuned launch sizes. Never detected, so a graph gives the same kernels on every machine.",
)
@click.option(
    "--multiprocessors",
    type=click.IntRange(1, 1024),
    default=None,
    help="Override the target's multiprocessors (132 on an H200): reductions size their grids by them.",
)
@strategy_option
@click.option(
    "--verify/--no-verify", "check", default=True, show_default=True, help="Check the plan's invariants."
)
@click.option(
    "--skip-pass",
    "skip",
    multiple=True,
    type=click.Choice([name for name, _ in PIPELINE]),
    help="Leave a pass of the pipeline out (repeatable), e.g. to see a plan before loop merging.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    help="Write a self-contained HTML report (graph picture, kernels, decisions, Triton) here.",
)
@click.option(
    "--full/--summary",
    "full",
    default=None,
    help=f"Print every table of the plan, or a summary (default: every table up to {FULL_ROWS} rows).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 256),
    default=None,
    help="Processes planning may use (default: the CPUs this process may run on). At the size cap "
    "the natural plan is made in a second process beside the packed one; the plan is the same "
    "for any value.",
)
@planning_options
def optimize_cmd(
    graph: str,
    out_dir: str | None,
    fmt: str,
    emit: str,
    autotune: bool,
    target: str,
    multiprocessors: int | None,
    strategy: str | None,
    fission: str,
    check: bool,
    skip: tuple[str, ...],
    html_path: str | None,
    full: bool | None,
    scoring: str | None,
    max_fusion_size: int | None,
    no_loop_order: bool | None,
    jobs: int | None,
) -> None:
    """Plan fusion and loop orders for GRAPH; print the plan, and write it with -o DIR."""
    emitting = out_dir is not None and emit == "triton"
    steps = 2 + int(emitting) + int(html_path is not None)
    # On a terminal, a transient bar on stderr names the step under way (a 10,000-node graph
    # takes seconds to plan); piped or redirected, nothing is drawn.
    with progress(stderr) as bar:
        task = bar.add_task(f"loading {shown(graph)}", total=steps)

        def step(what: str) -> None:
            bar.update(task, advance=1, description=what, refresh=True)

        g = load_graph(graph)
        step(f"planning {len(g.nodes)} nodes" + (", checking the plan" if check else ""))
        passes = tuple(name for name, _ in PIPELINE if name not in skip)
        resolved = graph_options(g, scoring, max_fusion_size, no_loop_order)
        options = dataclasses.replace(resolved.options, jobs=jobs or cpus())
        rendered: dict[int, tuple[Plan, str]] = {}  # by id, the plan kept alive so ids stay unique

        def finish(stage: Stage) -> None:
            """The plan checked and its JSON, by the plan: the pipeline may make these for a
            plan it then drops (while a second process plans at the size cap)."""
            if check:
                verify_plan(stage.graph, stage.plan)
            rendered[id(stage.plan)] = (stage.plan, dump_json(stage.plan.to_json()))

        stage = optimize(g, options, passes=passes, finish=finish)
        plan_json = rendered[id(stage.plan)][1]
        outputs = {"plan.json": plan_json}
        if emitting:
            step(f"generating Triton for {len(stage.plan.kernels)} kernels")
            outputs |= emit_kernels(
                stage.graph, stage.plan, autotune, multiprocessors, target, strategy, FISSION[fission]
            )
        files: dict[str, str] = {}
        if out_dir is not None:
            files.update({os.path.join(out_dir, name): text for name, text in outputs.items()})
        if html_path is not None:
            step("writing the HTML report")
            from fuseopt.report.html import plan_page  # here, not at the top: only --html needs it

            files[html_path] = plan_page(graph, g, stage)
        step("done")
    if fmt == "json":
        text = plan_json
    else:
        with stdout.capture() as captured:
            print_plan(stdout, stage.plan, g.meta, full=full, sources=resolved.sources)
        text = captured.get()
    write_files(files)
    click.echo(text, nl=False)
    if out_dir is not None and fmt != "json":
        stdout.print(f"wrote {', '.join(sorted(outputs))} to {shown(out_dir)}")
