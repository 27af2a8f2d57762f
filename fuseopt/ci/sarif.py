"""SARIF 2.1.0 for code scanning: one result per finding, located in the graph file.

Validation errors keep their line:column; plan-level findings point at the node they concern
(`locations.Locator`); file-level ones at 1:1. Paths inside the current directory are relative
URIs against `%SRCROOT%` (GitHub code scanning resolves them against the checkout); others are
absolute `file://` URIs. Rules are the fixed table `model.RULES`, so rule indices never move.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from fuseopt import __version__
from fuseopt.ci.model import RULE_INDEX, RULES, CiReport, Finding
from fuseopt.report.escaping import printable

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"


def _quote(path: str) -> str:
    """A path as URI text: the file system's bytes percent-encoded (a name that is not UTF-8
    keeps its bytes); a path no file system could hold, as its printable escape."""
    try:
        return quote(os.fsencode(path))
    except UnicodeEncodeError:
        return quote(printable(path))


def artifact_location(file: str) -> dict[str, str]:
    if os.path.isabs(file):
        return {"uri": "file://" + _quote(file if file.startswith("/") else "/" + file.replace(os.sep, "/"))}
    return {"uri": _quote(file), "uriBaseId": SRCROOT}


def _result(f: Finding, check: str, key: str) -> dict[str, Any]:
    return {
        "ruleId": f.rule,
        "ruleIndex": RULE_INDEX[f.rule],
        "level": f.level,
        "message": {"text": f.text()},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact_location(f.file),
                    "region": {"startLine": f.line, "startColumn": f.column},
                }
            }
        ],
        "properties": {"check": check, "graph": key, "pointer": f.pointer},
    }


def sarif_log(report: CiReport) -> dict[str, Any]:
    rules = [
        {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.text},
            "defaultConfiguration": {"level": r.level},
        }
        for r in RULES
    ]
    results = [_result(f, c.check, g.key) for g in report.graphs for c in g.checks for f in c.findings]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fuseopt",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
