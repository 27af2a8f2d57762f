"""The docs ship with the project and say what the code does: no citation of files that do not
ship, every relative link resolves, and documented examples are the real output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from fuseopt.cli.main import _register, cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _cli(*args: str) -> tuple[int, str]:
    _register()
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def test_no_citation_of_documents_that_do_not_ship() -> None:
    cited = re.compile(r"(?<![\w/])(FORMAT|CASES|INDUCTOR)\.md")
    offenders = []
    for pattern in ("fuseopt/**/*.py", "tests/**/*.py", "benchmarks/**/*.py", "**/*.md", "schemas/*.json"):
        for path in ROOT.glob(pattern):
            if path.name == "CHANGELOG.md" or ".egg-info" in str(path):
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if cited.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{i}")
    assert not offenders, offenders


def test_relative_links_resolve() -> None:
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            assert (doc.parent / target).exists(), f"{doc.name}: {target}"


def _json_block_after(doc: Path, heading: str) -> object:
    text = doc.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None
    return json.loads(block.group(1))


def test_the_documented_plan_is_the_real_plan() -> None:
    code, out = _cli("optimize", str(ROOT / "samples" / "apbt.yaml"), "--format", "json")
    assert code == 0
    assert _json_block_after(ROOT / "docs" / "format.md", "## Plans") == json.loads(out)


def test_the_readme_explain_example() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"`fuseopt explain samples/apbt.yaml n1 n2 --no-loop-order` says\s+why: `([^`]*)`", text)
    assert m is not None
    said = " ".join(m.group(1).split())
    reason, _, detail = said.partition(": ")
    code, out = _cli("explain", str(ROOT / "samples" / "apbt.yaml"), "n1", "n2", "--no-loop-order")
    assert code == 0 and f"reason: {reason}" in out and detail in " ".join(out.split())


def test_the_readme_seed_2_demo_diverges() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = text.index("fuseopt diff-jit-aot samples/jit_aot.yaml")
    line = text[first:].splitlines()[0].split("#")[0].split()
    code, out = _cli(*line[1:])
    assert code == 1 and "divergent" in out
