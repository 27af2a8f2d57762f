"""The loader on hostile and malformed files: caps, YAML hazards (aliases, tags, depth) under both the
libyaml and the pure-Python parser, duplicate keys, and line:column for JSON and YAML."""

from __future__ import annotations

import copy
import gc
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuseopt.io.load as loader
from fuseopt.errors import Diagnostic, InputError
from fuseopt.io.load import MAX_FILE_BYTES, load_graph, load_text, parse_text
from fuseopt.io.locate import (
    LineIndex,
    Positions,
    json_positions,
    line_col,
    locate_pointer,
    yaml_event_positions,
    yaml_positions,
)
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
def test_endless_device_file_is_refused() -> None:
    t0 = time.perf_counter()
    d = _load_error(Path("/dev/zero"))
    assert d.code == "io" and "a character device, not a regular file" in d.message
    assert time.perf_counter() - t0 < 10


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_every_reader_of_an_input_path_refuses_a_fifo(tmp_path: Path) -> None:
    """A FIFO blocks its reader until a writer comes: every input path is a regular file or refused."""
    from fuseopt.aot.planfile import load_plan
    from fuseopt.ci.checks import read_source

    fifo = tmp_path / "g.yaml"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    d = _load_error(fifo)
    assert d.code == "io" and d.file == str(fifo) and "a FIFO (named pipe), not a regular file" in d.message
    assert read_source(str(fifo)) == (None, d.message)
    with pytest.raises(InputError, match="not a regular file"):
        load_plan(str(fifo))
    assert time.perf_counter() - t0 < 5


def test_a_file_swapped_for_a_fifo_after_the_check_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The descriptor is opened non-blocking and checked again: no window between stat and open."""
    import fuseopt.io.files as files

    fifo = tmp_path / "g.yaml"
    os.mkfifo(fifo)
    real_stat = os.stat
    monkeypatch.setattr(files.os, "stat", lambda p: real_stat(__file__))  # looks regular
    t0 = time.perf_counter()
    assert "a FIFO (named pipe), not a regular file" in _load_error(fifo).message
    assert time.perf_counter() - t0 < 5


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
        ("a: " + ":".join(["1"] * 40) + "\n", "/a", "YAML 1.1 reads it as a number, YAML 1.2"),
        ("a: !!int " + "1" * 65 + "\n", "/a", "number is 65 characters long"),
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
    data = parse_text("a: [1, 0x10, 0o17, -2.5, .inf, ~, true, 'x', 1e3, '074', no_quotes]\n", "d.yaml")
    assert data["a"][:4] == [1, 16, 15, -2.5]
    assert data["a"][4] == float("inf") and data["a"][5] is None and data["a"][6] is True
    assert data["a"][7:] == ["x", 1000.0, "074", "no_quotes"]


# YAML 1.2 core schema: text -> value (and its type: 1 and 1.0 and True differ).
YAML12 = {
    "0": 0, "-0": 0, "+12": 12, "1234567890": 1234567890, "-9223372036854775808": -(2**63),
    "0o17": 15, "0o0": 0, "0x1F": 31, "0xff": 255,
    "1.5": 1.5, "-2.5": -2.5, ".5": 0.5, "1.": 1.0, "1e3": 1000.0, "1E-3": 0.001, "+1.5e+2": 150.0,
    "00.5": 0.5, ".inf": math.inf, "+.Inf": math.inf, "-.INF": -math.inf,
    "true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False,
    "~": None, "null": None, "Null": None, "NULL": None, "": None,
    # text in YAML 1.2 and in YAML 1.1 alike
    "y": "y", "n": "n", "Y": "Y", "N": "N", "0o": "0o", "0x": "0x", "0o8": "0o8",
    "2024-01-01": "2024-01-01", "=": "=", "nan": "nan", "inf": "inf", "tRUE": "tRUE", "1.2.3": "1.2.3",
    "x[16*i0 + i1]": "x[16*i0 + i1]",
}  # fmt: skip


@pytest.mark.parametrize("text", sorted(YAML12))
def test_yaml_1_2_core_schema(yaml_impl: str, text: str) -> None:
    want = YAML12[text]
    docs: list[tuple[str, Callable[[Any], Any]]] = [(f"a: {text}\n", lambda d: d["a"])]
    if text and "[" not in text:
        docs.append((f"a: [{text}]\n", lambda d: d["a"][0]))
    for doc, get in docs:
        got = get(parse_text(doc, "d.yaml"))
        assert got == want and type(got) is type(want), (doc, got)
    if text:  # as a key too (keys are resolved like values)
        assert list(parse_text(f"{text}: 1\n", "d.yaml")) == [want]


def test_nan_is_read(yaml_impl: str) -> None:
    for text in (".nan", ".NaN", ".NAN"):
        assert math.isnan(parse_text(f"a: {text}\n", "d.yaml")["a"])


# YAML 1.1 reads these as numbers or booleans, YAML 1.2 otherwise (or, for leading zeros, as
# another number): refused, with both readings named.
YAML11 = {
    "074": ("60", "74"), "-074": ("-60", "-74"), "00": ("0", "0"), "010": ("8", "10"),
    "09": ("the text '09'", "9"), "0089": ("the text '0089'", "89"),
    "1:00": ("60", "the text '1:00'"), "-1:30": ("-90", "the text '-1:30'"),
    "1:20:30.5": ("4830.5", "the text '1:20:30.5'"),
    "0b1010": ("10", "the text '0b1010'"), "-0b11": ("-3", "the text '-0b11'"),
    "1_000": ("1000", "the text '1_000'"), "1_000.5": ("1000.5", "the text '1_000.5'"),
    "0x_1F": ("31", "the text '0x_1F'"), "0_7": ("7", "the text '0_7'"), "-0x1F": ("-31", "the text '-0x1F'"),
    "yes": ("true", "the text 'yes'"), "Yes": ("true", "the text 'Yes'"), "YES": ("true", "the text 'YES'"),
    "no": ("false", "the text 'no'"), "No": ("false", "the text 'No'"), "NO": ("false", "the text 'NO'"),
    "on": ("true", "the text 'on'"), "On": ("true", "the text 'On'"), "ON": ("true", "the text 'ON'"),
    "off": ("false", "the text 'off'"), "Off": ("false", "the text 'Off'"), "OFF": ("false", "the text 'OFF'"),
}  # fmt: skip


@pytest.mark.parametrize("text", sorted(YAML11))
def test_yaml_1_1_readings_are_refused(yaml_impl: str, text: str) -> None:
    old, new = YAML11[text]
    for doc, pointer, at in (
        (f"format: fuseopt-graph/1\nmeta: {{a: {text}}}\n", "/meta/a", (2, 11)),
        (f"format: fuseopt-graph/1\nmeta:\n  list: [1, {text}]\n", "/meta/list/1", (3, 13)),
        (f"format: fuseopt-graph/1\nmeta:\n  {text}: 1\n", "/meta", (3, 3)),  # a key
    ):
        d = one_error(doc)
        assert d.code == "yaml-1.1" and d.pointer == pointer and (d.line, d.column) == at, d
        assert (
            f"{text!r} is ambiguous: YAML 1.1 reads it as {old}, YAML 1.2 (which fuseopt reads) as {new}"
            in d.message
        )
    for quoted in (f"'{text}'", f'"{text}"', f"!!str {text}"):  # text, as written
        assert parse_text(f"a: {quoted}\n", "d.yaml") == {"a": text}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!!int 1.5", "bad int: '1.5' is not an integer"),
        ("!!int 074", "bad int"),
        ("!!float yes", "bad float: 'yes' is not a number"),
        ("!!bool yes", "bad bool: 'yes' is not a boolean"),
        ("!!null 0", "bad null"),
    ],
)
def test_explicit_tags_take_only_the_core_forms(yaml_impl: str, text: str, message: str) -> None:
    d = one_error(f"a: {text}\n")
    assert message in d.message and d.pointer == "/a" and d.line == 1
    assert parse_text("a: [!!int 17, !!float 17, !!bool true, !!null ~, !!str 17]\n", "d.yaml") == {
        "a": [17, 17.0, True, None, "17"]
    }


@pytest.mark.parametrize("value", ["'yes'", "1", "0", "'true'", "'on'", "yes", "on"])
def test_a_boolean_field_takes_only_true_and_false(yaml_impl: str, value: str) -> None:
    """pydantic's lax bool would take 'yes', 'on' and 1: the format's booleans are true and false."""
    doc = TEMPLATE.replace("epilogue_fusion: true", f"epilogue_fusion: {value}")
    (d,) = errors(doc)
    assert d.pointer == "/nodes/1/epilogue_fusion" and d.line == 11, d
    for ok in ("true", "True", "false"):
        load_text(TEMPLATE.replace("epilogue_fusion: true", f"epilogue_fusion: {ok}"), "g.yaml")


TEMPLATE = """\
format: fuseopt-graph/1
name: t
buffers:
  a: {shape: [8, 8], dtype: float32, role: input}
  b: {shape: [8, 8], dtype: float32}
  c: {shape: [8, 8], dtype: float32, role: output}
nodes:
  - {name: mm, kind: template, op: mm, inputs: [a, a], output: b,
     choices: [{name: triton_mm, time_us: 1.0}]}
  - name: mm2
    epilogue_fusion: true
    kind: template
    op: mm
    inputs: [b, a]
    output: c
    choices: [{name: triton_mm, time_us: 1.0}]
"""


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


@pytest.mark.parametrize(
    "deep",
    [
        "[" * 1500 + "]" * 1500,
        "{a: " * 1200 + "1" + "}" * 1200,
        "[{a: [" * 500 + "]}]" * 500,
        "\n    " + "- " * 30 + "[" * 1500 + "]" * 1500,  # block sequences around flow ones
        "[" * 30 + "\n" + "[" * 1500,  # and across lines, unclosed
    ],
    ids=["flow", "flow-mappings", "mixed", "block-and-flow", "multiline"],
)
def test_deep_documents_give_one_diagnostic_whichever_parser(deep: str) -> None:
    """libyaml's own limit (1000 levels, in the scanner's look-ahead) must not show: fuseopt's
    message, pointer and line:column, with libyaml and without it."""
    text = GRAPH + "meta:\n  deep: " + deep + "\n"
    got = []
    for impl in (True, False):
        if impl and loader._CParser is None:
            continue
        loader.USE_LIBYAML = impl
        try:
            got.append(one_error(text))
        finally:
            loader.USE_LIBYAML = loader._CParser is not None
    assert got[0].message == "YAML: document nests deeper than 64 levels" and got[0].code == "limit"
    assert got[0].pointer.startswith("/meta/deep/") and got[0].pointer.count("/") == 64
    assert all(g == got[0] for g in got), got


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


# -- time proportional to the input: the error path too ---------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab\n\r", max_size=200), st.lists(st.integers(-5, 210), max_size=20))
def test_line_index_agrees_with_line_col(text: str, offsets: list[int]) -> None:
    index = LineIndex(text)
    assert [index.line_col(o) for o in offsets] == [line_col(text, o) for o in offsets]


def _pointers(data: Any) -> list[str]:
    out = ["".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path) for path in _paths(data)]
    return out + [p + "/absent" for p in out] + ["/nodes/99/x", "/zz"]


LOCATABLE = st.dictionaries(
    st.sampled_from(["a", "b/c", "d~e", "nodes"]),
    st.recursive(
        st.one_of(st.integers(), st.text(max_size=5), st.none()),
        lambda kids: st.one_of(
            st.lists(kids, max_size=3), st.dictionaries(st.text("xy/~", max_size=3), kids, max_size=3)
        ),
        max_leaves=12,
    ),
    max_size=4,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LOCATABLE)
def test_every_way_of_locating_agrees(data: dict[str, Any]) -> None:
    """Batch and per-pointer lookups, YAML from its event stream and from its node tree, JSON by a
    descent and by indexed containers: the same line:column for every pointer."""
    pointers = _pointers(data)
    for text in (json.dumps(data), json.dumps(data, indent=2)):
        lines = LineIndex(text)
        batch = {p: lines.line_col(o) for p, o in json_positions(text, pointers).items()}
        one = Positions(text, yaml_syntax=False)
        assert {p: one.at(p) for p in pointers} == batch
    text = yaml.safe_dump(data, sort_keys=False)
    for impl in (True, False):
        loader.USE_LIBYAML = impl and loader._CParser is not None
        try:
            root = loader.compose_yaml(text)
            assert root is not None
            tree = yaml_positions(root, pointers)
            assert yaml_event_positions(loader._yaml_events(text), pointers) == tree
            assert {p: Positions(text).at(p) for p in pointers} == tree
        finally:
            loader.USE_LIBYAML = loader._CParser is not None


@pytest.mark.slow  # a complexity guard: thousands of errors, timed twice
@pytest.mark.parametrize("where", ["nodes", "buffers"])
@pytest.mark.parametrize("file", ["many.json", "many.yaml"])
def test_locating_many_errors_is_linear(file: str, where: str) -> None:
    """Every node (or buffer) of a graph wrong: the errors' line:column cost about as much per error
    for 16x as many (line_col counted newlines from the start for each; yaml_positions scanned a
    mapping's keys for each)."""

    def seconds(n: int) -> float:
        text = _many_errors(n, file, where)
        t0 = time.process_time()  # this process's CPU time: other tests on the machine do not count
        (errs := errors(text, file))
        assert len(errs) == n and all(d.line is not None for d in errs)
        return time.process_time() - t0

    seconds(100)  # warm up
    small, large = min(seconds(250) for _ in range(3)), min(seconds(4000) for _ in range(2))
    assert large < 16 * small * 5, (small, large)  # linear is 16 x, quadratic 16 x 16


def _many_errors(n: int, file: str, where: str = "nodes") -> str:
    """n nodes with one error each (an unknown buffer), or n buffers (an unknown field)."""
    bufs: dict[str, Any] = {"x": {"shape": [8], "dtype": "float32", "role": "input"}}
    nodes = []
    value = "nope[i0] + x[i0]" if where == "nodes" else "x[i0]"
    for i in range(n):
        bufs[f"o{i}"] = {"shape": [8], "dtype": "float32", "role": "output"}
        if where == "buffers":
            bufs[f"o{i}"]["colour"] = "red"
        nodes.append({"name": f"n{i}", "loops": [["i0", 8]], "store": f"o{i}[i0]", "value": value})
    doc = {"format": "fuseopt-graph/1", "name": "many", "buffers": bufs, "nodes": nodes}
    if file.endswith(".json"):
        return json.dumps(doc, indent=1)
    lines = ["format: fuseopt-graph/1", "name: many", "buffers:"]  # flow style, written fast
    lines += [f"  {name}: {json.dumps(b)}" for name, b in bufs.items()]
    return "\n".join([*lines, "nodes:", *(f"  - {json.dumps(n)}" for n in nodes)]) + "\n"


@pytest.mark.parametrize(
    ("edit", "n"),
    [
        # pydantic's too_short errors were each compared with every other error
        (lambda i: {"name": f"n{i}", "kind": "extern", "op": "mm", "inputs": [], "output": f"o{i}"}, 10000),
    ],
)
def test_many_structure_errors_are_linear(edit: Callable[[int], dict[str, Any]], n: int) -> None:
    bufs = {f"o{i}": {"shape": [4, 4], "dtype": "float32", "role": "output"} for i in range(n)}
    doc = {"format": "fuseopt-graph/1", "name": "ts", "buffers": bufs, "nodes": [edit(i) for i in range(n)]}
    t0 = time.perf_counter()
    assert len(errors(json.dumps(doc), "g.json")) == n
    assert time.perf_counter() - t0 < 30  # was minutes


def test_a_bad_json_number_is_found_in_linear_time() -> None:
    """After a NaN, the search for the bad number restarted at every digit of every long number."""
    text = (
        json.dumps(DOC).replace('"meta"', '"m"')[:-1]
        + ', "meta": {"n": ['
        + ", ".join(["1" * 3999] * 400)
        + ", NaN]}}"
    )
    t0 = time.perf_counter()
    d = one_error(text, "g.json")
    assert "NaN is not valid JSON" in d.message and d.pointer == "/meta/n/400"
    assert time.perf_counter() - t0 < 2


def test_nested_modulo_chains_validate_in_linear_time() -> None:
    """`(((i + 8) % 8 + 8) % 8 ...)`: bounds of a `%` computed from two readings of its operand, each
    recursing: 2**k for k nested. Runs in a subprocess, so that a regression fails, not hangs."""
    idx = "i1"
    for _ in range(30):  # 64 levels deep in all: at the limit
        idx = f"({idx} + 8) % 8"
    text = GRAPH.replace("value: 2 * x[16*i0 + i1]", f"value: 2 * x[16*i0 + {idx}]")
    script = "import sys, fuseopt.io.load as L; L.load_text(sys.stdin.read(), 'g.yaml'); print('ok')"
    proc = subprocess.run(
        [sys.executable, "-c", script], input=text, capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]
