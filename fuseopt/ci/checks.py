"""The checks of one graph file, as one picklable job: `run_job(Job) -> GraphResult`.

A job carries the file's bytes (read by the driver), so the same function runs inline, in a
process pool, or on a Ray cluster whose workers do not share the driver's file system. The checks
(a table, `CHECKS`, run in its order): validate (load with every located diagnostic), optimize
(the pipeline, then the plan invariants of `passes.verify`), baseline (the plan against its golden
plan), diff (`aot.diff.diff_finalized`), determinism (`aot.determinism`: permutations, and fresh
processes when asked). A check that raises an unexpected exception becomes an `error` result with
the traceback's tail (a bug in fuseopt), so one bad graph never stops the run.
"""

from __future__ import annotations

import os
import re
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from fuseopt.aot.determinism import DeterminismReport, VariantResult, check_permutations, check_processes
from fuseopt.aot.diff import DiffReport, diff_finalized
from fuseopt.ci.baseline import Golden, compare_with_golden
from fuseopt.ci.locations import Locator
from fuseopt.ci.model import ERROR, FAILED, PASSED, SKIPPED, CheckResult, Finding, GraphResult
from fuseopt.cli.console import dump_json
from fuseopt.errors import Diagnostic, FuseoptError, InputError, caret_excerpt
from fuseopt.io.files import read_regular_file
from fuseopt.io.load import MAX_FILE_BYTES, load_text
from fuseopt.ir.graph import Graph
from fuseopt.ir.recorded_options import resolve_options
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import Stage, optimize
from fuseopt.passes.verify import check as plan_problems
from fuseopt.report.html import graph_section
from fuseopt.report.html import human_bytes as fmt_bytes
from fuseopt.report.words import order_difference, plural

# Lines of a crash's traceback kept in the report.
TRACEBACK_LINES = 12


@dataclass(frozen=True)
class Job:
    index: int
    file: str
    key: str
    raw: bytes | None  # the file's bytes (at most MAX_FILE_BYTES + 1), None when unreadable
    read_error: str
    checks: tuple[str, ...]
    options: Options
    permutations: int = 8
    seed: int = 0
    processes: int = 0
    finalize: str = "append"
    golden: Golden | None = None  # set when --baseline is given
    update_baseline: bool = False
    html: bool = False
    # The planning options the command line gave (None: not given); each graph's meta fills the
    # rest (`fuseopt.ir.recorded_options`). None: plan every graph with `options` as they are.
    given: dict[str, Any] | None = None


def read_source(path: str) -> tuple[bytes | None, str]:
    """The bytes of a graph file, bounded as `load_graph` bounds them, or why they cannot be read."""
    try:
        return read_regular_file(path, MAX_FILE_BYTES), ""
    except InputError as err:  # unreadable, or no regular file (a FIFO would block the run)
        return None, err.diagnostics[0].message


def _decode(job: Job) -> str:
    """The text of the job's file; the same errors (and messages) as `load_graph`."""
    if job.raw is None:
        raise InputError([Diagnostic(job.read_error, "", job.file, code="io")])
    if len(job.raw) > MAX_FILE_BYTES:
        raise InputError(
            [Diagnostic(f"file is larger than {MAX_FILE_BYTES} bytes (16 MiB)", "", job.file, code="limit")]
        )
    try:
        return job.raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            [Diagnostic(f"file is not UTF-8 (byte {exc.start})", "", job.file, code="encoding")]
        ) from None


def diagnostic_finding(d: Diagnostic, file: str, rule: str = "invalid-graph") -> Finding:
    detail = caret_excerpt(d.source, d.span) if d.source is not None and d.span is not None else ""
    return Finding(rule, "error", d.message, d.file or file, d.pointer, d.line or 1, d.column or 1, detail)


def _validate(job: Job) -> tuple[str | None, Graph | None, CheckResult]:
    text: str | None = None
    try:
        text = _decode(job)
        graph = load_text(text, job.file)
    except InputError as err:
        findings = tuple(diagnostic_finding(d, job.file) for d in err.diagnostics)
        n = len(findings)
        first = findings[0].text().splitlines()[0] if findings else "invalid"
        summary = f"{n} error{'s' if n != 1 else ''}: {first}"
        return text, None, CheckResult("validate", FAILED, summary, findings)
    summary = (
        f"graph {graph.name}: {plural(len(graph.nodes), 'node')}, {plural(len(graph.buffers), 'buffer')}"
    )
    return text, graph, CheckResult("validate", PASSED, summary, (), {"graph": graph.name})


def crash_finding(exc: BaseException, loc: Locator) -> Finding:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    lines = "".join(tb).rstrip().splitlines()
    if len(lines) > TRACEBACK_LINES + 1:
        lines = [lines[0], "  ...", *lines[-TRACEBACK_LINES:]]
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return loc.finding(
        "crash",
        "error",
        f"fuseopt raised {type(exc).__name__}"
        + (f": {msg}" if msg else "")
        + " (a bug in fuseopt: please report it with the graph)",
        detail="\n".join(lines),
    )


# The rule a FuseoptError raised inside a check is reported under.
_ERROR_RULES = {
    "optimize": "plan-invariant",
    "baseline": "bad-baseline",
    "diff": "jit-aot-divergence",
    "determinism": "nondeterminism",
}


def _guard(check: str, loc: Locator, fn: Callable[[], CheckResult]) -> CheckResult:
    try:
        return fn()
    except FuseoptError as err:
        rule = _ERROR_RULES.get(check, "crash")
        findings = tuple(diagnostic_finding(d, loc.file, rule) for d in err.diagnostics)
        first = findings[0].message if findings else type(err).__name__
        return CheckResult(check, FAILED, first, findings)
    except Exception as exc:  # a bug in fuseopt: keep going, report it with its traceback
        f = crash_finding(exc, loc)
        return CheckResult(check, ERROR, f.message, (f,))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _first_node(loc: Locator, text: str) -> str | None:
    return next((m.group() for m in _NAME.finditer(text) if loc.node_pointer(m.group())), None)


def _optimize(graph: Graph, opts: Options, loc: Locator) -> tuple[CheckResult, Stage]:
    stage = optimize(graph, opts)
    m = stage.plan.metrics
    data = {"metrics": dict(m)}
    problems = plan_problems(stage.graph, stage.plan)
    if problems:
        findings = tuple(
            loc.finding("plan-invariant", "error", p, node=_first_node(loc, p)) for p in problems
        )
        return CheckResult(
            "optimize", FAILED, f"plan breaks an invariant: {problems[0]}", findings, data
        ), stage
    summary = (
        f"{plural(m['kernels'], 'kernel')} (unfused {m['unfused_kernels']}), {fmt_bytes(m['bytes'])} "
        f"(unfused {fmt_bytes(m['unfused_bytes'])})"
    )
    return CheckResult("optimize", PASSED, summary, (), data), stage


def _diff(graph: Graph, job: Job, loc: Locator) -> CheckResult:
    report: DiffReport = diff_finalized(graph, job.options, job.finalize)
    cmp = report.comparison
    if report.identical:
        return CheckResult(
            "diff",
            PASSED,
            f"jit and aot plans have the same kernels (finalize={job.finalize})",
            (),
            {"identical": True},
        )
    parts = [f"JIT/AOT divergence (finalize={job.finalize})"]
    node: str | None = None
    d = cmp.divergence
    if d is not None:
        side = d.a if d.a is not None else d.b
        assert side is not None
        node = side.pair[0]
        pa = f"{d.a.pair[0]} + {d.a.pair[1]}" if d.a is not None else "nothing"
        pb = f"{d.b.pair[0]} + {d.b.pair[1]}" if d.b is not None else "nothing"
        parts.append(f"first divergent decision, step {d.step}: jit fuses {pa}, aot fuses {pb}; {d.summary}")
    detail = []
    for label, ks in (("jit", cmp.only_in_a), ("aot", cmp.only_in_b)):
        for k in ks:
            detail.append(f"kernel only in {label}: {k.name} ({' '.join(k.nodes)})")
            if node is None and k.nodes:
                node = k.nodes[0]
    parts.append(f"{plural(len(cmp.only_in_a), 'kernel')} only in jit, {len(cmp.only_in_b)} only in aot")
    f = loc.finding("jit-aot-divergence", "error", "; ".join(parts), node=node, detail="\n".join(detail))
    return CheckResult("diff", FAILED, "; ".join(parts[:2]), (f,), report.to_json())


def _variant_node(v: VariantResult) -> str | None:
    cmp = v.comparison
    if cmp is None:
        return None
    d = cmp.divergence
    if d is not None:
        side = d.a if d.a is not None else d.b
        if side is not None:
            return side.pair[0]
    for k in (*cmp.only_in_a, *cmp.only_in_b):
        if k.nodes:
            return k.nodes[0]
    return None


def _determinism(graph: Graph, job: Job, loc: Locator) -> CheckResult:
    opts = job.options
    reference, variants = check_permutations(graph, opts, job.permutations, job.seed, stop_early=True)
    if job.processes and all(v.ok for v in variants):
        assert job.raw is not None
        suffix = Path(job.file).suffix or ".yaml"
        with tempfile.TemporaryDirectory(prefix="fuseopt-ci-") as tmp:
            # The workers may not share the driver's files (Ray): plan a copy of the bytes checked.
            path = os.path.join(tmp, "graph" + suffix)
            Path(path).write_bytes(job.raw)
            variants += check_processes(path, opts, dump_json(reference.to_json()), range(job.processes))
    report = DeterminismReport(graph.name, opts.to_json(), job.seed, reference, tuple(variants))
    what = f"{job.permutations} permutations (seed {job.seed})" + (
        f" and {job.processes} fresh processes" if job.processes else ""
    )
    first = report.first_failure
    if first is None:
        return CheckResult("determinism", PASSED, f"same plan under {what}", (), {"deterministic": True})
    detail = []
    if first.node_order:
        detail.append("node order: " + order_difference([n.name for n in graph.nodes], first.node_order))
        detail.append(
            "buffer order: " + order_difference([b.name for b in graph.buffers], first.buffer_order)
        )
        detail.append("(the JSON report has the whole orders)")
    message = f"not deterministic: {first.label} gives another plan: {first.summary} (checked {what})"
    f = loc.finding("nondeterminism", "error", message, node=_variant_node(first), detail="\n".join(detail))
    return CheckResult("determinism", FAILED, f"{first.label}: {first.summary}", (f,), report.to_json())


def _baseline(stage: Stage, golden: Golden, loc: Locator, update: bool) -> CheckResult:
    return compare_with_golden(stage.plan, golden, loc, update=update)


def _skipped(check: str, why: str) -> CheckResult:
    return CheckResult(check, SKIPPED, why)


def run_job(job: Job) -> GraphResult:
    """Every selected check of one graph file (never raises for a problem in the graph)."""
    text, graph, validate = _validate(job)
    results: list[CheckResult] = []
    if "validate" in job.checks or validate.status != PASSED:
        results.append(validate)
    later = [c for c in job.checks if c != "validate"]
    if job.golden is not None:
        later.insert(later.index("optimize") + 1 if "optimize" in later else 0, "baseline")
    if graph is None:
        results.extend(_skipped(c, "the graph did not load") for c in later)
        html = _html(job, None, None, results, Locator(job.file, text)) if job.html else None
        return GraphResult(job.index, job.file, job.key, None, tuple(results), html=html)
    loc = Locator(job.file, text, graph)
    if job.given is not None:
        job = replace(job, options=resolve_options(graph.meta, job.given).options)
    stage: Stage | None = None
    plan_json: str | None = None
    if "optimize" in later or job.html or job.golden is not None:
        box: list[Stage] = []

        def run_optimize() -> CheckResult:
            res, st = _optimize(graph, job.options, loc)
            box.append(st)
            return res

        opt_result = _guard("optimize", loc, run_optimize)
        stage = box[0] if box else None
        if "optimize" in later:
            results.append(opt_result)
        if stage is not None and opt_result.status == PASSED:
            plan_json = dump_json(stage.plan.to_json())
    for check in later:
        if check == "optimize":
            continue
        if check == "baseline":
            assert job.golden is not None
            golden = job.golden
            if stage is None or plan_json is None:
                results.append(_skipped("baseline", "no plan to compare: optimize failed"))
                continue
            results.append(
                _guard("baseline", loc, partial(_baseline, stage, golden, loc, job.update_baseline))
            )
        elif check == "diff":
            results.append(_guard("diff", loc, lambda: _diff(graph, job, loc)))
        elif check == "determinism":
            results.append(_guard("determinism", loc, lambda: _determinism(graph, job, loc)))
    metrics: dict[str, Any] | None = dict(stage.plan.metrics) if stage is not None else None
    html = _html(job, graph, stage, results, loc) if job.html else None
    return GraphResult(job.index, job.file, job.key, graph.name, tuple(results), metrics, plan_json, html)


def _html(
    job: Job, graph: Graph | None, stage: Stage | None, results: list[CheckResult], loc: Locator
) -> str:
    try:
        return graph_section(job.index, job.file, graph, stage, checks=tuple(results), title=job.key)
    except Exception as exc:  # a bug in the report: say so in the report and in the results
        f = crash_finding(exc, loc)
        results.append(CheckResult("report", ERROR, f.message, (f,)))
        return graph_section(job.index, job.file, None, None, checks=tuple(results), title=job.key)
