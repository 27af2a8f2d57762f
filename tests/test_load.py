"""The loader on hostile and malformed files: caps, YAML hazards (aliases, tags, depth) under both the
libyaml and the pure-Python parser, duplicate keys, and line:column for JSON and YAML."""

from __future__ import annotations

import copy
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuseopt.io.load as loader
from fuseopt.errors import Diagnostic, InputError
from fuseopt.io.load import MAX_FILE_BYTES, load_graph, load_text, parse_text
from fuseopt.io.locate import locate_pointer
from fuseopt.ir.serialize import dump_json, dump_yaml

GRAPH = """\
format: fuseopt-graph/1
name: g
buffers:
  x: {shape: [8, 16], dtype: float32, role: input}
  y: {shape: [8, 16], dtype: float32, role: output}
nodes:
  - name: n0
    loops: [[i0, 8], [i1, 16]]
    store: y[16*i0 + i1]
    value: 2 * x[16*i0 + i1]
"""
DOC: dict[str, Any] = yaml.safe_load(GRAPH)


@pytest.fixture(params=["libyaml", "python"])
def yaml_impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test under both YAML parsers."""
    if request.param == "libyaml":
        if loader._CParser is None:
            pytest.skip("PyYAML without libyaml")
        monkeypatch.setattr(loader, "USE_LIBYAML", True)
    else:
        monkeypatch.setattr(loader, "USE_LIBYAML", False)
    yield request.param


def errors(text: str, file: str = "g.yaml") -> tuple[Diagnostic, ...]:
    with pytest.raises(InputError) as info:
        load_text(text, file)
    return info.value.diagnostics


def one_error(text: str, file: str = "g.yaml") -> Diagnostic:
    (d,) = errors(text, file)
    return d


def test_libyaml_is_used_when_available() -> None:
    if getattr(yaml, "__with_libyaml__", False):
        assert loader._CParser is not None and loader.USE_LIBYAML


# -- size caps ------------------------------------------------------------------------------------
def test_file_over_16_mib_is_rejected_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk
    d = _load_error(big)
    assert "larger than 16777216 bytes" in d.message and d.code == "limit" and d.pointer == ""


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_endless_device_file_is_capped() -> None:
    t0 = time.perf_counter()
    d = _load_error(Path("/dev/zero"))
    assert "larger than" in d.message
    assert time.perf_counter() - t0 < 10


def test_load_text_has_the_same_cap() -> None:
    d = one_error(" " * (MAX_FILE_BYTES + 1))
    assert "larger than" in d.message


def test_file_exactly_at_the_cap_is_read(tmp_path: Path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(GRAPH + "#" * (MAX_FILE_BYTES - len(GRAPH) - 1) + "\n")
    assert f.stat().st_size == MAX_FILE_BYTES
    assert load_graph(f).name == "g"


def _load_error(path: Path) -> Diagnostic:
    with pytest.raises(InputError) as info:
        load_graph(path)
    (d,) = info.value.diagnostics
    return d


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    assert _load_error(tmp_path / "absent.yaml").code == "io"
    assert _load_error(tmp_path).code == "io"  # a directory
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(GRAPH.replace("name: g", "name: g\ndescription: caf\xe9").encode("latin-1"))
    d = _load_error(bad)
    assert d.code == "encoding" and "not UTF-8" in d.message


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    for name, text in (("g.yaml", GRAPH), ("g.json", json.dumps(DOC))):
        f = tmp_path / name
        f.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert load_graph(f).name == "g"


# -- YAML hazards, under both parsers ------------------------------------------------------------
BOMB = "format: fuseopt-graph/1\nmeta:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  l{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 9) + "]\n" for k in range(1, 30)
)


def test_alias_bomb_fails_fast_and_located(yaml_impl: str) -> None:
    t0 = time.perf_counter()
    d = one_error(BOMB)
    assert time.perf_counter() - t0 < 1.0
    assert d.pointer == "/meta/l0" and "anchors (&l0) are not allowed" in d.message
    assert (d.line, d.column) == (3, 7)


@pytest.mark.parametrize(
    ("text", "pointer", "message"),
    [
        ("a: &a [*a]\n", "/a", "anchors (&a)"),
        ("a: &a {self: *a}\n", "/a", "anchors (&a)"),
        ("a: [1, &x 2]\n", "/a/1", "anchors (&x)"),
        ("a: *undefined\n", "/a", "aliases (*undefined)"),
        ("a: {b: [1, *z]}\n", "/a/b/1", "aliases (*z)"),
        ("a: {<<: {b: 1}}\n", "/a", "merge keys (<<)"),
        (
            "a: !!python/object/apply:os.system [ls]\n",
            "/a",
            "tag 'tag:yaml.org,2002:python/object/apply:os.system'",
        ),
        ("a: !!binary aGVsbG8=\n", "/a", "tag 'tag:yaml.org,2002:binary'"),
        ("a: !!set {x, y}\n", "/a", "tag 'tag:yaml.org,2002:set'"),
        ("a: !custom 1\n", "/a", "tag '!custom'"),
        ("a: 1\na: 2\n", "/a", "duplicate key 'a'"),
        ("a: {1: x, 0x1: y}\n", "/a/0x1", "duplicate key '0x1'"),
        ("a: {true: x, 1: y}\n", "/a/1", "duplicate key '1'"),
        ("a: {[1]: x}\n", "/a", "mapping keys must be plain scalars"),
        ("a: " + ":".join(["1"] * 40) + "\n", "/a", "number is 79 characters long"),
        ("a: [1, 2\nb: 3\n", "/a", "YAML:"),
        ("---\na: 1\n---\nb: 2\n", "", "expected a single document"),
    ],
)
def test_yaml_hazards_are_located(yaml_impl: str, text: str, pointer: str, message: str) -> None:
    d = one_error(text)
    assert d.pointer == pointer, d
    assert message in d.message
    assert d.line is not None and d.column is not None


def test_yaml_control_character(yaml_impl: str) -> None:
    d = one_error("a: b\x07\n")
    assert "#x0007" in d.message and d.line == 1


def test_timestamps_stay_text(yaml_impl: str) -> None:
    g = load_text(GRAPH + "meta: {date: 2024-01-01, when: 2024-01-01 10:00:00}\n", "g.yaml")
    assert g.meta["date"] == "2024-01-01" and isinstance(g.meta["when"], str)
    json.dumps(dict(g.meta))  # meta is plain JSON data


def test_yaml_scalars_are_json_values(yaml_impl: str) -> None:
    data = parse_text("a: [1, 0x10, 1_000, -2.5, .inf, ~, true, 'x', 010]\n", "d.yaml")
    assert data["a"][:4] == [1, 16, 1000, -2.5]
    assert data["a"][4] == float("inf") and data["a"][5] is None and data["a"][6] is True
    assert data["a"][7:] == ["x", 8]


DEEP_SCRIPT = """
import sys, fuseopt.io.load as L
L.USE_LIBYAML = sys.argv[1] == "1"
kind = sys.argv[2]
n = 100_000
text = {"flow": "[" * n + "]" * n, "block": "- " * n + "1\\n", "map": "".join(" " * k + "a:\\n" for k in range(2000)),
        "json": "[" * n + "]" * n}[kind]
try:
    L.load_text(text, "deep.json" if kind == "json" else "deep.yaml")
except L.InputError as e:
    d = e.diagnostics[0]
    print(d.message, d.pointer.count("/"), d.line)
"""


@pytest.mark.parametrize("impl", ["1", "0"])
@pytest.mark.parametrize("kind", ["flow", "block", "map", "json"])
def test_deep_documents_fail_cleanly(impl: str, kind: str) -> None:
    """libyaml's own composer recurses in C: 100,000 levels crashed the process (SIGSEGV). Run in a
    subprocess so that a regression is a failure, not a dead test run."""
    if impl == "1" and loader._CParser is None:
        pytest.skip("PyYAML without libyaml")
    proc = subprocess.run(
        [sys.executable, "-c", DEEP_SCRIPT, impl, kind], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "document nests deeper than 64 levels 64" in proc.stdout, proc.stdout


# -- JSON -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("edit", "pointer", "message", "at"),
    [
        (
            lambda t: t.replace('"n0",', '"n0", "name": "n1",'),
            "/nodes/0/name",
            "duplicate key 'name'",
            '"name": "n1"',
        ),
        (
            lambda t: t.replace('"output"\n    }', '"output",\n    }'),
            "/buffers/y",
            "Expecting property name",
            "}",
        ),
        (lambda t: t.replace("16\n", "NaN\n", 1), "/buffers/x/shape/1", "NaN is not valid JSON", "NaN"),
        (
            lambda t: t.replace("16\n", "1" * 5000 + "\n", 1),
            "/buffers/x/shape/1",
            "Exceeds the limit",
            "1111",
        ),
        (lambda t: t.replace('"buffers"', "buffers"), "", "Expecting property name", "buffers:"),
    ],
)
def test_json_errors_are_located(edit: Any, pointer: str, message: str, at: str) -> None:
    text = edit(json.dumps(DOC, indent=2))
    d = one_error(text, "g.json")
    assert d.pointer == pointer and message in d.message, d
    assert d.line is not None and d.column is not None
    assert text.splitlines()[d.line - 1][d.column - 1 :].startswith(at), (d, text.splitlines()[d.line - 1])


def test_json_depth_is_located() -> None:
    doc = copy.deepcopy(DOC)
    doc["meta"] = {"deep": json.loads("[" * 80 + "]" * 80)}
    text = json.dumps(doc)
    d = one_error(text, "g.json")
    assert d.pointer == "/meta/deep" + "/0" * 62
    assert d.column == text.index("[[[") + 64 - 1


def test_positions_for_json_and_yaml_agree_with_the_text() -> None:
    bad = copy.deepcopy(DOC)
    bad["nodes"][0]["value"] = "2 * x[16*i0 + i1 + 1]"
    bad["buffers"]["x"]["colour"] = "red"
    for text, file in (
        (json.dumps(bad, indent=2), "g.json"),
        (yaml.safe_dump(bad, sort_keys=False), "g.yaml"),
    ):
        (d,) = errors(text, file)  # structure first: the unknown field
        assert d.pointer == "/buffers/x/colour"
        line = text.splitlines()[d.line - 1]
        assert line[d.column - 1 :].startswith(("red", '"red"')), (file, line)
        del bad["buffers"]["x"]["colour"]
        text2 = json.dumps(bad, indent=2) if file == "g.json" else yaml.safe_dump(bad, sort_keys=False)
        (d2,) = errors(text2, file)
        assert d2.pointer == "/nodes/0/value" and d2.span is not None
        line2 = text2.splitlines()[d2.line - 1]
        assert "2 * x[16*i0 + i1 + 1]" in line2[d2.column - 1 :]
        bad["buffers"]["x"]["colour"] = "red"


def test_missing_field_is_located_at_its_parent() -> None:
    doc = copy.deepcopy(DOC)
    del doc["nodes"][0]["store"]
    text = yaml.safe_dump(doc, sort_keys=False)
    d = one_error(text)
    assert d.pointer == "/nodes/0/store" and "Field required" in d.message
    assert text.splitlines()[d.line - 1].lstrip().startswith("- name: n0")


def test_locate_pointer_api() -> None:
    text = json.dumps(DOC, indent=2)
    pos = locate_pointer(text, "/nodes/0/value", yaml_syntax=False)
    assert pos is not None and '"2 * x[' in text.splitlines()[pos[0] - 1]
    assert locate_pointer(GRAPH, "/nodes/0/value") == (10, 12)
    assert locate_pointer(GRAPH, "/nodes/0/nothing/here") == (7, 5)
    assert locate_pointer("a: &x 1", "/a") is None  # rejected text: no position, no crash


# -- round trips and equivalence ------------------------------------------------------------------
def test_json_and_yaml_give_the_same_graph(yaml_impl: str) -> None:
    g1 = load_text(GRAPH, "g.yaml")
    g2 = load_text(json.dumps(DOC), "g.json")
    assert g1 == g2
    assert load_text(dump_json(g1), "g.json") == g1
    assert load_text(dump_yaml(g1), "g.yaml") == g1


def test_both_yaml_parsers_agree_on_the_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = sorted((Path(__file__).parent.parent / "samples").rglob("*.yaml"))
    for s in samples:
        text = s.read_text()
        monkeypatch.setattr(loader, "USE_LIBYAML", False)
        a = parse_text(text, str(s))
        monkeypatch.setattr(loader, "USE_LIBYAML", loader._CParser is not None)
        b = parse_text(text, str(s))
        assert a == b == yaml.safe_load(text), s


def test_garbage_collector_is_restored() -> None:
    assert gc.isenabled()
    load_text(GRAPH, "g.yaml")
    assert gc.isenabled()
    errors("a: &x 1")
    assert gc.isenabled()


# -- fuzzing: the loader raises InputError or returns a graph ---------------------------------------
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300), st.sampled_from(["f.yaml", "f.json"]))
def test_fuzz_text(text: str, file: str) -> None:
    try:
        load_text(text, file)
    except InputError as err:
        assert err.diagnostics


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
        st.text(max_size=20), st.sampled_from(["x", "i0", "y[i0]", "x[16*i0 + i1]", "float32", "input", "mm"]),
    ),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=10,
)  # fmt: skip


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_structure(data: st.DataObject) -> None:
    """Replace one part of a valid graph by an arbitrary JSON value: never anything but InputError,
    and every diagnostic is located."""
    doc = copy.deepcopy(DOC)
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    target = doc
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = data.draw(JSON_VALUES)
    for text, file in ((json.dumps(doc), "f.json"), (yaml.safe_dump(doc), "f.yaml")):
        try:
            load_text(text, file)
        except InputError as err:
            for d in err.diagnostics:
                assert d.line is not None, d
