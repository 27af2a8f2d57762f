"""Input text never becomes code (issue #21): every string field of the format, for every node
kind, with every character that can end a line, a comment or a string, gives either a located
InputError or a module whose statements are exactly those of the same graph with a harmless value.

The string fields are enumerated from the pydantic models, so a field added later fails
`test_every_string_field_is_covered` until it has a case here.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import shutil
import subprocess
import types
import typing
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from fuseopt.cli.main import _register, cli
from fuseopt.codegen import emit_module
from fuseopt.codegen.layout import wrap
from fuseopt.codegen.source_text import (
    UnsafeSourceError,
    check_module,
    comment_text,
    graph_name,
    ident,
    literal,
    python_name,
)
from fuseopt.errors import InputError
from fuseopt.io.load import load_text
from fuseopt.ir import models
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import initial_stage, optimize
from fuseopt.report.escaping import json_text

_register()

PWNED = "x\n    open('PWNED','w').write(1)  #"
PAYLOADS = ["\n", "\r", "\u2028", "#", "'", '"', '"""', "\\", "\0", "\ud800", PWNED]
HARMLESS = "harmless"

# Every node kind: an extern call, a template with choices whose epilogue fuses, a pointwise node
# (that epilogue) and a reduction; a description and meta with nested dicts, lists, keys and values.
BASE: dict[str, Any] = {
    "format": "fuseopt-graph/1",
    "name": "hostile",
    "description": "every node kind",
    "buffers": {
        "a": {"shape": [4, 4], "dtype": "float32", "role": "input"},
        "b": {"shape": [4, 4], "dtype": "float32", "role": "input"},
        "c0": {"shape": [4, 4], "dtype": "float32"},
        "t0": {"shape": [4, 4], "dtype": "float32"},
        "e0": {"shape": [4, 4], "dtype": "float32", "role": "output"},
        "r0": {"shape": [4], "dtype": "float32", "role": "output"},
        "g0": {"shape": [4, 4], "dtype": "float32", "role": "output"},
        "g1": {"shape": [4, 4], "dtype": "float32", "role": "output"},
    },
    "nodes": [
        {"name": "ext0", "kind": "extern", "op": "mm", "inputs": ["a", "b"], "output": "c0"},
        {
            "name": "tpl0",
            "kind": "template",
            "op": "mm",
            "inputs": ["c0", "b"],
            "output": "t0",
            "choices": [{"name": "triton_mm_0", "time_us": 1.0}, {"name": "extern_mm", "time_us": 2.0}],
            "epilogue_fusion": True,
        },
        {
            "name": "pw0",
            "kind": "pointwise",
            "loops": [["i0", 4], ["i1", 4]],
            "store": "e0[4*i0 + i1]",
            "value": "relu(t0[4*i0 + i1])",
        },
        {
            "name": "red0",
            "kind": "reduction",
            "loops": [["i0", 4]],
            "reduce": [["r1", 4]],
            "store": "r0[i0]",
            "value": "sum(c0[4*i0 + r1])",
        },
        {  # extension 1.1: a positional string and a Tensor[] of views
            "name": "call0",
            "kind": "extern",
            "op": "aten.einsum.default",
            "args": ["ij,jk->ik", [{"buffer": "a"}, {"buffer": "b", "shape": [4, 4], "stride": [1, 4]}]],
            "outputs": ["g0"],
        },
        {  # a keyword string
            "name": "call1",
            "kind": "extern",
            "op": "aten.gelu.default",
            "args": [{"buffer": "a"}],
            "kwargs": {"approximate": "tanh"},
            "outputs": ["g1"],
        },
    ],
    "meta": {
        "source": {"file": "prog.py", "function": "f"},
        "inductor": {"kernels": [], "kernel_count": 3},
        "notes": ["text", {"nested": "text"}],
    },
}
EXT, TPL, PW, RED, CALL0, CALL1 = 0, 1, 2, 3, 4, 5


# -- the string fields the models define ---------------------------------------------------------
def _walk(tp: Any, where: str, out: list[str], seen: set[type]) -> None:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        _walk(typing.get_args(tp)[0], where, out, seen)
    elif origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            _walk(arg, where, out, seen)
    elif origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            _walk(args[0], f"{where}[]", out, seen)
        else:
            for i, arg in enumerate(args):
                _walk(arg, f"{where}[{i}]", out, seen)
    elif origin is dict:
        key, value = typing.get_args(tp)
        _walk(key, f"{where}{{key}}", out, seen)
        _walk(value, f"{where}{{value}}", out, seen)
    elif origin is typing.Literal:
        if any(isinstance(a, str) for a in typing.get_args(tp)):
            out.append(where)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in seen:
            return
        seen.add(tp)
        hints = typing.get_type_hints(tp, include_extras=True)
        for name in tp.model_fields:
            _walk(hints[name], f"{tp.__name__}.{name}", out, seen)
    elif tp is str or tp is Any or (isinstance(tp, type) and issubclass(tp, (str, Enum))):
        out.append(where)  # Any: meta values, where strings sit at any depth


def model_string_fields() -> list[str]:
    out: list[str] = []
    _walk(models.Graph, "Graph", out, set())
    return sorted(set(out))


# -- where each field sits in BASE ---------------------------------------------------------------
def _rename_buffer(doc: dict[str, Any], v: str) -> str:
    doc["buffers"] = {(v if k == "b" else k): spec for k, spec in doc["buffers"].items()}
    return "/buffers/"


def _setter(*path: str | int) -> Callable[[dict[str, Any], str], str]:
    def put(doc: dict[str, Any], v: str) -> str:
        obj: Any = doc
        for p in path[:-1]:
            obj = obj[p]
        obj[path[-1]] = v
        return "/" + "/".join(str(p) for p in path)

    return put


def _in_node(node: int, *path: str | int) -> Callable[[dict[str, Any], str], str]:
    """Set a field of a library call; its errors may name the call's arguments as a whole (the op
    refuses a string it does not know, whichever argument it is)."""
    put = _setter("nodes", node, *path)

    def at_node(doc: dict[str, Any], v: str) -> str:
        put(doc, v)
        return f"/nodes/{node}"

    return at_node


def _rename_kwarg(doc: dict[str, Any], v: str) -> str:
    doc["nodes"][CALL1]["kwargs"] = {v: "tanh"}
    return f"/nodes/{CALL1}/kwargs"


def _meta_key(*path: str | int) -> Callable[[dict[str, Any], str], str]:
    def put(doc: dict[str, Any], v: str) -> str:
        obj: Any = doc["meta"]
        for p in path:
            obj = obj[p]
        obj[v] = "value"
        return "/meta"

    return put


# field -> (the places it is set in BASE, what validation does with a payload). "grammar": always
# rejected (a located InputError at the field); a function: rejects iff it says so, else generate.
Rule = Callable[[str], bool] | str
GRAMMAR = "grammar"


def _surrogate(v: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in v)


def _not_one_line(v: str) -> bool:
    return _surrogate(v) or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" for c in v)


def _never(v: str) -> bool:
    return False


CASES: dict[str, tuple[list[Callable[[dict[str, Any], str], str]], Rule]] = {
    "Graph.format": ([_setter("format")], GRAMMAR),
    "Graph.name": ([_setter("name")], GRAMMAR),
    "Graph.description": ([_setter("description")], _surrogate),
    "Graph.buffers{key}": ([_rename_buffer], GRAMMAR),
    "Buffer.dtype": ([_setter("buffers", "a", "dtype")], GRAMMAR),
    "Buffer.role": ([_setter("buffers", "a", "role")], GRAMMAR),
    "Graph.meta{key}": ([_meta_key(), _meta_key("notes", 1)], _never),
    "Graph.meta{value}": (
        [
            _setter("meta", "source", "file"),
            _setter("meta", "inductor", "kernel_count"),
            _setter("meta", "notes", 1, "nested"),
        ],
        _never,
    ),
    "PointwiseNode.name": ([_setter("nodes", PW, "name")], GRAMMAR),
    "PointwiseNode.kind": ([_setter("nodes", PW, "kind")], GRAMMAR),
    "PointwiseNode.loops[][0]": ([_setter("nodes", PW, "loops", 0, 0)], GRAMMAR),
    "PointwiseNode.store": ([_setter("nodes", PW, "store")], GRAMMAR),
    "PointwiseNode.value": ([_setter("nodes", PW, "value")], GRAMMAR),
    "ReductionNode.name": ([_setter("nodes", RED, "name")], GRAMMAR),
    "ReductionNode.kind": ([_setter("nodes", RED, "kind")], GRAMMAR),
    "ReductionNode.loops[][0]": ([_setter("nodes", RED, "loops", 0, 0)], GRAMMAR),
    "ReductionNode.reduce[][0]": ([_setter("nodes", RED, "reduce", 0, 0)], GRAMMAR),
    "ReductionNode.store": ([_setter("nodes", RED, "store")], GRAMMAR),
    "ReductionNode.value": ([_setter("nodes", RED, "value")], GRAMMAR),
    "ExternNode.name": ([_setter("nodes", EXT, "name")], GRAMMAR),
    "ExternNode.kind": ([_setter("nodes", EXT, "kind")], GRAMMAR),
    "ExternNode.op": ([_setter("nodes", EXT, "op")], GRAMMAR),
    "ExternNode.inputs[]": ([_setter("nodes", EXT, "inputs", 1)], GRAMMAR),
    "ExternNode.output": ([_setter("nodes", EXT, "output")], GRAMMAR),
    "ExternNode.args[]": ([_in_node(CALL0, "args", 0)], GRAMMAR),  # einsum refuses the equation
    "ExternNode.kwargs{key}": ([_rename_kwarg], GRAMMAR),
    "ExternNode.kwargs{value}": ([_in_node(CALL1, "kwargs", "approximate")], GRAMMAR),
    "ExternNode.outputs[]": ([_setter("nodes", CALL0, "outputs", 0)], GRAMMAR),
    # pydantic checks a view inside its argument: the error names the argument (a list of views).
    "TensorView.buffer": ([_in_node(CALL0, "args", 1, 1, "buffer")], GRAMMAR),
    "TemplateNode.name": ([_setter("nodes", TPL, "name")], GRAMMAR),
    "TemplateNode.kind": ([_setter("nodes", TPL, "kind")], GRAMMAR),
    "TemplateNode.op": ([_setter("nodes", TPL, "op")], GRAMMAR),
    "TemplateNode.inputs[]": ([_setter("nodes", TPL, "inputs", 0)], GRAMMAR),
    "TemplateNode.output": ([_setter("nodes", TPL, "output")], GRAMMAR),
    "Choice.name": (
        [_setter("nodes", TPL, "choices", 0, "name"), _setter("nodes", TPL, "choices", 1, "name")],
        _not_one_line,
    ),
}


def test_every_string_field_is_covered() -> None:
    """A string field added to the models must get a case in CASES (and so in the test below)."""
    assert sorted(CASES) == model_string_fields()


def _modules(doc: dict[str, Any]) -> list[str]:
    g = load_text(json.dumps(doc), "g.json")
    stages = (optimize(g, Options()), initial_stage(g))
    return [emit_module(s.graph, s.plan) for s in stages]


class _Replace(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str) and self.old in node.value:
            return ast.copy_location(ast.Constant(node.value.replace(self.old, self.new)), node)
        return node


def _dump(source: str, old: str, new: str) -> str:
    return ast.dump(_Replace(old, new).visit(ast.parse(source)))


@pytest.mark.parametrize("field", sorted(CASES))
def test_hostile_text_in_every_string_field(field: str) -> None:
    setters, rule = CASES[field]
    for put in setters:
        harmless_doc = copy.deepcopy(BASE)
        put(harmless_doc, HARMLESS)
        want = None
        for payload in PAYLOADS:
            doc = copy.deepcopy(BASE)
            pointer = put(doc, payload)
            rejected = rule == GRAMMAR or (callable(rule) and rule(payload))
            if rejected:
                with pytest.raises(InputError) as err:
                    load_text(json.dumps(doc), "g.json")
                assert any(d.pointer.startswith(pointer) for d in err.value.diagnostics), (
                    field,
                    payload,
                    [d.pointer for d in err.value.diagnostics],
                )
                continue
            if want is None:
                want = _modules(harmless_doc)
            got = _modules(doc)
            for text in got:
                assert text.isascii() and "\r" not in text and "\0" not in text, (field, payload)
            # the same statements; string constants equal once the payload reads as the harmless
            # value (on both sides: text such as "'" occurs in the module's own strings too)
            assert [_dump(m, payload, HARMLESS) for m in got] == [
                _dump(m, payload, HARMLESS) for m in want
            ], (
                field,
                payload,
            )


# -- end to end: the CLI writes kernels.py, the runtime runs it -----------------------------------
def _hostile_doc() -> dict[str, Any]:
    """Every free-text field holding a payload that validates: the description and meta values
    with line breaks, choice names with quotes, backslashes and comment characters."""
    doc = copy.deepcopy(BASE)
    doc["description"] = PWNED + '\r"""\u2028\0'
    doc["meta"]["notes"] = [PWNED, {PWNED: PWNED}]
    doc["meta"]["inductor"]["kernel_count"] = PWNED
    doc["nodes"][TPL]["choices"][0]["name"] = "x\"\"\"; open('PWNED', 'w').write(1)  # \\"
    doc["nodes"][TPL]["choices"][1]["name"] = "'; open('PWNED', 'w').write(1); '\u00e9"
    return doc


def test_cli_module_with_hostile_text_runs_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fuseopt.runtime import compare_with_reference

    monkeypatch.chdir(tmp_path)
    Path("g.json").write_text(json.dumps(_hostile_doc()), encoding="utf-8")
    res = CliRunner().invoke(cli, ["optimize", "g.json", "-o", "out"])
    assert res.exit_code == 0, res.output
    raw = Path("out/kernels.py").read_bytes()
    assert raw.isascii() and b"\r" not in raw and b"\0" not in raw
    text = raw.decode("ascii")
    choice = _hostile_doc()["nodes"][TPL]["choices"][0]["name"]
    assert f"# template choices: {literal(choice)} 1.0us" in text  # a string literal, escaped
    ruff = shutil.which("ruff")
    if ruff is not None:  # still what ruff format prints, and lint-clean (as tests/test_codegen.py asks)
        fmt = [ruff, "format", "--isolated", "--line-length", "110", "--diff", "-"]
        assert subprocess.run(fmt, input=text, capture_output=True, text=True).stdout == ""
        lint = [ruff, "check", "--isolated", "--line-length", "110", "--select", "E,F,W,B,UP,SIM", "-"]
        assert subprocess.run(lint, input=text, capture_output=True, text=True).returncode == 0
    g = load_text(Path("g.json").read_text(encoding="utf-8"), "g.json")
    compare_with_reference(g, optimize(g, Options()).plan, source=text)
    assert not Path("PWNED").exists() and not (tmp_path / "out" / "PWNED").exists()


def test_issue_payload_is_a_located_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's own example (a choice name that ends its comment line), and its \\r form."""
    monkeypatch.chdir(tmp_path)
    for name in (
        "x\n    open('PWNED', 'w').write('pwned')  #",
        "x\r    open('PWNED', 'w').write('pwned')  #",
    ):
        doc = copy.deepcopy(BASE)
        doc["nodes"][TPL]["choices"][0]["name"] = name
        Path("g.json").write_text(json.dumps(doc), encoding="utf-8")
        for args in (["optimize", "g.json", "-o", "out"], ["run", "g.json", "--backend", "triton"]):
            res = CliRunner().invoke(cli, args)
            assert res.exit_code == 2, res.output
            assert "Traceback" not in res.output and "/nodes/1/choices/0/name" in res.output
            assert "a choice name is one line of text" in res.output
        assert not Path("out").exists() and not Path("PWNED").exists()


# -- the source-text functions themselves --------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text())
def test_literal_and_comment_text_never_leave_their_place(s: str) -> None:
    """Any text (surrogates, line ends, quotes): one statement, the literal's value is the text."""
    src = f"x = {literal(s)}  # {comment_text(s)}\ny = 1\n"
    assert src.isascii()
    tree = ast.parse(src)
    assert len(tree.body) == 2
    value = tree.body[0].value  # type: ignore[attr-defined]
    assert isinstance(value, ast.Constant) and value.value == s
    check_module(src)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=8), st.integers(20, 60))
def test_wrapped_calls_keep_string_arguments_whole(args: list[str], limit: int) -> None:
    """layout.wrap splits a long call between arguments, never inside a string literal (quotes,
    backslashes, commas and brackets inside it)."""
    line = "    f(" + ", ".join(literal(a) for a in args) + ")"
    wrapped = wrap(line, limit)
    call = ast.parse("\n".join(wrapped).strip()).body[0].value  # type: ignore[attr-defined]
    assert [a.value for a in call.args] == args


@pytest.mark.parametrize("bad", ["a\nb", "a b", "1a", "a" * 65, "a-b", "", "\u00e9", "a\ud800"])
def test_ident_rejects_what_the_name_grammar_rejects(bad: str) -> None:
    with pytest.raises(UnsafeSourceError):
        ident(bad)
    with pytest.raises(UnsafeSourceError):
        graph_name(bad if bad != "a-b" else "a'b")


def test_python_name_and_graph_name() -> None:
    assert python_name("a" * 80 + "_ptr") == "a" * 80 + "_ptr"
    assert graph_name("my.graph-1") == "my.graph-1"
    for bad in ("class", "a.b", "a\n", "x;y"):
        with pytest.raises(UnsafeSourceError):
            python_name(bad)


@pytest.mark.parametrize(
    "char", ["\r", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\0", "\t"]
)
def test_check_module_rejects_every_other_line_end(char: str) -> None:
    """Defense in depth: a character Python ends a line at (inside a comment too) never reaches
    a written module."""
    check_module("x = 1  # fine\n")
    with pytest.raises(UnsafeSourceError, match="line 2"):
        check_module(f"x = 1\n# a comment{char}y = 2\n")


def _every_string(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _every_string(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _every_string(v)


def test_plan_json_keeps_input_text_writable(tmp_path: Path) -> None:
    """Lone surrogates in meta (JSON `\\ud800` escapes) reach neither a crash nor a broken file:
    plan.json and the printed plan show them escaped."""
    doc = copy.deepcopy(BASE)
    doc["meta"]["inductor"] = {"kernels": [], "kernel_count": "\ud800[/bold]", "num_bytes_accessed": "\udcff"}
    doc["meta"]["\ud800"] = ["\ud800"]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    res = CliRunner().invoke(cli, ["optimize", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "Inductor: \\ud800[/bold] kernels, \\udcff bytes" in res.output
    plan = json.loads((tmp_path / "out" / "plan.json").read_text(encoding="utf-8"))
    assert all(not _surrogate(s) for s in _every_string(plan))
    res = CliRunner().invoke(cli, ["optimize", str(path), "--format", "json"])
    assert res.exit_code == 0 and json.loads(res.output)["graph"] == "hostile"


_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_PLAIN, st.sampled_from([2, 0, 4, None]))
def test_json_text_is_json_dumps_with_surrogates_escaped(obj: Any, indent: int | None) -> None:
    """json_text indents plain data itself (json.dumps indents in pure Python, slowly): the text
    must be json.dumps's to the byte, non-finite floats and surrogates included."""
    want = json.dumps(obj, indent=indent, ensure_ascii=False)
    want = "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in want)
    assert json_text(obj, indent=indent) == want


def test_json_text_leaves_other_values_to_json_dumps() -> None:
    class Level(int):
        pass

    assert json_text({"a": [Level(3), {1: True}]}) == json.dumps({"a": [3, {"1": True}]}, indent=2)
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_text({"a": {1, 2}})
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        json_text(loop)


def test_graph_file_with_an_undecodable_name(tmp_path: Path) -> None:
    """A file name that is not UTF-8 (a surrogate-escaped byte in Python) prints escaped."""
    name = os.fsdecode(b"g\xff.json")
    path = tmp_path / name
    try:
        path.write_text(json.dumps(BASE), encoding="utf-8")
    except (OSError, UnicodeEncodeError):
        pytest.skip("the file system does not take undecodable names")
    res = CliRunner().invoke(cli, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    assert "g\\udcff.json" in res.output


# -- rich markup in input is text ----------------------------------------------------------------
MARKUP = "[/bold][red]x[/red][link=file:///etc/passwd]:warning:"


def _markup_files(tmp_path: Path) -> tuple[str, str]:
    """A graph with markup in meta and the description, in a file whose path holds markup."""
    doc = copy.deepcopy(BASE)
    doc["description"] = f"{MARKUP} :warning: \x1b[31m"
    doc["meta"]["inductor"] = {"kernels": [MARKUP], "kernel_count": MARKUP, "num_bytes_accessed": MARKUP}
    doc["meta"][MARKUP] = [MARKUP, {MARKUP: MARKUP}]
    path = tmp_path / f"in{MARKUP}.json"  # the slashes make folders: the path text holds the markup
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(tmp_path) + f"/in{MARKUP}.json", str(tmp_path) + f"/out{MARKUP}"


def _ok(res: Any, code: int = 0) -> str:
    assert res.exit_code == code, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output and "MarkupError" not in res.output
    return str(res.output)


def test_markup_in_input_prints_as_text(tmp_path: Path) -> None:
    graph, out = _markup_files(tmp_path)
    run = CliRunner().invoke
    assert f"ok {graph}: graph hostile" in _ok(run(cli, ["validate", graph]))
    text = _ok(run(cli, ["optimize", graph, "-o", out, "--html", out + ".html"]))
    assert f"Inductor: {MARKUP} kernels, {MARKUP} bytes" in text and f"to {out}\n" in text
    assert (Path(out) / "kernels.py").exists() and Path(out + ".html").exists()
    _ok(run(cli, ["explain", graph, "pw0", "red0"]))
    _ok(run(cli, ["diff-jit-aot", graph]))
    _ok(run(cli, ["check-determinism", graph, "--permutations", "2", "--processes", "0"]))
    _ok(run(cli, ["run", graph]))
    reports = [out + ext for ext in (".ci.html", ".xml", ".sarif")]
    args = ["ci", graph, "--jobs", "1", "--permutations", "1", "--github", "--html", reports[0]]
    _ok(run(cli, [*args, "--junit", reports[1], "--sarif", reports[2]]))
    assert all(Path(r).exists() for r in reports)


def test_markup_in_errors_prints_as_text(tmp_path: Path) -> None:
    """Diagnostics quote the file and the offending input: as text, exit 2, no output files."""
    graph, out = _markup_files(tmp_path)
    doc = json.loads(Path(graph).read_text(encoding="utf-8"))
    doc["nodes"][PW]["value"] = "relu(t0[4*i0 + i1]) + [red]"
    Path(graph).write_text(json.dumps(doc), encoding="utf-8")
    for args in (
        ["validate", graph],
        ["optimize", graph, "-o", out],
        ["run", graph],
        ["explain", graph, "a", "b"],
    ):
        text = _ok(CliRunner().invoke(cli, args), 2)
        assert f"error: {graph}:" in text and "[red]" in text, args
    assert not Path(out).exists()
    res = CliRunner().invoke(cli, ["explain", str(Path(graph).with_name("missing.json")), MARKUP, "b"])
    assert "missing.json" in _ok(res, 2)


def test_a_newline_in_a_key_keeps_a_diagnostic_on_its_line(tmp_path: Path) -> None:
    """A key of the input (a buffer's name) that holds a newline is in the diagnostic's pointer:
    it prints escaped, so the input cannot add a line that reads as a diagnostic of its own."""
    graph = tmp_path / "g.yaml"
    graph.write_text(
        "format: fuseopt-graph/1\nname: t\nbuffers:\n"
        '  "a\\nerror: forged.yaml:1:1: fake": {shape: [4], dtype: float32, role: input}\n'
        "  o: {shape: [4], dtype: float32, role: output}\n"
        "nodes:\n  - {name: n0, loops: [[i, 4]], store: 'o[i]', value: 'o[i]'}\n",
        encoding="utf-8",
    )
    text = _ok(CliRunner().invoke(cli, ["validate", str(graph)]), 2)
    assert not any(line.startswith("error: forged.yaml") for line in text.splitlines()), text
    assert "/buffers/a\\nerror: forged.yaml" in text


def test_optimize_writes_all_of_its_files_or_none(tmp_path: Path) -> None:
    """plan.json, kernels.py, launches.json and the HTML page are rendered first and written together: when one
    cannot be written, none is (and no folder is left behind)."""
    graph, _ = _markup_files(tmp_path)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = tmp_path / "new" / "out"
    res = CliRunner().invoke(cli, ["optimize", graph, "-o", str(out), "--html", str(blocker / "r.html")])
    assert "cannot write" in _ok(res, 2)
    assert not (tmp_path / "new").exists()
    res = CliRunner().invoke(cli, ["optimize", graph, "-o", str(out), "--html", str(tmp_path / "r.html")])
    _ok(res)
    assert (
        sorted(p.name for p in out.iterdir()) == ["kernels.py", "launches.json", "plan.json"]
        and (tmp_path / "r.html").exists()
    )


@settings(max_examples=200, deadline=None)
@given(st.text().filter(lambda s: "\t" not in s))
def test_shown_text_prints_literally(s: str) -> None:
    """Whatever the text (markup, emoji codes, escapes, surrogates), rich prints it as it is,
    with only what a terminal cannot show escaped."""
    import io

    from rich.console import Console

    from fuseopt.report.escaping import printable, shown

    buf = io.StringIO()
    console = Console(
        file=buf, width=100_000, highlight=False, soft_wrap=True, emoji=False, color_system=None
    )
    console.print(shown(s), end="")
    assert buf.getvalue() == printable(s)
    printable(s).encode("utf-8")  # writable: no lone surrogate is left


@settings(max_examples=100, deadline=None)
@given(st.text().filter(lambda s: "\t" not in s), st.text(alphabet="ab \\[]/", max_size=6))
def test_shown_text_keeps_the_markup_around_it(s: str, after: str) -> None:
    """Interpolated between tags (`[bold]{shown(s)}[/]`), the text prints literally and the tags
    still apply: a trailing backslash does not escape the closing tag."""
    import io

    from rich.console import Console

    from fuseopt.report.escaping import printable, shown

    buf = io.StringIO()
    console = Console(
        file=buf, width=100_000, highlight=False, soft_wrap=True, emoji=False, color_system=None
    )
    console.print(f"[bold]{shown(s)}[/]{shown(after)}[not bold]{shown(after)}[/]", end="")
    assert buf.getvalue() == printable(s) + after + after
