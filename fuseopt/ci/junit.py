"""JUnit XML for CI test tabs: one <testsuite> per graph, one <testcase> per check.

`classname` is the graph's key and `name` the check, so test reporters group by graph. A failed
check is a <failure> (type = the rule of its first finding; the text lists every finding with its
file:line:column), a crash an <error>, a check that could not run <skipped>. No timings: the same
run gives the same file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from fuseopt.ci.model import ERROR, FAILED, SKIPPED, CheckResult, CiReport

# XML 1.0 cannot hold most control characters, even escaped, nor UTF-8 lone surrogates.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _clean(text: str) -> str:
    """Text for XML: what XML 1.0 cannot hold shown as its escape (`\\x1b`, `\\ud800`)."""
    return _INVALID_XML.sub(lambda m: ascii(m.group())[1:-1], text)


def _body(c: CheckResult) -> str:
    lines = []
    for f in c.findings:
        lines.append(f"{f.where()}: {f.level}: [{f.rule}] {f.text()}")
    return _clean("\n".join(lines) or c.summary)


def junit_xml(report: CiReport) -> str:
    s = report.summary()
    root = ET.Element(
        "testsuites",
        {
            "name": "fuseopt ci",
            "tests": str(s["checks"]),
            "failures": str(s["failed"]),
            "errors": str(s["errors"]),
            "skipped": str(s["skipped"]),
        },
    )
    for g in report.graphs:
        counts = {st: sum(1 for c in g.checks if c.status == st) for st in (FAILED, ERROR, SKIPPED)}
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": _clean(g.key),
                "file": _clean(g.file),
                "tests": str(len(g.checks)),
                "failures": str(counts[FAILED]),
                "errors": str(counts[ERROR]),
                "skipped": str(counts[SKIPPED]),
            },
        )
        for c in g.checks:
            case = ET.SubElement(
                suite,
                "testcase",
                {"classname": _clean(g.key), "name": _clean(c.check), "file": _clean(g.file)},
            )
            first = c.findings[0] if c.findings else None
            if c.status in (FAILED, ERROR):
                tag = "failure" if c.status == FAILED else "error"
                el = ET.SubElement(
                    case,
                    tag,
                    {"message": _clean(c.summary), "type": _clean(first.rule if first else c.check)},
                )
                el.text = _body(c)
            elif c.status == SKIPPED:
                ET.SubElement(case, "skipped", {"message": _clean(c.summary)})
            elif c.findings:  # passed with notes: an improvement, a missing golden plan
                out = ET.SubElement(case, "system-out")
                out.text = _body(c)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
