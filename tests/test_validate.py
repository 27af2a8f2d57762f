"""`fuseopt validate` on the malformed-graph corpus (tests/bad_inputs/) and on valid graphs.

Every corpus file must fail with exit code 2 and exactly the diagnostics listed for it in
tests/bad_inputs/expected.yaml (JSON pointer + a substring of the message, in order), printed
without a traceback; expression errors carry a span, and every located diagnostic a line and
column. Injection strings must stay inert: the test points them at a fresh path and checks that
nothing created it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fuseopt.aot.determinism import fuseopt_command
from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_text

BAD = Path(__file__).parent / "bad_inputs"
EXPECTED: dict[str, list[dict[str, str]]] = yaml.safe_load((BAD / "expected.yaml").read_text())
CORPUS = sorted(p.name for p in BAD.iterdir() if p.suffix in (".yaml", ".json") and p.name != "expected.yaml")
MARKER = "/tmp/fuseopt-injection-marker"
# Diagnostics about the file as a whole (no value to point into) have the root pointer "".
FILE_LEVEL_CODES = {"io", "encoding", "limit"}
# Codes of diagnostics about an expression (pydantic's own codes, e.g. string_too_long, are not).
EXPR_CODES = {
    "syntax",
    "expr",
    "name",
    "type",
    "bounds",
    "reduction",
    "store",
    "order",
    "dtype",
    "limit",
    "arity",
}
EXPR_CODES |= {"unknown-function"}
EXPR_CODES |= {"coverage"}  # a store that does not write its buffer whole, exactly once

_register()


def _validate(*args: str) -> Any:
    return CliRunner().invoke(cli, ["validate", *args], catch_exceptions=False)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """A path no one has created: injection strings are rewritten to `touch` it."""
    return Path("/tmp") / f"fuseopt-injection-{uuid.uuid4().hex}"


def _copy(name: str, tmp_path: Path, marker: Path) -> Path:
    text = (BAD / name).read_text()
    dst = tmp_path / name
    dst.write_text(text.replace(MARKER, str(marker)))
    return dst


def test_corpus_is_large_and_described() -> None:
    assert len(CORPUS) >= 40
    assert sorted(EXPECTED) == CORPUS, "every corpus file needs an entry in expected.yaml (and vice versa)"
    assert {Path(n).suffix for n in CORPUS} == {".yaml", ".json"}
    injections = [n for n in CORPUS if n.startswith("inject_")]
    assert len(injections) >= 15


@pytest.mark.parametrize("name", CORPUS)
def test_bad_input_is_rejected_with_located_diagnostics(name: str, tmp_path: Path, marker: Path) -> None:
    path = _copy(name, tmp_path, marker)
    result = _validate("--format", "json", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    report = json.loads(result.stdout)
    (entry,) = report["results"]
    assert entry["valid"] is False
    got = entry["errors"]
    want = EXPECTED[name]
    esc = MARKER.replace("/", "~1"), str(marker).replace("/", "~1")
    assert [e["pointer"] for e in got] == [w["pointer"].replace(*esc) for w in want], got
    for e, w in zip(got, want, strict=True):
        assert w["message"] in e["message"], (e, w)
        assert e["file"] == str(path)
        in_expression = re.fullmatch(r"/nodes/\d+/(value|store)", e["pointer"]) is not None
        if in_expression and e["code"] in EXPR_CODES and not e["message"].startswith(("YAML:", "JSON:")):
            assert "source" in e and "span" in e, e  # expression errors carry a caret
        if "source" in e:
            start, end = e["span"]
            assert 0 <= start <= end <= len(e["source"]) + 1
        if e["pointer"] or e["code"] not in FILE_LEVEL_CODES:
            assert e.get("line", 0) >= 1 and e.get("column", 0) >= 1, e
    assert not marker.exists()


def test_expression_diagnostics_point_at_the_offending_characters(tmp_path: Path, marker: Path) -> None:
    cases = {
        "unknown_buffer_in_value.yaml": "y[16*i0 + i1]",
        "unknown_variable.yaml": "j",
        "expr_bad_character.json": "$",
        "oob_load_min.yaml": "x[16*min(i0 + 1, 8) + i1]",
        "inject_lambda.json": ":",
        "index_true_division.yaml": "i1 / 2",
    }
    for name, offending in cases.items():
        result = _validate("--format", "json", str(_copy(name, tmp_path, marker)))
        (err,) = json.loads(result.stdout)["results"][0]["errors"]
        start, end = err["span"]
        assert err["source"][start:end] == offending, (name, err)


def test_text_output_has_carets_and_no_traceback(tmp_path: Path, marker: Path) -> None:
    result = _validate(str(_copy("many_errors.yaml", tmp_path, marker)))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "6 errors" in result.stderr
    assert "many_errors.yaml:12:12: /nodes/0/store: store index of 'buf0'" in result.stderr
    assert "    ^^^^" in result.stderr


def test_one_run_reports_every_error_of_every_file(tmp_path: Path, marker: Path) -> None:
    files = [
        str(_copy(n, tmp_path, marker)) for n in ("many_errors.yaml", "oob_store.yaml", "inject_value.yaml")
    ]
    result = _validate("--format", "json", *files)
    assert result.exit_code == 2
    results = json.loads(result.stdout)["results"]
    assert [len(r["errors"]) for r in results] == [6, 1, 1]
    codes = {e["code"] for e in results[0]["errors"]}
    assert {"bounds", "name", "dtype", "duplicate", "store", "unwritten"} <= codes


def test_valid_and_invalid_files_together(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text((BAD / "oob_store.yaml").read_text().replace("buf0[16*i0 + i1 + 1]", "buf0[16*i0 + i1]"))
    result = _validate(str(good), str(BAD / "oob_store.yaml"))
    assert result.exit_code == 2
    assert "ok " in result.stdout and "graph base, 2 nodes, 4 buffers" in result.stdout
    ok = _validate(str(good))
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("name", ["yaml_alias_bomb.yaml", "inject_value.yaml", "document_too_deep.json"])
def test_real_cli_process(name: str, tmp_path: Path, marker: Path) -> None:
    path = _copy(name, tmp_path, marker)
    proc = subprocess.run(fuseopt_command("validate", str(path)), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert EXPECTED[name][0]["message"] in proc.stderr
    assert not marker.exists()


def test_missing_file_and_directory_exit_2(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.yaml", tmp_path):
        result = _validate(str(path))
        assert result.exit_code == 2
        assert "Traceback" not in result.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_device_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "g.yaml"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO (named pipe)"), (Path("/dev/zero"), "a character device")):
        proc = subprocess.run(
            fuseopt_command("validate", "--format", "json", str(path)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stderr
        (err,) = json.loads(proc.stdout)["results"][0]["errors"]
        assert err["code"] == "io" and err["file"] == str(path), err
        assert f"{kind}, not a regular file" in err["message"]


# -- semantic checks on valid graphs (they must keep passing) --------------------------------------
def _ext(op: str, shapes: dict[str, list[int]], inputs: list[str], dtype: str = "float32") -> str:
    bufs = {
        n: {"shape": s, "dtype": dtype, "role": "output" if n == "c" else "input"} for n, s in shapes.items()
    }
    doc = {
        "format": "fuseopt-graph/1",
        "name": "ext",
        "buffers": bufs,
        "nodes": [{"name": "k", "kind": "extern", "op": op, "inputs": inputs, "output": "c"}],
    }
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("op", "shapes", "inputs"),
    [
        ("mm", {"a": [8, 16], "b": [16, 4], "c": [8, 4]}, ["a", "b"]),
        ("bmm", {"a": [2, 8, 16], "b": [2, 16, 4], "c": [2, 8, 4]}, ["a", "b"]),
        ("addmm", {"bias": [4], "a": [8, 16], "b": [16, 4], "c": [8, 4]}, ["bias", "a", "b"]),
        ("addmm", {"bias": [8, 1], "a": [8, 16], "b": [16, 4], "c": [8, 4]}, ["bias", "a", "b"]),
        ("addmm", {"bias": [8, 4], "a": [8, 16], "b": [16, 4], "c": [8, 4]}, ["bias", "a", "b"]),
        ("addmm", {"bias": [], "a": [8, 16], "b": [16, 4], "c": [8, 4]}, ["bias", "a", "b"]),
    ],
)
def test_library_ops_with_compatible_shapes_load(
    op: str, shapes: dict[str, list[int]], inputs: list[str]
) -> None:
    g = load_text(_ext(op, shapes, inputs), "ext.json")
    assert g.nodes[0].name == "k"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_library_ops_accept_every_floating_dtype(dtype: str) -> None:
    load_text(_ext("mm", {"a": [8, 16], "b": [16, 4], "c": [8, 4]}, ["a", "b"], dtype), "ext.json")


def _reduction(op: str, dtype: str, rsize: int = 16) -> str:
    return (
        "format: fuseopt-graph/1\nname: r\nbuffers:\n"
        f"  x: {{shape: [4, {rsize}], dtype: float32, role: input}}\n"
        f"  o: {{shape: [4], dtype: {dtype}, role: output}}\n"
        "nodes:\n"
        f"  - {{name: n, loops: [[i0, 4]], reduce: [[r0, {rsize}]], store: 'o[i0]', value: '{op}(x[{rsize}*i0 + r0] > 0)'}}\n"
    )


@pytest.mark.parametrize(
    ("op", "dtype"),
    [
        ("argmax", "int64"),
        ("argmin", "int32"),
        ("argmax", "int8"),
        ("any", "bool"),
        ("any", "int32"),
        ("sum", "float16"),
    ],
)
def test_reduction_results_into_fitting_buffers_load(op: str, dtype: str) -> None:
    load_text(_reduction(op, dtype), "r.yaml")


def test_argmax_index_range_decides_the_smallest_integer_buffer() -> None:
    load_text(_reduction("argmax", "uint8", 256), "r.yaml")  # indices 0..255 fit
    with pytest.raises(Exception, match="indices up to 256, which uint8"):
        load_text(_reduction("argmax", "uint8", 257), "r.yaml")


def test_bool_value_into_float_buffer_is_a_cast() -> None:
    text = _reduction("sum", "float32").replace("sum(x[16*i0 + r0] > 0)", "max(x[16*i0 + r0] > 0)")
    load_text(text, "r.yaml")


def test_samples_still_validate() -> None:
    samples = sorted((Path(__file__).parent.parent / "samples").rglob("*.yaml"))
    assert samples
    result = _validate(*map(str, samples))
    assert result.exit_code == 0, result.output


# -- many errors: every one in JSON, the first 100 of a file for people, in time linear in them --------
def _many_errors_file(tmp_path: Path, n: int, suffix: str = ".json") -> Path:
    """n nodes with one error each (an unknown buffer)."""
    bufs: dict[str, Any] = {"x": {"shape": [8], "dtype": "float32", "role": "input"}}
    nodes = []
    for i in range(n):
        bufs[f"o{i}"] = {"shape": [8], "dtype": "float32", "role": "output"}
        nodes.append(
            {"name": f"n{i}", "loops": [["i0", 8]], "store": f"o{i}[i0]", "value": "nope[i0] + x[i0]"}
        )
    doc = {"format": "fuseopt-graph/1", "name": "many", "buffers": bufs, "nodes": nodes}
    path = tmp_path / f"many{suffix}"
    path.write_text(json.dumps(doc, indent=1) if suffix == ".json" else yaml.safe_dump(doc, sort_keys=False))
    return path


def test_people_get_a_files_first_100_errors_and_machines_all(tmp_path: Path, marker: Path) -> None:
    many = _many_errors_file(tmp_path, 150)
    other = _copy("many_errors.yaml", tmp_path, marker)
    text = _validate(str(many), str(other))
    assert text.exit_code == 2
    shown = [ln for ln in text.stderr.splitlines() if ln.startswith("error: ")]
    assert len(shown) == 100 + 6  # the second file's errors are not crowded out
    assert f"... and 50 more in {many} (`fuseopt validate --format json` lists all)" in text.stderr
    assert "156 errors" in text.stderr
    report = json.loads(_validate("--format", "json", str(many)).stdout)
    errs = report["results"][0]["errors"]
    assert len(errs) == 150 and [e["pointer"] for e in errs] == [f"/nodes/{i}/value" for i in range(150)]
    assert all(e["line"] >= 1 and e["column"] >= 1 for e in errs)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_sixty_thousand_errors_validate_in_seconds(tmp_path: Path, suffix: str) -> None:
    """Was over 120 s (YAML) and 500 s (JSON): line:column counted newlines from the start of the
    file for every diagnostic, and rich rendered each of 60,000."""
    path = _many_errors_file(tmp_path, 60_000, suffix)
    for fmt in ("text", "json"):
        t0 = time.perf_counter()
        proc = subprocess.run(
            fuseopt_command("validate", "--format", fmt, str(path)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        elapsed = time.perf_counter() - t0
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        if fmt == "json":
            assert len(json.loads(proc.stdout)["results"][0]["errors"]) == 60_000
        assert elapsed < (30 if suffix == ".json" else 60), elapsed
