"""Golden plans: compare a plan with the committed one; regressions fail, improvements are reported.

A golden plan is the plan JSON as `fuseopt optimize --format json` prints it, at
`BASELINE/<key>.plan.json` (`discover.golden_path`). The comparison uses the plan's metrics:
more kernels or more bytes moved than the golden plan is a regression (even if the other metric
improved); fewer of either, and more of neither, is an improvement; the same metrics with other
kernels is a change worth a note. A finding points at a node of the first kernel that differs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fuseopt.ci.locations import Locator
from fuseopt.ci.model import FAILED, PASSED, CheckResult, Finding
from fuseopt.plan import Plan

UPDATE_HINT = "if this is intended, rerun with --update-baseline and commit the golden plan"


@dataclass(frozen=True)
class Golden:
    """A golden plan as read by the driver: `text` is None when the file does not exist."""

    file: str
    text: str | None
    error: str = ""  # why it could not be read (then text is None)


@dataclass(frozen=True)
class _GoldenPlan:
    kernels: tuple[tuple[str, tuple[str, ...]], ...]  # (name, nodes)
    metrics: Mapping[str, int]
    graph_sha256: str
    options: Mapping[str, Any]


class _BadGolden(Exception):
    def __init__(self, message: str, line: int = 1, column: int = 1, pointer: str = ""):
        super().__init__(message)
        self.line, self.column, self.pointer = line, column, pointer


def _parse(text: str) -> _GoldenPlan:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _BadGolden(f"not JSON: {exc.msg}", exc.lineno, exc.colno) from None
    if not isinstance(data, dict) or data.get("format") not in ("fuseopt-plan/1", "fuseopt-plan/2"):
        raise _BadGolden("not a fuseopt plan (format fuseopt-plan/2 or /1)", pointer="/format")
    metrics = data.get("metrics")
    if not isinstance(metrics, dict) or not all(
        isinstance(metrics.get(k), int) and not isinstance(metrics.get(k), bool) for k in ("kernels", "bytes")
    ):
        raise _BadGolden("metrics.kernels and metrics.bytes must be integers", pointer="/metrics")
    kernels = data.get("kernels")
    if not isinstance(kernels, list) or not all(
        isinstance(k, dict)
        and isinstance(k.get("name"), str)
        and isinstance(k.get("nodes"), list)
        and all(isinstance(n, str) for n in k["nodes"])
        for k in kernels
    ):
        raise _BadGolden("kernels must be a list of {name, nodes: [node names]}", pointer="/kernels")
    options = data.get("options")
    sha = data.get("graph_sha256")
    return _GoldenPlan(
        tuple((k["name"], tuple(k["nodes"])) for k in kernels),
        {"kernels": metrics["kernels"], "bytes": metrics["bytes"]},
        sha if isinstance(sha, str) else "",
        options if isinstance(options, dict) else {},
    )


def _kernel_text(name: str, nodes: Sequence[str]) -> str:
    return f"{name} ({' '.join(nodes)})"


def _first_difference(
    old: Sequence[tuple[str, tuple[str, ...]]], new: Sequence[tuple[str, tuple[str, ...]]], side: str
) -> tuple[str, str | None]:
    """The first kernel of `old` that `new` lacks, and what `new` made of its nodes.

    Returns (text, a node to point at); `side` names `old` in the text ("golden" or "new")."""
    new_sets = {frozenset(ns) for _, ns in new}
    for name, nodes in old:
        if frozenset(nodes) in new_sets:
            continue
        members = set(nodes)
        now = [_kernel_text(n, [x for x in ns if x in members]) for n, ns in new if members & set(ns)]
        what = ", ".join(now) if now else "no kernel"
        if side == "golden":
            text = f"golden kernel {_kernel_text(name, nodes)} is now {what}"
        else:
            text = f"kernel {_kernel_text(name, nodes)} was {what} in the golden plan"
        return text, nodes[0] if nodes else None
    return "", None


def _change(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    parts = []
    for k in ("kernels", "bytes"):
        a, b = before[k], after[k]
        delta = "" if a == b else f" ({b - a:+,})"
        parts.append(f"{k} {a:,} -> {b:,}{delta}")
    return ", ".join(parts)


def _notes(golden: _GoldenPlan, plan: Plan) -> str:
    notes = []
    if golden.graph_sha256 and golden.graph_sha256 != plan.graph_sha256:
        notes.append("the graph changed since the golden plan was written")
    diff = [
        f"{k}={golden.options[k]!r} (this run: {plan.options[k]!r})"
        for k in plan.options
        if k in golden.options and golden.options[k] != plan.options[k]
    ]
    if diff:
        notes.append("the golden plan was made with " + ", ".join(diff))
    return "; ".join(notes)


def compare_with_golden(plan: Plan, golden: Golden, loc: Locator, *, update: bool) -> CheckResult:
    """The `baseline` check of one graph. With `update`, a difference is reported but not failed
    (the driver rewrites the golden plan)."""
    metrics = {"kernels": plan.metrics["kernels"], "bytes": plan.metrics["bytes"]}
    data: dict[str, Any] = {"golden": golden.file, "metrics": metrics, "updated": False}
    if golden.text is None and golden.error:
        f = Finding("bad-baseline", "error", f"cannot read the golden plan: {golden.error}", golden.file)
        return CheckResult("baseline", FAILED, f"golden plan unreadable: {golden.error}", (f,), data)
    if golden.text is None:
        data.update(status="new", updated=update)
        if update:
            f = loc.finding("no-baseline", "note", f"golden plan {golden.file} created")
            return CheckResult("baseline", PASSED, "golden plan created", (f,), data)
        f = loc.finding(
            "no-baseline",
            "warning",
            f"no golden plan {golden.file}; run with --update-baseline to create it, and commit it",
        )
        return CheckResult("baseline", PASSED, "no golden plan", (f,), data)
    try:
        old = _parse(golden.text)
    except _BadGolden as exc:
        if not update:
            f = Finding(
                "bad-baseline", "error", f"golden plan: {exc}", golden.file, exc.pointer, exc.line, exc.column
            )
            return CheckResult("baseline", FAILED, f"bad golden plan: {exc}", (f,), data)
        data.update(status="new", updated=True)
        f = loc.finding("no-baseline", "note", f"unreadable golden plan {golden.file} replaced ({exc})")
        return CheckResult("baseline", PASSED, "golden plan replaced", (f,), data)
    new_kernels = tuple((k.name, k.nodes) for k in plan.kernels)
    data["golden_metrics"] = dict(old.metrics)
    worse = any(metrics[k] > old.metrics[k] for k in metrics)
    better = not worse and any(metrics[k] < old.metrics[k] for k in metrics)
    same_kernels = {frozenset(n) for _, n in old.kernels} == {frozenset(n) for _, n in new_kernels}
    notes = _notes(old, plan)
    tail = f" ({notes})" if notes else ""
    change = _change(old.metrics, metrics)
    if worse:
        text, node = _first_difference(old.kernels, new_kernels, "golden")
        status, rule, level = "regression", "regression", "error"
        message = f"regression against {golden.file}: {change}" + (f"; {text}" if text else "") + tail
    elif better:
        text, node = _first_difference(new_kernels, old.kernels, "new")
        status, rule, level = "improvement", "improvement", "note"
        message = f"improvement against {golden.file}: {change}" + (f"; {text}" if text else "") + tail
    elif not same_kernels:
        text, node = _first_difference(new_kernels, old.kernels, "new")
        status, rule, level = "changed", "plan-changed", "note"
        message = (
            f"other kernels than {golden.file}, same metrics ({change})"
            + (f"; {text}" if text else "")
            + tail
        )
    else:
        data["status"] = "same"
        return CheckResult("baseline", PASSED, "same as the golden plan" + tail, (), data)
    data.update(status=status, updated=update)
    if update:
        level = "warning" if status == "regression" else "note"
        message += "; golden plan updated"
    elif status == "regression":
        message += f"; {UPDATE_HINT}"
    elif status == "improvement":
        message += "; update the golden plan with --update-baseline to keep it"
    finding = loc.finding(rule, level, message, node=node)
    failed = status == "regression" and not update
    summary = f"{status}: {change}" + (" (golden plan updated)" if update else "")
    return CheckResult("baseline", FAILED if failed else PASSED, summary, (finding,), data)
