"""Reading graph files safely: size and depth caps, YAML without aliases, duplicate keys rejected.

`load_graph(path)` is the one entry point: text -> plain data -> pydantic models -> validated IR.
Every failure is an `InputError` naming the file and a JSON pointer (and, where known, line:col).

Input is untrusted. Only a regular file is read (a FIFO would block, a device never end), with a
bounded read (16 MiB), and YAML is composed by our own composer (`_StrictComposer`) over libyaml's
event stream (or PyYAML's pure-Python parser where libyaml is missing). The composer rejects
anchors, aliases, merge keys and non-JSON tags at the first event that carries one (so a "billion
laughs" document fails in microseconds), caps the nesting depth *while* composing (libyaml's own
composer recurses in C and crashes the process on very deep documents), and tracks the JSON
pointer of the node it is in, so that even syntax errors are located. Scalars are read by YAML
1.2's core schema; YAML 1.1's differing readings (`074`, `1:00`, `yes`) are refused
(`fuseopt.io.yaml_schema`). The result is plain JSON data: str, int, float, bool, None, list, dict.

Limits (each rejected with a located error; beyond docs/format.md's own expression limits):
    file or text                 16 MiB (MAX_FILE_BYTES), read with a bounded read
    document nesting             64 levels (MAX_DEPTH)
    YAML number scalars          64 characters (MAX_NUMBER_CHARS); JSON ints: Python's 4300 digits
    loops / reduce / shape dims  32 each (models.MAX_DIMS)
    buffers, nodes               1,000,000 each (models.MAX_ITEMS)
    template choices             1024 (models.MAX_CHOICES)
    expressions                  4096 characters, a tree 64 levels deep, 1024 nodes, |int| < 2**63
                                 (ir.parser)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.composer import Composer
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fuseopt.errors import Diagnostic, InputError
from fuseopt.io import yaml_schema
from fuseopt.io.files import read_regular_file
from fuseopt.io.locate import (
    LineIndex,
    escape_pointer_part,
    find_json_duplicate_key,
    json_deep_offset,
    json_pointer_at,
    json_positions,
    line_col,
    yaml_event_positions,
)
from fuseopt.io.yaml_schema import CoreResolver
from fuseopt.ir import models
from fuseopt.ir.build import build_graph
from fuseopt.ir.graph import Graph
from fuseopt.util import gc_paused

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
# A YAML integer scalar longer than this is rejected before conversion: YAML 1.1's base-60 form
# (`1:2:3:...`) makes PyYAML's int constructor quadratic in the length.
MAX_NUMBER_CHARS = 64

# libyaml is used when present; tests flip this to exercise the pure-Python parser as well.
USE_LIBYAML = bool(getattr(yaml, "__with_libyaml__", False))

_TAG = "tag:yaml.org,2002:"
_ALLOWED_TAGS = frozenset(_TAG + t for t in ("str", "int", "float", "bool", "null", "seq", "map"))


class YAMLInputError(yaml.MarkedYAMLError):
    """A located rejection by the strict composer or constructor (not a YAML syntax error)."""

    def __init__(self, message: str, mark: Any, pointer: str, code: str):
        super().__init__(None, None, message, mark)
        self.pointer = pointer
        self.code = code


def _pointer_of(parts: list[str]) -> str:
    return "".join("/" + escape_pointer_part(p) for p in parts)


_ComposerBase: Any = Composer  # a mixin: the event methods come from the parser class


class _StrictComposer(_ComposerBase):
    """PyYAML's composer, minus aliases/anchors/merge keys/custom tags, with a depth cap and the
    current JSON pointer kept in `self.path` (left as it was when an error propagates)."""

    path: list[str]

    def compose_document(self) -> Any:
        self.path = []
        return super().compose_document()

    def _reject(self, message: str, mark: Any, code: str, extra: str | None = None) -> YAMLInputError:
        parts = self.path if extra is None else [*self.path, extra]
        return YAMLInputError(message, mark, _pointer_of(parts), code)

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        # The key being composed has no pointer of its own: errors in it point at its mapping.
        part = None if parent is None or index is None else _part_name(index)
        if part is not None:
            self.path.append(part)
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            raise self._reject(
                f"YAML aliases (*{event.anchor}) are not allowed in graph files; write the value out",
                event.start_mark,
                "yaml-alias",
            )
        if event.anchor is not None:
            raise self._reject(
                f"YAML anchors (&{event.anchor}) are not allowed in graph files",
                event.start_mark,
                "yaml-alias",
            )
        tag = event.tag
        if tag is not None and tag != "!" and tag not in _ALLOWED_TAGS:
            raise self._reject(
                f"YAML tag {tag!r} is not allowed in graph files (plain JSON data only)",
                event.start_mark,
                "yaml-tag",
            )
        if isinstance(event, ScalarEvent):
            node: Node = self.compose_scalar_node(None)
        else:
            if len(self.path) >= MAX_DEPTH:
                raise self._reject(
                    f"document nests deeper than {MAX_DEPTH} levels", event.start_mark, "limit"
                )
            if isinstance(event, SequenceStartEvent):
                node = self.compose_sequence_node(None)
            elif isinstance(event, MappingStartEvent):
                node = self.compose_mapping_node(None)
            else:  # pragma: no cover - the parser only yields these events here
                raise self._reject("unexpected YAML event", event.start_mark, "syntax")
        if part is not None:
            self.path.pop()
        return node

    def compose_mapping_node(self, anchor: Any) -> Node:
        start_event = self.get_event()
        tag = start_event.tag
        if tag is None or tag == "!":
            tag = self.resolve(MappingNode, None, start_event.implicit)
        node = MappingNode(tag, [], start_event.start_mark, None, flow_style=start_event.flow_style)
        seen: set[tuple[str, str]] = set()
        while not self.check_event(MappingEndEvent):
            key = self.compose_node(node, None)
            if not isinstance(key, ScalarNode):
                raise self._reject("mapping keys must be plain scalars", key.start_mark, "yaml-key")
            if key.tag == _TAG + "merge":
                raise self._reject("YAML merge keys (<<) are not allowed", key.start_mark, "yaml-alias")
            if (key.tag, key.value) in seen:
                raise self._reject(
                    f"duplicate key {key.value!r}", key.start_mark, "duplicate-key", extra=key.value
                )
            seen.add((key.tag, key.value))
            value = self.compose_node(node, key)
            node.value.append((key, value))
        node.end_mark = self.get_event().end_mark
        return node

    def compose_sequence_node(self, anchor: Any) -> Node:
        start_event = self.get_event()
        tag = start_event.tag
        if tag is None or tag == "!":
            tag = self.resolve(SequenceNode, None, start_event.implicit)
        node = SequenceNode(tag, [], start_event.start_mark, None, flow_style=start_event.flow_style)
        index = 0
        while not self.check_event(SequenceEndEvent):
            node.value.append(self.compose_node(node, index))
            index += 1
        node.end_mark = self.get_event().end_mark
        return node


def _part_name(index: Any) -> str:
    if isinstance(index, int):
        return str(index)
    return str(index.value) if isinstance(index, ScalarNode) else "?"


class _PyLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _StrictComposer, CoreResolver):
    def __init__(self, stream: str):
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _StrictComposer.__init__(self)
        CoreResolver.__init__(self)


_CParser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)  # libyaml's event parser
if _CParser is not None:
    # Composer first in the MRO: composition in Python (ours), events from libyaml.
    class _CLoader(_StrictComposer, _CParser, CoreResolver):  # type: ignore[misc, valid-type]
        def __init__(self, stream: str):
            _CParser.__init__(self, stream)
            _StrictComposer.__init__(self)
            CoreResolver.__init__(self)


def compose_yaml(text: str) -> Node | None:
    """Text -> node tree, strictly (see the module docstring). Raises yaml.YAMLError; on failure
    the loader's `path` is the pointer where it stopped (see `_yaml_error`)."""
    return _compose(text)[0]


# libyaml's own nesting limit (1000 levels in the libyaml of PyYAML 6.0.4's wheels; older ones have
# none). Its scanner reads up to 1024 characters ahead to resolve a possible simple key, so in
# `[[[[...` it fires before our composer has seen the level where MAX_DEPTH does.
_LIBYAML_DEPTH = "exceeded maximum nesting depth"


def _compose(text: str) -> tuple[Node | None, Any]:
    if not (USE_LIBYAML and _CParser is not None):
        return _compose_with(_PyLoader(text))
    try:
        return _compose_with(_CLoader(text))
    except yaml.MarkedYAMLError as exc:
        if _LIBYAML_DEPTH not in str(exc.problem):
            raise
    # The pure-Python parser has no limit of its own and looks no further ahead than libyaml, so
    # our composer stops it at MAX_DEPTH, with our message and pointer, whatever libyaml says.
    return _compose_with(_PyLoader(text))


def _yaml_events(text: str) -> Iterator[Any]:
    """The event stream of text that composed before (so no depth or alias surprises)."""
    loader: Any = _CLoader(text) if USE_LIBYAML and _CParser is not None else _PyLoader(text)
    try:
        while loader.check_event():
            yield loader.get_event()
    finally:
        loader.dispose()


def _compose_with(loader: Any) -> tuple[Node | None, Any]:
    loader.path = []
    try:
        return loader.get_single_node(), loader
    except yaml.YAMLError as exc:
        exc.fuseopt_path = list(loader.path)  # type: ignore[attr-defined]
        raise
    finally:
        loader.dispose()


# -- construction: node tree -> plain JSON data ----------------------------------------------
_CORE_TAGS = frozenset(_TAG + t for t in ("str", "int", "float", "bool", "null"))


def _construct(node: Node, path: list[str]) -> Any:
    if isinstance(node, ScalarNode):
        return _scalar(node, path)
    if isinstance(node, SequenceNode):
        out: list[Any] = []
        for i, child in enumerate(node.value):
            path.append(str(i))
            out.append(_construct(child, path))
            path.pop()
        return out
    if isinstance(node, MappingNode):
        d: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node, path)
            if key in d:  # e.g. `1` and `0x1`: different text, one key
                raise YAMLInputError(
                    f"duplicate key {key_node.value!r}",
                    key_node.start_mark,
                    _pointer_of([*path, str(key_node.value)]),
                    "duplicate-key",
                )
            path.append(str(key_node.value))
            d[key] = _construct(value_node, path)
            path.pop()
        return d
    raise YAMLInputError(
        "unexpected YAML node", node.start_mark, _pointer_of(path), "syntax"
    )  # pragma: no cover


def _scalar(node: ScalarNode, path: list[str]) -> Any:
    tag = node.tag
    if tag == yaml_schema.AMBIGUOUS:
        raise YAMLInputError(
            yaml_schema.ambiguity(node.value, MAX_NUMBER_CHARS),
            node.start_mark,
            _pointer_of(path),
            "yaml-1.1",
        )
    if tag in (_TAG + "int", _TAG + "float") and len(node.value) > MAX_NUMBER_CHARS:
        raise YAMLInputError(
            f"number is {len(node.value)} characters long; the limit is {MAX_NUMBER_CHARS}",
            node.start_mark,
            _pointer_of(path),
            "limit",
        )
    if tag in _CORE_TAGS:
        try:
            return yaml_schema.core_value(tag, node.value)
        except ValueError as exc:
            raise YAMLInputError(
                f"bad {tag.removeprefix(_TAG)}: {exc}", node.start_mark, _pointer_of(path), "syntax"
            ) from None
    raise YAMLInputError(
        f"YAML tag {tag!r} is not allowed in graph files", node.start_mark, _pointer_of(path), "yaml-tag"
    )


# -- JSON ---------------------------------------------------------------------------------------
class _DuplicateKey(ValueError):
    pass


def _no_dup_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # some key repeats: name the first repetition
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# The lookbehind keeps the search linear: without it every digit of a long run restarts it.
_BAD_JSON_NUMBER = re.compile(r"-?Infinity|NaN|(?<![0-9])[0-9]{4000,}")


def _depth(data: Any) -> int:
    """Maximum nesting depth, computed iteratively (stops counting past MAX_DEPTH)."""
    # Level by level, keeping only the containers: most values are scalars.
    containers = (dict, list)  # a tuple: `dict | list` would build a union for every value
    level = [data] if isinstance(data, containers) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return depth
        inner: list[Any] = []
        for obj in level:
            values = obj.values() if isinstance(obj, dict) else obj
            inner += [v for v in values if isinstance(v, containers)]
        level = inner
    return depth


def is_yaml_path(path: str) -> bool:
    return path.lower().endswith((".yaml", ".yml"))


def is_yaml_text(text: str, file: str) -> bool:
    """YAML unless the file is not named .yaml/.yml and the text starts like JSON."""
    return is_yaml_path(file) or not text.lstrip().startswith(("{", "["))


def _diag(message: str, file: str, pointer: str = "", code: str = "syntax", **kw: Any) -> Diagnostic:
    return Diagnostic(message, pointer, file, code=code, **kw)


def _deep(file: str, pointer: str = "", **kw: Any) -> InputError:
    return InputError([_diag(f"document nests deeper than {MAX_DEPTH} levels", file, pointer, "limit", **kw)])


def _deep_json(text: str, file: str) -> InputError:
    off = json_deep_offset(text, MAX_DEPTH)
    if off is None:  # pragma: no cover - json recursed deeply, so some bracket is deep
        return _deep(file)
    line, col = line_col(text, off)
    return _deep(file, json_pointer_at(text, off, MAX_DEPTH), line=line, column=col)


def parse_text(text: str, file: str) -> Any:
    """Text -> plain data (dict/list/str/int/float/bool/None). Raises InputError."""
    if is_yaml_text(text, file):
        return _parse_yaml(text, file)
    return _parse_json(text, file)


def _parse_yaml(text: str, file: str) -> Any:
    try:
        root = compose_yaml(text)
        data = None if root is None else _construct(root, [])
    except YAMLInputError as exc:
        mark: Any = exc.problem_mark
        raise InputError(
            [
                _diag(
                    f"YAML: {exc.problem}",
                    file,
                    exc.pointer,
                    exc.code,
                    line=mark.line + 1,
                    column=mark.column + 1,
                )
            ]
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        pointer = _pointer_of(getattr(exc, "fuseopt_path", []))
        kw: dict[str, Any] = {}
        if mark is not None:
            kw = {"line": mark.line + 1, "column": mark.column + 1}
        raise InputError([_diag(f"YAML: {msg}", file, pointer, **kw)]) from None
    except yaml.reader.ReaderError as exc:  # control characters and the like: no mark, a position
        line, col = line_col(text, exc.position)
        raise InputError(
            [_diag(f"YAML: character #x{exc.character:04x} is not allowed", file, line=line, column=col)]
        ) from None
    except yaml.YAMLError as exc:
        raise InputError([_diag(f"YAML: {exc}", file)]) from None
    except RecursionError:  # pragma: no cover - the composer caps depth long before this
        raise _deep(file) from None
    return data


def _parse_json(text: str, file: str) -> Any:
    try:
        data = json.loads(text, object_pairs_hook=_no_dup_pairs, parse_constant=_no_constants)
    except RecursionError:
        raise _deep_json(text, file) from None
    except json.JSONDecodeError as exc:
        pointer = json_pointer_at(text, exc.pos, MAX_DEPTH)
        raise InputError(
            [_diag(f"JSON: {exc.msg}", file, pointer, line=exc.lineno, column=exc.colno)]
        ) from None
    except _DuplicateKey as exc:
        found = find_json_duplicate_key(text, MAX_DEPTH)
        pointer, pos = found if found is not None else ("", None)
        kw: dict[str, Any] = {}
        if pos is not None:
            kw = dict(zip(("line", "column"), line_col(text, pos), strict=True))
        raise InputError(
            [_diag(f"JSON: duplicate key {exc.args[0]!r}", file, pointer, "duplicate-key", **kw)]
        ) from None
    except ValueError as exc:  # NaN/Infinity, integers over Python's digit limit: no position given
        m = _BAD_JSON_NUMBER.search(text)
        kw = {}
        pointer = ""
        if m is not None:
            pointer = json_pointer_at(text, m.start(), MAX_DEPTH)
            kw = dict(zip(("line", "column"), line_col(text, m.start()), strict=True))
        msg = str(exc).split(";")[0]
        raise InputError([_diag(f"JSON: {msg}", file, pointer, **kw)]) from None
    if _depth(data) > MAX_DEPTH:
        raise _deep_json(text, file)
    return data


# -- models -------------------------------------------------------------------------------------
_UNION_TAGS = ("pointwise", "reduction", "extern", "template")


def _pointer(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for i, p in enumerate(loc):
        # Discriminated unions insert the tag (e.g. 'pointwise') after the list index: drop it.
        if i == 2 and loc[0] == "nodes" and p in _UNION_TAGS:
            continue
        if isinstance(p, str) and p in ("function-after", "function-before", "[key]"):
            continue
        parts.append(escape_pointer_part(str(p)))
    return "".join("/" + p for p in parts)


def _message(err: Any) -> str:
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden":
        if loc[-1:] == ("reduce",) and len(loc) == 4 and loc[2] == "pointwise":
            return "`reduce` belongs to reduction nodes; drop `kind: pointwise` or the `reduce` field"
        return "unknown field (not part of the format)"
    if loc[-1:] == ("[key]",):
        return f"bad name {loc[-2]!r}: {err['msg']}"
    return str(err["msg"])


def validate_data(data: Any, file: str) -> models.Graph:
    if not isinstance(data, dict):
        raise InputError([_diag("a graph file must hold a mapping at the top level", file, "", "type")])
    try:
        return models.Graph.model_validate(data)
    except ValidationError as exc:
        diags = []
        errors = exc.errors(include_url=False)
        # Every location that some error lies inside (a set: 60,000 errors compared pairwise hang).
        inside = {tuple(e["loc"])[:k] for e in errors for k in range(len(e["loc"]))}
        for err in errors:
            loc = tuple(err["loc"])
            # pydantic also reports a list as too short once its bad items are dropped: noise.
            if err["type"] == "too_short" and loc in inside:
                continue
            pointer = _pointer(tuple(err["loc"]))
            if err["type"] == "invalid_kind" and _has_kind(data, err["loc"]):
                pointer += "/kind"
            diags.append(Diagnostic(_message(err), pointer, file, code=str(err["type"])))
        raise InputError(diags) from None


def _has_kind(data: dict[str, Any], loc: tuple[Any, ...]) -> bool:
    nodes = data.get("nodes")
    if len(loc) != 2 or not isinstance(nodes, list) or not isinstance(loc[1], int) or loc[1] >= len(nodes):
        return False
    node = nodes[loc[1]]
    return isinstance(node, dict) and "kind" in node


def load_text(text: str, file: str = "<input>") -> Graph:
    """Parse and validate graph text (JSON or YAML). Raises InputError; diagnostics carry
    line:column where the pointer can be found in the text."""
    if len(text) > MAX_FILE_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise InputError([_diag(f"input is larger than {MAX_FILE_BYTES} bytes (16 MiB)", file, "", "limit")])
    try:
        with gc_paused():
            data = parse_text(text, file)
            model = validate_data(data, file)
            del data
            return build_graph(model, file)
    except InputError as err:
        raise InputError(_with_positions(err.diagnostics, text, file)) from None


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Load and validate a graph file (JSON or YAML). Raises InputError with located diagnostics."""
    file = str(path)
    raw = read_regular_file(path, MAX_FILE_BYTES)
    if len(raw) > MAX_FILE_BYTES:
        raise InputError([_diag(f"file is larger than {MAX_FILE_BYTES} bytes (16 MiB)", file, "", "limit")])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([_diag(f"file is not UTF-8 (byte {exc.start})", file, "", "encoding")]) from None
    del raw
    return load_text(text, file)


def _with_positions(diags: tuple[Diagnostic, ...], text: str, file: str) -> list[Diagnostic]:
    """Fill line:column from each diagnostic's pointer (one pass over the text for all of them)."""
    wanted = sorted({d.pointer for d in diags if d.line is None})
    if not wanted:
        return list(diags)
    positions: dict[str, tuple[int, int]] = {}
    try:
        if is_yaml_text(text, file):
            positions = yaml_event_positions(_yaml_events(text), wanted)
        else:
            lines = LineIndex(text)
            positions = {p: lines.line_col(off) for p, off in json_positions(text, wanted).items()}
    except (yaml.YAMLError, ValueError, RecursionError):  # pragma: no cover - the text parsed before
        positions = {}
    out = []
    for d in diags:
        pos = positions.get(d.pointer) if d.line is None else None
        out.append(d if pos is None else d.with_location(line=pos[0], column=pos[1]))
    return out
