"""`fuseopt ci PATH...`: every check on a corpus of graphs, golden-plan baselines, CI reports."""

from __future__ import annotations

import os

import click

from fuseopt.aot.finalize import FINALIZE_MODES
from fuseopt.aot.render import progress
from fuseopt.ci.baseline import Golden
from fuseopt.ci.checks import Job, read_source
from fuseopt.ci.discover import DiscoveryError, discover, display_path, golden_path
from fuseopt.ci.executor import EXECUTORS, default_jobs, run_jobs
from fuseopt.ci.files import write_text_atomic
from fuseopt.ci.github import annotation_lines
from fuseopt.ci.junit import junit_xml
from fuseopt.ci.model import CHECKS, CiReport, GraphResult
from fuseopt.ci.sarif import sarif_log
from fuseopt.ci.text import print_report
from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, shown, stderr, stdout
from fuseopt.cli.main import cli
from fuseopt.cli.options import given, options_from, planning_options
from fuseopt.cli.output import write_files
from fuseopt.errors import EXIT_CHECK_FAILED


def _checks(text: str) -> tuple[str, ...]:
    names = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in CHECKS]
    if unknown or not names:
        raise click.BadParameter(
            f"unknown check(s) {', '.join(unknown) or '(none given)'}; choose from {','.join(CHECKS)}",
            param_hint="--checks",
        )
    return tuple(c for c in CHECKS if c in names)


def _golden(baseline: str, key: str) -> Golden:
    path = golden_path(baseline, key)
    where = display_path(path)
    if not os.path.exists(path):
        return Golden(where, None)
    if not os.path.isfile(path):  # a FIFO would block the run
        return Golden(where, None, "not a regular file: fuseopt reads regular files only")
    try:
        with open(path, encoding="utf-8") as f:
            return Golden(where, f.read())
    except (OSError, UnicodeDecodeError) as exc:
        return Golden(where, None, str(getattr(exc, "strerror", None) or exc))


def _update_baseline(baseline: str, results: list[GraphResult], jobs: list[Job]) -> list[str]:
    written = []
    for res, job in zip(results, jobs, strict=True):
        if res.plan_json is None or job.golden is None or job.golden.text == res.plan_json:
            continue
        write_text_atomic(golden_path(baseline, job.key), res.plan_json)
        written.append(job.golden.file)
    return written


@cli.command("ci", short_help=SUMMARIES["ci"])
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--checks",
    "checks_text",
    default=",".join(CHECKS),
    show_default=True,
    metavar="LIST",
    help="Comma-separated checks to run on each graph.",
)
@click.option(
    "--baseline",
    type=click.Path(file_okay=False),
    help="Compare each plan with the golden plan DIR/<key>.plan.json; more kernels or bytes fail.",
)
@click.option("--update-baseline", is_flag=True, help="Rewrite the golden plans in --baseline DIR.")
@click.option(
    "--exclude",
    multiple=True,
    metavar="PATTERN",
    help="Skip files whose path (relative to the PATH argument) or name matches this glob (repeatable).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 4096),
    default=None,
    help="Worker processes [default: the CPU count].",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default="process",
    show_default=True,
    help="process: a local process pool; ray: tasks on a Ray cluster (pip install 'fuseopt[ray]').",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="ADDR",
    help="With --executor ray: the cluster [default: a local instance].",
)
@click.option(
    "--permutations",
    type=click.IntRange(0, 100_000),
    default=8,
    show_default=True,
    help="determinism: random valid orders of the node and buffer lists to plan.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="determinism: seed of the permutations.")
@click.option(
    "--processes",
    type=click.IntRange(0, 64),
    default=0,
    show_default=True,
    help="determinism: also plan in this many fresh processes (PYTHONHASHSEED=0,1,...).",
)
@click.option(
    "--finalize",
    type=click.Choice(FINALIZE_MODES),
    default="append",
    show_default=True,
    help="diff: how AOT's second pass finalizes templates (see diff-jit-aot).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="stdout."
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the JSON report here.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--sarif", "sarif_path", type=click.Path(dir_okay=False), help="Write SARIF 2.1.0 here.")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here."
)
@click.option("--github", is_flag=True, help="Print GitHub Actions annotations (::error file=...) on stdout.")
@planning_options
def ci_cmd(
    paths: tuple[str, ...],
    checks_text: str,
    baseline: str | None,
    update_baseline: bool,
    exclude: tuple[str, ...],
    jobs: int | None,
    executor: str,
    ray_address: str | None,
    permutations: int,
    seed: int,
    processes: int,
    finalize: str,
    fmt: str,
    json_path: str | None,
    junit_path: str | None,
    sarif_path: str | None,
    html_path: str | None,
    github: bool,
    scoring: str | None,
    max_fusion_size: int | None,
    no_loop_order: bool | None,
) -> None:
    """Run the checks on every graph file under PATH... (files, directories, globs); exit 1 if any fails.

    Directories are searched recursively for *.json, *.yaml and *.yml (hidden entries and
    *.plan.json skipped). Checks: validate, optimize (with the plan invariants), diff (diff-jit-aot),
    determinism (check-determinism; permutations only unless --processes). With --baseline DIR,
    each plan is compared with DIR/<key>.plan.json, <key> being the file's path relative to its
    PATH argument without the extension: more kernels or bytes is a regression. Exit 0 all passed,
    1 a check failed or a plan regressed, 2 bad usage or no graph files found.
    """
    checks = _checks(checks_text)
    if update_baseline and baseline is None:
        raise click.UsageError("--update-baseline needs --baseline DIR")
    if baseline is not None and "optimize" not in checks:
        raise click.UsageError("--baseline compares optimize's plans: add optimize to --checks")
    if github and fmt == "json":
        raise click.UsageError(
            "--github prints annotations on stdout: write the JSON report with --json FILE"
        )
    if ray_address is not None and executor != "ray":
        raise click.UsageError("--ray-address needs --executor ray")
    try:
        files, warnings = discover(
            paths, exclude=exclude, skip_dirs=[baseline] if baseline else [], unique_keys=baseline is not None
        )
    except DiscoveryError as exc:
        raise click.UsageError(str(exc)) from None
    for w in warnings:
        stderr.print(f"[yellow]warning[/]: {shown(w)}")
    opts = options_from(scoring, max_fusion_size, no_loop_order)
    job_list = [
        Job(
            i,
            gf.path,
            gf.key,
            *read_source(gf.path),
            checks=checks,
            options=opts,
            given=given(scoring, max_fusion_size, no_loop_order),  # each graph's meta fills the rest
            permutations=permutations,
            seed=seed,
            processes=processes,
            finalize=finalize,
            golden=_golden(baseline, gf.key) if baseline is not None else None,
            update_baseline=update_baseline,
            html=html_path is not None,
        )
        for i, gf in enumerate(files)
    ]
    with progress(stderr) as bar:
        task = bar.add_task("checking graphs", total=len(job_list))
        results = run_jobs(
            job_list,
            executor=executor,
            workers=jobs or default_jobs(),
            on_done=lambda _res: bar.advance(task),
            ray_address=ray_address,
        )
    updated = (
        _update_baseline(baseline, results, job_list) if baseline is not None and update_baseline else []
    )
    columns = (
        checks
        if baseline is None
        else (*checks[: checks.index("optimize") + 1], "baseline", *checks[checks.index("optimize") + 1 :])
    )
    report = CiReport(
        checks=tuple(columns),
        options=opts.to_json(),
        graphs=tuple(results),
        baseline=display_path(baseline) if baseline is not None else None,
        updated=tuple(updated),
        settings={
            "permutations": permutations,
            "seed": seed,
            "processes": processes,
            "finalize": finalize,
            "update_baseline": update_baseline,
        },
    )
    report_json = dump_json(report.to_json())
    # Every report is rendered before any is written, and they are written all or none.
    reports: dict[str, str] = {}
    if json_path is not None:
        reports[json_path] = report_json
    if junit_path is not None:
        reports[junit_path] = junit_xml(report)
    if sarif_path is not None:
        reports[sarif_path] = dump_json(sarif_log(report))
    if html_path is not None:
        from fuseopt.report.html import ci_page

        reports[html_path] = ci_page(report, [g.html or "" for g in results])
    write_files(reports)
    if fmt == "json":
        click.echo(report_json, nl=False)
    else:
        print_report(stdout, report)
    if github:
        for line in annotation_lines(report):
            click.echo(line)
    if not report.ok:
        raise SystemExit(EXIT_CHECK_FAILED)
