"""GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=T::message` per finding.

Errors become `::error`; warnings and notes (an improvement, a missing golden plan) `::warning`,
so they show on the pull request without failing it. Values are escaped as the runner expects.
"""

from __future__ import annotations

from fuseopt.ci.model import CiReport, Finding
from fuseopt.report.escaping import printable
from fuseopt.report.words import clip

LEVEL_COMMAND = {"error": "error", "warning": "warning", "note": "warning"}


def _data(text: str) -> str:
    """A command's message: `%`, CR and LF encoded; other unprintable characters (an ANSI escape,
    a lone surrogate) shown as their Python escape."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding, check: str) -> str:
    props = f"file={_prop(f.file)},line={f.line},col={f.column},title={_prop(f'fuseopt {check}: {f.rule}')}"
    text = "\n".join(clip(line) for line in f.text().splitlines())  # the JSON report has it whole
    return f"::{LEVEL_COMMAND[f.level]} {props}::{_data(text)}"


def annotation_lines(report: CiReport) -> list[str]:
    return [annotation(f, c.check) for g in report.graphs for c in g.checks for f in c.findings]
