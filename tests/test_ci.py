"""`fuseopt ci`: discovery, checks, baselines, exit codes, and every report (JSON, JUnit, SARIF,
GitHub annotations), each locating the problems it reports in the graph file."""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from fuseopt.ci import checks as ci_checks
from fuseopt.ci.checks import Job, read_source, run_job
from fuseopt.ci.discover import DiscoveryError, discover, golden_path
from fuseopt.ci.github import annotation
from fuseopt.ci.model import RULES, Finding
from fuseopt.cli.main import _register, cli
from fuseopt.errors import InputError
from fuseopt.io.load import load_graph
from fuseopt.io.locate import locate_pointer
from fuseopt.passes.options import Options

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
_register()

# The YAML sample with an unknown function in n0's value, and the JSON sample with a store into an
# unknown buffer: each has one located validation error.
BAD_YAML_VALUE = "value: 2 * softplus(x[2048*i0 + i1])"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["ci", *args])


def make_corpus(root: Path, *, bad: bool = False) -> Path:
    """root/graphs: apbt (YAML), jit_aot (YAML), nn/apbt_json (JSON), cases/view; with `bad`, also
    broken/bad_value.yaml and broken/bad_store.json. Also noise the discovery must skip."""
    g = root / "graphs"
    (g / "nn").mkdir(parents=True)
    (g / "cases").mkdir()
    shutil.copy(SAMPLES / "apbt.yaml", g / "apbt.yaml")
    shutil.copy(SAMPLES / "jit_aot.yaml", g / "jit_aot.yaml")
    shutil.copy(SAMPLES / "cases" / "view.yaml", g / "cases" / "view.yaml")
    data = yaml.safe_load((SAMPLES / "apbt.yaml").read_text())
    data["name"] = "apbt_json"
    (g / "nn" / "apbt_json.json").write_text(json.dumps(data, indent=2) + "\n")
    (g / ".hidden").mkdir()
    (g / ".hidden" / "skip.yaml").write_text("not: [a graph")
    (g / "nn" / "old.plan.json").write_text("{}")
    (g / "README.md").write_text("not a graph file")
    if bad:
        (g / "broken").mkdir()
        text = (SAMPLES / "apbt.yaml").read_text().replace("value: 2 * x[2048*i0 + i1]", BAD_YAML_VALUE)
        assert BAD_YAML_VALUE in text
        (g / "broken" / "bad_value.yaml").write_text(text)
        bad_json = dict(data, name="bad_store")
        bad_json["nodes"] = [dict(n) for n in data["nodes"]]
        bad_json["nodes"][1]["store"] = "nope[i1 + 1024*i0]"
        (g / "broken" / "bad_store.json").write_text(json.dumps(bad_json, indent=2) + "\n")
    return g


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    make_corpus(tmp_path)
    return tmp_path


@pytest.fixture
def bad_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    make_corpus(tmp_path, bad=True)
    return tmp_path


GOOD_KEYS = ["apbt", "cases/view", "jit_aot", "nn/apbt_json"]


# -- discovery -------------------------------------------------------------------------------------
def test_discover_directories_globs_and_files(corpus: Path) -> None:
    files, warnings = discover(["graphs"])
    assert [f.key for f in files] == GOOD_KEYS
    assert [f.path for f in files][:2] == ["graphs/apbt.yaml", "graphs/cases/view.yaml"]
    assert warnings == []
    files, _ = discover(["graphs/**/*.json"])
    assert [(f.path, f.key) for f in files] == [("graphs/nn/apbt_json.json", "nn/apbt_json")]
    files, _ = discover(["graphs/cases/view.yaml", "graphs/cases"])  # found twice: checked once
    assert [f.key for f in files] == ["view"]
    files, _ = discover(["graphs"], exclude=["nn/*", "jit_*.yaml"])
    assert [f.key for f in files] == ["apbt", "cases/view"]
    files, warnings = discover(["graphs", "graphs/*.nothing"])
    assert len(files) == 4 and warnings == ["graphs/*.nothing: no graph files found"]


def test_discover_errors(corpus: Path) -> None:
    with pytest.raises(DiscoveryError, match="no such file or directory"):
        discover(["graphs/missing.yaml"])
    with pytest.raises(DiscoveryError, match="no graph files found"):
        discover(["graphs/*.nothing"])
    shutil.copy(corpus / "graphs" / "apbt.yaml", corpus / "graphs" / "cases" / "apbt.yaml")
    both = ["graphs/apbt.yaml", "graphs/cases/apbt.yaml"]
    assert [f.key for f in discover(both)[0]] == ["apbt", "apbt"]  # fine without a baseline
    with pytest.raises(DiscoveryError, match="would share the golden plan apbt.plan.json"):
        discover(both, unique_keys=True)


def test_golden_path_naming() -> None:
    assert golden_path("golden", "nn/ln") == os.path.join("golden", "nn", "ln.plan.json")


# -- all checks, all reports -------------------------------------------------------------------------
def test_all_checks_pass_and_json_report(corpus: Path) -> None:
    res = invoke("graphs", "--jobs", "1", "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["format"] == "fuseopt-ci/1" and report["ok"] is True
    assert report["checks"] == ["validate", "optimize", "diff", "determinism"]
    assert [g["key"] for g in report["graphs"]] == GOOD_KEYS
    assert report["summary"] == {
        "graphs": 4,
        "graphs_failed": 0,
        "checks": 16,
        "passed": 16,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
        "regressions": 0,
        "improvements": 0,
    }
    apbt = report["graphs"][0]
    assert apbt["metrics"]["kernels"] == 1 and apbt["graph"] == "apbt"
    assert [c["status"] for c in apbt["checks"]] == ["passed"] * 4
    assert report["settings"]["permutations"] == 8 and report["settings"]["processes"] == 0


def test_text_summary_table(corpus: Path) -> None:
    res = invoke("graphs", "--jobs", "1", "--checks", "validate,optimize")
    assert res.exit_code == 0
    assert "nn/apbt_json" in res.stdout and "validate" in res.stdout and "determinism" not in res.stdout
    assert "ok: 4 graphs, 8 checks: 8 passed" in res.stdout


def _diagnostic(path: Path) -> tuple[str, int, int]:
    """The oracle: the pointer, line and column `fuseopt validate` reports for a bad file."""
    with pytest.raises(InputError) as err:
        load_graph(path)
    d = err.value.diagnostics[0]
    assert d.line is not None and d.column is not None
    return d.pointer, d.line, d.column


def test_malformed_graphs_fail_with_located_errors_in_every_report(bad_corpus: Path) -> None:
    yaml_ptr, yaml_line, yaml_col = _diagnostic(bad_corpus / "graphs/broken/bad_value.yaml")
    json_ptr, json_line, json_col = _diagnostic(bad_corpus / "graphs/broken/bad_store.json")
    assert yaml_ptr == "/nodes/0/value" and json_ptr == "/nodes/1/store"
    res = invoke(
        "graphs",
        "--jobs",
        "1",
        "--json",
        "out/report.json",
        "--junit",
        "out/junit.xml",
        "--sarif",
        "out/report.sarif",
        "--html",
        "out/report.html",
        "--github",
    )
    assert res.exit_code == 1, res.output
    bad_yaml = f"graphs/broken/bad_value.yaml:{yaml_line}:{yaml_col}"
    bad_json = f"graphs/broken/bad_store.json:{json_line}:{json_col}"
    # text for people
    assert bad_yaml in res.stdout and bad_json in res.stdout and "unknown function 'softplus'" in res.stdout
    assert "failed: 2 of 6 graphs" in res.stdout
    # GitHub annotations
    assert f"::error file=graphs/broken/bad_value.yaml,line={yaml_line},col={yaml_col}," in res.stdout
    assert f"::error file=graphs/broken/bad_store.json,line={json_line},col={json_col}," in res.stdout
    # JSON
    report = json.loads(Path("out/report.json").read_text())
    assert report["ok"] is False and report["summary"]["graphs_failed"] == 2
    by_key = {g["key"]: g for g in report["graphs"]}
    v = by_key["broken/bad_value"]["checks"][0]
    assert v["check"] == "validate" and v["status"] == "failed"
    f = v["findings"][0]
    assert (f["file"], f["pointer"], f["line"], f["column"]) == (
        "graphs/broken/bad_value.yaml",
        yaml_ptr,
        yaml_line,
        yaml_col,
    )
    assert "softplus" in f["detail"] and "^" in f["detail"]  # the caret excerpt
    assert [c["status"] for c in by_key["broken/bad_value"]["checks"][1:]] == ["skipped"] * 3
    # JUnit
    root = ET.parse("out/junit.xml").getroot()
    case = root.find("testsuite[@name='broken/bad_store']/testcase[@name='validate']")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None and failure.text is not None and bad_json in failure.text
    # SARIF
    sarif = json.loads(Path("out/report.sarif").read_text())
    regions: dict[str, list[dict[str, int]]] = {}
    for r in sarif["runs"][0]["results"]:
        loc = r["locations"][0]["physicalLocation"]
        regions.setdefault(loc["artifactLocation"]["uri"], []).append(loc["region"])
    assert regions["graphs/broken/bad_value.yaml"] == [{"startLine": yaml_line, "startColumn": yaml_col}]
    assert regions["graphs/broken/bad_store.json"][0] == {"startLine": json_line, "startColumn": json_col}
    # HTML
    page = Path("out/report.html").read_text()
    assert bad_yaml in page and bad_json in page and 'data-status="failed"' in page


def test_junit_has_one_case_per_graph_and_check(bad_corpus: Path) -> None:
    res = invoke("graphs", "--jobs", "1", "--junit", "junit.xml")
    assert res.exit_code == 1
    root = ET.parse("junit.xml").getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "24",
        "2",
        "0",
        "6",
    )
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "apbt",
        "broken/bad_store",
        "broken/bad_value",
        "cases/view",
        "jit_aot",
        "nn/apbt_json",
    ]
    for s in suites:
        cases = s.findall("testcase")
        assert [c.get("name") for c in cases] == ["validate", "optimize", "diff", "determinism"]
        assert all(c.get("classname") == s.get("name") for c in cases)
        assert s.get("tests") == "4"
    ok = root.find("testsuite[@name='apbt']")
    assert ok is not None and all(len(c) == 0 for c in ok.findall("testcase"))
    bad = root.find("testsuite[@name='broken/bad_value']")
    assert bad is not None
    fail = bad.find("testcase[@name='validate']/failure")
    assert fail is not None and fail.get("type") == "invalid-graph"
    assert "softplus" in (fail.get("message") or "")
    assert bad.find("testcase[@name='diff']/skipped") is not None


# SARIF 2.1.0's required properties (the schema's `required` lists) and enums used here.
_LEVELS = {"none", "note", "warning", "error"}


def check_sarif(log: dict[str, Any], root: Path) -> list[dict[str, Any]]:
    """Structural validation against SARIF 2.1.0; returns the results."""
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert isinstance(driver["name"], str) and driver["name"]
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    assert len(set(ids)) == len(ids)
    for r in rules:
        assert isinstance(r["id"], str) and r["shortDescription"]["text"]
        assert r["defaultConfiguration"]["level"] in _LEVELS
    assert run["columnKind"] in ("utf16CodeUnits", "unicodeCodePoints")
    for res in run["results"]:
        assert res["message"]["text"]
        assert res["ruleId"] in ids and ids[res["ruleIndex"]] == res["ruleId"]
        assert res["level"] in _LEVELS
        assert len(res["locations"]) >= 1
        phys = res["locations"][0]["physicalLocation"]
        art = phys["artifactLocation"]
        assert art["uriBaseId"] == "%SRCROOT%" and not art["uri"].startswith("/")
        assert (root / art["uri"]).is_file()
        region = phys["region"]
        assert isinstance(region["startLine"], int) and region["startLine"] >= 1
        assert isinstance(region["startColumn"], int) and region["startColumn"] >= 1
    return list(run["results"])


def test_sarif_is_structurally_valid_and_locates_plan_findings(corpus: Path) -> None:
    # Inductor scoring with max_fusion_size 2 reproduces the JIT/AOT seed: diff and determinism fail.
    res = invoke(
        "graphs/jit_aot.yaml",
        "graphs/apbt.yaml",
        "--jobs",
        "1",
        "--scoring",
        "inductor",
        "--max-fusion-size",
        "2",
        "--sarif",
        "out.sarif",
    )
    assert res.exit_code == 1
    results = check_sarif(json.loads(Path("out.sarif").read_text()), corpus)
    by_rule = {(r["properties"]["graph"], r["ruleId"]): r for r in results}
    div = by_rule[("jit_aot", "jit-aot-divergence")]
    assert "proximity" in div["message"]["text"]
    text = (corpus / "graphs/jit_aot.yaml").read_text()
    pointer = div["properties"]["pointer"]
    assert re.fullmatch(r"/nodes/\d+/name", pointer)
    line, col = locate_pointer(text, pointer) or (0, 0)
    assert div["locations"][0]["physicalLocation"]["region"] == {"startLine": line, "startColumn": col}
    assert text.splitlines()[line - 1][col - 1 :].startswith("buf")  # the node's name
    assert ("jit_aot", "nondeterminism") in by_rule


def test_github_annotations(corpus: Path) -> None:
    res = invoke(
        "graphs/jit_aot.yaml", "--jobs", "1", "--scoring", "inductor", "--max-fusion-size", "2", "--github"
    )
    assert res.exit_code == 1
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("::")]
    assert len(lines) == 2
    pattern = re.compile(r"::(error|warning) file=([^,]+),line=(\d+),col=(\d+),title=([^:]+)::(.+)")
    for ln in lines:
        m = pattern.fullmatch(ln)
        assert m is not None, ln
        assert m.group(1) == "error" and m.group(2) == "graphs/jit_aot.yaml" and int(m.group(3)) > 1
        assert "%0A" in m.group(6)  # multi-line messages are escaped


def test_annotation_escaping() -> None:
    f = Finding("regression", "error", "50% worse\nsecond line", "dir,a/b:c.yaml", "", 3, 4)
    assert annotation(f, "baseline") == (
        "::error file=dir%2Ca/b%3Ac.yaml,line=3,col=4,title=fuseopt baseline%3A regression::"
        "50%25 worse%0Asecond line"
    )
    note = Finding("improvement", "note", "better", "g.yaml")
    assert annotation(note, "baseline").startswith("::warning file=g.yaml,line=1,col=1,")


# -- baselines --------------------------------------------------------------------------------------
def test_baseline_regression_and_improvement(corpus: Path) -> None:
    # No golden plans yet: a warning each, not a failure.
    res = invoke("graphs", "--jobs", "1", "--checks", "validate,optimize", "--baseline", "golden", "--github")
    assert res.exit_code == 0
    assert res.stdout.count("::warning ") == 4 and "no golden plan golden/apbt.plan.json" in res.stdout
    # Golden plans from the default options.
    res = invoke("graphs", "--jobs", "1", "--checks", "optimize", "--baseline", "golden", "--update-baseline")
    assert res.exit_code == 0, res.output
    for key in GOOD_KEYS:
        golden = json.loads(Path(golden_path("golden", key)).read_text())
        assert golden["format"] == "fuseopt-plan/2"
    apbt_plan = CliRunner().invoke(cli, ["optimize", "graphs/apbt.yaml", "--format", "json"]).stdout
    assert Path("golden/apbt.plan.json").read_text() == apbt_plan  # what optimize prints
    res = invoke("graphs", "--jobs", "1", "--checks", "optimize", "--baseline", "golden", "--format", "json")
    assert res.exit_code == 0
    report = json.loads(res.stdout)
    assert report["checks"] == ["optimize", "baseline"]
    assert {g["checks"][1]["data"]["status"] for g in report["graphs"]} == {"same"}
    # A worse plan: every kernel one node.
    res = invoke(
        "graphs",
        "--jobs",
        "1",
        "--baseline",
        "golden",
        "--max-fusion-size",
        "1",
        "--json",
        "r.json",
        "--github",
    )
    assert res.exit_code == 1
    report = json.loads(Path("r.json").read_text())
    assert report["summary"]["regressions"] == 4
    apbt = report["graphs"][0]["checks"][2]
    assert apbt["check"] == "baseline" and apbt["status"] == "failed"
    assert apbt["data"]["golden_metrics"]["kernels"] == 1 and apbt["data"]["metrics"]["kernels"] == 3
    f = apbt["findings"][0]
    assert f["rule"] == "regression" and "kernels 1 -> 3 (+2)" in f["message"]
    assert "golden kernel k0 (n0 n1 n2) is now k0 (n0), k1 (n1), k2 (n2)" in f["message"]
    assert "max_fusion_size=64 (this run: 1)" in f["message"]
    assert (f["pointer"], f["line"]) == ("/nodes/0/name", 14)  # n0 in samples/apbt.yaml
    assert "::error file=graphs/apbt.yaml,line=14,col=11,title=fuseopt baseline%3A regression::" in res.stdout
    in_json = report["graphs"][3]["checks"][2]["findings"][0]  # nn/apbt_json: located in JSON too
    line = Path("graphs/nn/apbt_json.json").read_text().splitlines()[in_json["line"] - 1]
    assert in_json["pointer"] == "/nodes/0/name" and line[in_json["column"] - 1 :].startswith('"n0"')
    # Accept the worse plans; the default options are now an improvement (reported, not failed).
    res = invoke(
        "graphs", "--jobs", "1", "--baseline", "golden", "--max-fusion-size", "1", "--update-baseline"
    )
    assert res.exit_code == 0 and "WORSE" in res.stdout and "updated golden/apbt.plan.json" in res.stdout
    res = invoke("graphs", "--jobs", "1", "--checks", "optimize", "--baseline", "golden", "--github")
    assert res.exit_code == 0
    assert "better" in res.stdout and "4 improvements" in res.stdout
    warnings = [ln for ln in res.stdout.splitlines() if ln.startswith("::warning ")]
    assert len(warnings) == 4 and all("improvement against golden/" in w for w in warnings)


def test_bad_golden_plan_is_located_in_the_golden_file(corpus: Path) -> None:
    Path("golden").mkdir()
    Path("golden/apbt.plan.json").write_text('{\n  "format": "fuseopt-plan/1",\n  "kernels": [,]\n}\n')
    res = invoke(
        "graphs/apbt.yaml", "--jobs", "1", "--checks", "optimize", "--baseline", "golden", "--github"
    )
    assert res.exit_code == 1
    assert "::error file=golden/apbt.plan.json,line=3,col=15," in res.stdout


def test_baseline_folder_inside_the_corpus_is_not_searched(corpus: Path) -> None:
    res = invoke(
        "graphs", "--jobs", "1", "--checks", "optimize", "--baseline", "graphs/golden", "--update-baseline"
    )
    assert res.exit_code == 0
    Path("graphs/golden/extra.json").write_text("{}")  # would fail validation if it were searched
    res = invoke("graphs", "--jobs", "1", "--checks", "optimize", "--baseline", "graphs/golden")
    assert res.exit_code == 0, res.output


# -- exit codes and usage -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["graphs/nothing-here"], "no such file or directory"),
        (["graphs/*.nothing"], "no graph files found"),
        (["graphs", "--checks", "validate,lint"], "unknown check(s) lint"),
        (["graphs", "--checks", "validate", "--baseline", "g"], "add optimize to --checks"),
        (["graphs", "--update-baseline"], "--update-baseline needs --baseline"),
        (["graphs", "--github", "--format", "json"], "--json FILE"),
        (["graphs", "--ray-address", "auto"], "--ray-address needs --executor ray"),
        ([], "Missing argument"),
    ],
)
def test_usage_errors_exit_2(corpus: Path, args: list[str], message: str) -> None:
    res = invoke(*args)
    assert res.exit_code == 2
    assert message in res.output


def test_unreadable_and_non_utf8_files_fail_validation(corpus: Path) -> None:
    Path("graphs/latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    res = invoke("graphs/latin1.yaml", "--jobs", "1", "--format", "json")
    assert res.exit_code == 1
    f = json.loads(res.stdout)["graphs"][0]["checks"][0]["findings"][0]
    assert f["message"] == "file is not UTF-8 (byte 9)" and (f["line"], f["column"]) == (1, 1)


def test_a_crash_is_an_error_result_not_a_traceback(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_args: object, **_kw: object) -> None:
        raise RuntimeError("planner exploded")

    monkeypatch.setattr(ci_checks, "diff_finalized", boom)
    res = invoke("graphs/apbt.yaml", "--jobs", "1", "--junit", "j.xml", "--format", "json")
    assert res.exit_code == 1
    diff = json.loads(res.stdout)["graphs"][0]["checks"][2]
    assert diff["status"] == "error" and diff["findings"][0]["rule"] == "crash"
    assert "RuntimeError: planner exploded" in diff["findings"][0]["message"]
    assert "Traceback" in diff["findings"][0]["detail"]
    err = ET.parse("j.xml").getroot().find("testsuite/testcase[@name='diff']/error")
    assert err is not None and "planner exploded" in (err.get("message") or "")


def test_plan_invariant_findings_point_at_the_node(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ci_checks, "plan_problems", lambda _g, _p: ["node n2 is in no kernel"])
    res = invoke("graphs/apbt.yaml", "--jobs", "1", "--checks", "optimize", "--format", "json")
    assert res.exit_code == 1
    check = json.loads(res.stdout)["graphs"][0]["checks"][0]
    f = check["findings"][0]
    assert check["status"] == "failed" and f["rule"] == "plan-invariant"
    assert (f["pointer"], f["line"], f["column"]) == ("/nodes/2/name", 22, 11)


def test_selected_checks_only(corpus: Path) -> None:
    res = invoke("graphs/apbt.yaml", "--jobs", "1", "--checks", "diff,validate", "--format", "json")
    assert res.exit_code == 0
    report = json.loads(res.stdout)
    assert report["checks"] == ["validate", "diff"]
    assert [c["check"] for c in report["graphs"][0]["checks"]] == ["validate", "diff"]


def test_validate_failure_is_reported_even_when_not_selected(bad_corpus: Path) -> None:
    res = invoke("graphs/broken/bad_value.yaml", "--jobs", "1", "--checks", "optimize", "--format", "json")
    assert res.exit_code == 1
    checks = json.loads(res.stdout)["graphs"][0]["checks"]
    assert [(c["check"], c["status"]) for c in checks] == [("validate", "failed"), ("optimize", "skipped")]


# -- executors and determinism of the reports -----------------------------------------------------------
def _reports(tag: str, *extra: str) -> dict[str, str]:
    res = invoke(
        "graphs",
        "--json",
        f"{tag}.json",
        "--junit",
        f"{tag}.xml",
        "--sarif",
        f"{tag}.sarif",
        "--html",
        f"{tag}.html",
        *extra,
    )
    assert res.exit_code == 1, res.output
    return {ext: Path(f"{tag}.{ext}").read_text() for ext in ("json", "xml", "sarif", "html")}


@pytest.mark.slow  # a pool of worker processes, each importing torch
def test_process_pool_gives_the_same_reports_as_inline(bad_corpus: Path) -> None:
    inline = _reports("inline", "--jobs", "1")
    pool = _reports("pool", "--jobs", "2")
    assert pool == inline
    assert _reports("again", "--jobs", "1") == inline  # byte-identical runs


def test_determinism_in_fresh_processes(corpus: Path) -> None:
    res = invoke(
        "graphs/apbt.yaml",
        "--jobs",
        "1",
        "--checks",
        "determinism",
        "--processes",
        "1",
        "--permutations",
        "2",
    )
    assert res.exit_code == 0, res.output
    assert "ok: 1 graph," in res.stdout


def test_run_job_is_the_unit_of_work(corpus: Path) -> None:
    path = "graphs/apbt.yaml"
    job = Job(0, path, "apbt", *read_source(path), checks=("validate", "optimize"), options=Options())
    res = run_job(job)
    assert res.ok and res.graph == "apbt" and res.metrics is not None and res.plan_json is not None
    missing = Job(1, "nope.yaml", "nope", *read_source("nope.yaml"), checks=("validate",), options=Options())
    out = run_job(missing)
    assert not out.ok and out.checks[0].findings[0].message.startswith("cannot read file")


def test_rules_are_unique() -> None:
    assert len({r.id for r in RULES}) == len(RULES)


def _ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow  # starts a local Ray instance (about 12 s)
@pytest.mark.skipif(not _ray_available(), reason="ray is not installed (pip install 'fuseopt[ray]')")
def test_ray_executor_matches_the_process_pool(corpus: Path) -> None:
    res = invoke("graphs", "--jobs", "1", "--json", "local.json")
    assert res.exit_code == 0
    res = invoke("graphs", "--executor", "ray", "--jobs", "2", "--json", "ray.json")
    assert res.exit_code == 0, res.output
    assert Path("ray.json").read_text() == Path("local.json").read_text()


def test_ray_missing_is_a_clear_usage_error(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    res = invoke("graphs/apbt.yaml", "--executor", "ray")
    assert res.exit_code == 2
    assert "--executor ray needs the ray package: pip install 'fuseopt[ray]'" in res.output
