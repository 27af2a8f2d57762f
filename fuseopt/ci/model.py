"""The records a CI run produces: findings, check results, per-graph results, the whole report.

Everything here is a frozen value with a stable `to_json()`; the reporters (text, JSON, JUnit,
SARIF, GitHub annotations, HTML) all render the same `CiReport`. No timings are recorded, so the
same corpus gives byte-identical reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CI_FORMAT = "fuseopt-ci/1"

# The checks `--checks` selects from, in the order they run and are reported.
CHECKS = ("validate", "optimize", "diff", "determinism")
# Reported checks: `baseline` runs when --baseline is given (on optimize's plan); `report` appears
# only when rendering the HTML section of a graph failed (a bug in fuseopt).
REPORTED_CHECKS = ("validate", "optimize", "baseline", "diff", "determinism", "report")

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
LEVELS = ("error", "warning", "note")


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    level: str  # the default level: error | warning | note
    text: str


# One row per kind of finding (SARIF rules; JUnit failure types; GitHub annotation titles).
RULES: tuple[Rule, ...] = (
    Rule(
        "invalid-graph",
        "InvalidGraph",
        "error",
        "The graph file is not a valid fuseopt graph (docs/format.md).",
    ),
    Rule(
        "plan-invariant", "PlanInvariant", "error", "The plan breaks an invariant (fuseopt/passes/verify.py)."
    ),
    Rule(
        "regression",
        "PlanRegression",
        "error",
        "The plan has more kernels or moves more bytes than the committed golden plan.",
    ),
    Rule("improvement", "PlanImprovement", "note", "The plan is better than the committed golden plan."),
    Rule("plan-changed", "PlanChanged", "note", "Same metrics as the golden plan, other kernels."),
    Rule("no-baseline", "NoBaseline", "warning", "No golden plan is committed for this graph."),
    Rule("bad-baseline", "BadBaseline", "error", "The golden plan file cannot be read."),
    Rule(
        "jit-aot-divergence",
        "JitAotDivergence",
        "error",
        "AOT compilation's second scheduler pass fuses differently from its first (diff-jit-aot).",
    ),
    Rule(
        "nondeterminism",
        "Nondeterminism",
        "error",
        "The plan depends on list order or on the process (check-determinism).",
    ),
    Rule("crash", "InternalError", "error", "fuseopt raised an unexpected exception: a bug in fuseopt."),
)
RULE_INDEX = {r.id: i for i, r in enumerate(RULES)}
# Findings about a place in a file (not about a node of a plan) show their JSON pointer.
POINTER_RULES = frozenset({"invalid-graph", "bad-baseline"})


@dataclass(frozen=True)
class Finding:
    """One located message. `file` is the graph file (or the golden plan it concerns); `line` and
    `column` are 1-based (1:1 when only the file is known); `pointer` is the JSON pointer."""

    rule: str
    level: str
    message: str
    file: str
    pointer: str = ""
    line: int = 1
    column: int = 1
    detail: str = ""  # more lines for people: a caret excerpt, the tail of a traceback

    def __post_init__(self) -> None:
        if self.rule not in RULE_INDEX:
            raise ValueError(f"unknown rule {self.rule!r}")
        if self.level not in LEVELS:
            raise ValueError(f"unknown level {self.level!r}")

    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def text(self) -> str:
        """The message (with its pointer where the pointer is what it is about), then the detail lines."""
        head = (
            f"{self.pointer}: {self.message}" if self.pointer and self.rule in POINTER_RULES else self.message
        )
        return head + ("\n" + self.detail if self.detail else "")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "level": self.level,
            "message": self.message,
            "file": self.file,
            "pointer": self.pointer,
            "line": self.line,
            "column": self.column,
        }
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True)
class CheckResult:
    check: str
    status: str  # passed | failed | error | skipped
    summary: str  # one line for people
    findings: tuple[Finding, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)  # machine details, check-specific

    @property
    def ok(self) -> bool:
        return self.status in (PASSED, SKIPPED)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "summary": self.summary,
            "findings": [f.to_json() for f in self.findings],
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class GraphResult:
    """Every check of one graph file. `plan_json` is optimize's plan as `optimize --format json`
    prints it (for --update-baseline); `html` the graph's section of the HTML report."""

    index: int
    file: str
    key: str
    graph: str | None
    checks: tuple[CheckResult, ...]
    metrics: Mapping[str, int] | None = None
    plan_json: str | None = field(default=None, compare=False, repr=False)
    html: str | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def check(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.check == name), None)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for c in self.checks for f in c.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "key": self.key,
            "graph": self.graph,
            "ok": self.ok,
            "metrics": dict(self.metrics) if self.metrics is not None else None,
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass(frozen=True)
class CiReport:
    checks: tuple[str, ...]  # the columns: selected checks, plus baseline when given
    options: Mapping[str, Any]
    graphs: tuple[GraphResult, ...]
    baseline: str | None = None
    updated: tuple[str, ...] = ()  # golden plans written by --update-baseline
    settings: Mapping[str, Any] = field(default_factory=dict)  # the run's other settings

    @property
    def ok(self) -> bool:
        return all(g.ok for g in self.graphs)

    def count(self, status: str) -> int:
        return sum(1 for g in self.graphs for c in g.checks if c.status == status)

    def rule_count(self, rule: str) -> int:
        return sum(1 for g in self.graphs for f in g.findings if f.rule == rule)

    def summary(self) -> dict[str, int]:
        return {
            "graphs": len(self.graphs),
            "graphs_failed": sum(1 for g in self.graphs if not g.ok),
            "checks": sum(len(g.checks) for g in self.graphs),
            "passed": self.count(PASSED),
            "failed": self.count(FAILED),
            "errors": self.count(ERROR),
            "skipped": self.count(SKIPPED),
            "regressions": self.rule_count("regression"),
            "improvements": self.rule_count("improvement"),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CI_FORMAT,
            "ok": self.ok,
            "checks": list(self.checks),
            "options": dict(self.options),
            "settings": dict(self.settings),
            "baseline": self.baseline,
            "summary": self.summary(),
            "updated_baseline": list(self.updated),
            "graphs": [g.to_json() for g in self.graphs],
        }
