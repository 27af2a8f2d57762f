"""Map JSON pointers back to lines and columns of the file they came from (for error messages).

Only used on the error path. YAML positions come from the composed node tree's start marks; JSON
positions from a small descent over the text that only enters containers on the way to a wanted
pointer and skips everything else with the json module's C scanner. A pointer that is absent from
the document (a missing field) is located at its nearest present ancestor.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import re
from collections.abc import Iterable
from typing import Any

import yaml

_WS = re.compile(r"[ \t\n\r]*")
_scan_once: Any = getattr(json.JSONDecoder(), "scan_once")  # noqa: B009 - untyped attribute
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]


def escape_pointer_part(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def unescape_pointer_part(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def split_pointer(pointer: str) -> list[str]:
    return [unescape_pointer_part(p) for p in pointer.split("/")[1:]] if pointer else []


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset (one lookup: `LineIndex` for many)."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class LineIndex:
    """(line, column) of many offsets of one text: line starts found once, each lookup a bisection
    (a file with 60,000 errors counted its newlines from the start for every one of them)."""

    def __init__(self, text: str):
        self.size = len(text)
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def line_col(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, self.size))
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1


# -- YAML -----------------------------------------------------------------------------------------
def yaml_positions(root: yaml.Node, pointers: Iterable[str]) -> dict[str, tuple[int, int]]:
    """(line, column) of each pointer's node (or of its nearest present ancestor)."""
    tree = _YamlTree(root)
    return {pointer: tree.at(pointer) for pointer in pointers}


def yaml_event_positions(events: Iterable[Any], pointers: Iterable[str]) -> dict[str, tuple[int, int]]:
    """(line, column) of each pointer's node (or of its nearest present ancestor), from the event
    stream of a document the strict composer accepted (no aliases, scalar keys). No node tree is
    built, so locating the errors of a large file costs a fraction of composing it again."""
    wanted = list(pointers)
    trie: Trie = {}
    for p in wanted:
        t = trie
        for part in split_pointer(p):
            t = t.setdefault(part, {})
    found: dict[str, Any] = {}
    # A frame per open collection: [is_mapping, trie of its children or None, pointer, next index
    # (sequences) or the pending key (mappings; None while a key is expected)].
    stack: list[list[Any]] = []
    for event in events:
        kind = type(event)
        if kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
            stack.pop()
            continue
        if kind not in (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent):
            continue  # stream and document events
        if not stack:
            sub: Trie | None = trie
            here = ""
        else:
            frame = stack[-1]
            if frame[0]:
                if frame[3] is None:  # a key: remembered, not located
                    frame[3] = event.value
                    continue
                part, frame[3] = frame[3], None
            else:
                part, frame[3] = str(frame[3]), frame[3] + 1
            parent: Trie | None = frame[1]
            sub = parent.get(part) if parent is not None else None
            here = frame[2] + "/" + escape_pointer_part(part) if sub is not None else ""
        if sub is not None:
            found[here] = event.start_mark
        if kind is not yaml.ScalarEvent:
            is_map = kind is yaml.MappingStartEvent
            stack.append([is_map, sub or None, here, None if is_map else 0])
    out: dict[str, tuple[int, int]] = {}
    for p, where in _nearest(wanted, found).items():
        out[p] = (where.line + 1, where.column + 1)
    return out


def _nearest(wanted: Iterable[str], found: dict[str, Any]) -> dict[str, Any]:
    """Each wanted pointer's entry in `found`, or its nearest ancestor's (absent when none is)."""
    out: dict[str, Any] = {}
    for p in wanted:
        if p in found:  # present (most pointers): no need to look for an ancestor
            out[p] = found[p]
            continue
        parts = split_pointer(p)
        for n in range(len(parts) - 1, -1, -1):
            key = "".join("/" + escape_pointer_part(x) for x in parts[:n])
            if key in found:
                out[p] = found[key]
                break
    return out


class _YamlTree:
    """Pointer lookups in a composed node tree; each mapping's keys are indexed on first use, so a
    lookup costs its depth, not the sizes of the mappings on its way."""

    def __init__(self, root: yaml.Node):
        self.root = root
        self._keys: dict[int, dict[str, yaml.Node]] = {}

    def child(self, node: yaml.Node, part: str) -> yaml.Node | None:
        if isinstance(node, yaml.MappingNode):
            keys = self._keys.get(id(node))
            if keys is None:
                keys = {}
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode):
                        keys.setdefault(k.value, v)
                self._keys[id(node)] = keys
            return keys.get(part)
        if isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            return node.value[int(part)]  # type: ignore[no-any-return]
        return None

    def at(self, pointer: str) -> tuple[int, int]:
        node = self.root
        for part in split_pointer(pointer):
            nxt = self.child(node, part)
            if nxt is None:
                break
            node = nxt
        return node.start_mark.line + 1, node.start_mark.column + 1


# -- JSON -----------------------------------------------------------------------------------------
def _skip(text: str, pos: int) -> int:
    """End of the JSON value starting at pos (raises on invalid text)."""
    try:
        return int(_scan_once(text, pos)[1])
    except StopIteration:
        raise ValueError(f"invalid JSON at {pos}") from None


def _ws(text: str, pos: int) -> int:
    m = _WS.match(text, pos)
    return pos if m is None else m.end()


Trie = dict[str, "Trie"]


def json_positions(text: str, pointers: Iterable[str]) -> dict[str, int]:
    """Character offset of each pointer's value (or of its nearest present ancestor), in one pass."""
    trie: Trie = {}
    wanted = list(pointers)
    for p in wanted:
        t = trie
        for part in split_pointer(p):
            t = t.setdefault(part, {})
    found: dict[str, int] = {}
    start = _ws(text, 0)
    found[""] = start
    with contextlib.suppress(ValueError, IndexError):  # keep what was found before the fault
        _json_descend(text, start, trie, "", found)
    return _nearest(wanted, found)


def _json_descend(text: str, pos: int, trie: Trie, here: str, found: dict[str, int]) -> int:
    """Record the start of every value on a trie path; returns the end of the value at pos."""
    if not trie or text[pos] not in "{[":
        return _skip(text, pos)
    is_obj = text[pos] == "{"
    close = "}" if is_obj else "]"
    pos = _ws(text, pos + 1)
    if text[pos] == close:
        return pos + 1
    index = 0
    while True:
        if is_obj:
            if text[pos] != '"':
                raise ValueError("expected a key")
            key, pos = _scanstring(text, pos + 1)
            pos = _ws(text, pos)
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = _ws(text, pos + 1)
        else:
            key = str(index)
            index += 1
        sub = trie.get(key)
        if sub is None:
            end = _skip(text, pos)
        else:
            ptr = here + "/" + escape_pointer_part(key)
            found[ptr] = pos
            end = _json_descend(text, pos, sub, ptr, found)
        pos = _ws(text, end)
        if text[pos] == ",":
            pos = _ws(text, pos + 1)
            continue
        if text[pos] == close:
            return pos + 1
        raise ValueError("expected ',' or a closing bracket")


def json_pointer_at(text: str, offset: int, max_depth: int = 64) -> str:
    """The pointer of the innermost value whose text contains `offset` (for syntax errors: the
    container in which parsing stopped). Never raises."""
    parts: list[str] = []
    pos = _ws(text, 0)
    try:
        while len(parts) < max_depth and pos < offset and text[pos] in "{[":
            is_obj = text[pos] == "{"
            close = "}" if is_obj else "]"
            pos = _ws(text, pos + 1)
            index = 0
            inner = None
            while pos <= offset and text[pos] != close:
                if is_obj:
                    if text[pos] != '"':
                        break
                    key, pos = _scanstring(text, pos + 1)
                    pos = _ws(text, pos)
                    if text[pos] != ":":
                        break
                    pos = _ws(text, pos + 1)
                else:
                    key = str(index)
                    index += 1
                if pos >= offset:
                    inner = (key, pos)
                    break
                try:
                    end = _skip(text, pos)
                except (ValueError, json.JSONDecodeError, RecursionError):
                    inner = (key, pos)
                    break
                if end > offset:
                    inner = (key, pos)
                    break
                pos = _ws(text, end)
                if pos < len(text) and text[pos] == ",":
                    pos = _ws(text, pos + 1)
                elif pos >= offset or text[pos] != close:
                    break
            if inner is None:
                break
            parts.append(inner[0])
            pos = inner[1]
    except (IndexError, ValueError, json.JSONDecodeError):
        pass
    return "".join("/" + escape_pointer_part(p) for p in parts)


_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_deep_offset(text: str, max_depth: int) -> int | None:
    """Offset of the first bracket that opens a container deeper than `max_depth` (strings are
    skipped, so brackets inside them do not count)."""
    depth = 0
    for m in _JSON_NESTING.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > max_depth:
                return m.start()
        elif c in "]}":
            depth -= 1
    return None


def find_json_duplicate_key(text: str, max_depth: int = 64) -> tuple[str, int] | None:
    """(pointer, offset) of the first repeated key of any object in document order, if any."""
    try:
        return _dup_walk(text, _ws(text, 0), "", max_depth)[1]
    except (IndexError, ValueError, RecursionError):
        return None


def _dup_walk(text: str, pos: int, here: str, depth: int) -> tuple[int, tuple[str, int] | None]:
    if depth <= 0 or text[pos] not in "{[":
        return _skip(text, pos), None
    is_obj = text[pos] == "{"
    close = "}" if is_obj else "]"
    pos = _ws(text, pos + 1)
    if text[pos] == close:
        return pos + 1, None
    seen: set[str] = set()
    index = 0
    while True:
        if is_obj:
            key_pos = pos
            key, pos = _scanstring(text, pos + 1)
            if key in seen:
                return pos, (here + "/" + escape_pointer_part(key), key_pos)
            seen.add(key)
            pos = _ws(text, _ws(text, pos) + 1)
        else:
            key = str(index)
            index += 1
        end, hit = _dup_walk(text, pos, here + "/" + escape_pointer_part(key), depth - 1)
        if hit is not None:
            return end, hit
        pos = _ws(text, end)
        if text[pos] == ",":
            pos = _ws(text, pos + 1)
            continue
        return pos + 1, None


# -- many lookups in one text, either syntax ----------------------------------------------------
class _JsonTree:
    """Pointer lookups in JSON text; each container's children are found on first use (a skim with
    the json module's scanner), so many lookups cost the containers on their ways once."""

    def __init__(self, text: str):
        self.text = text
        self._children: dict[int, dict[str, int]] = {}

    def children(self, pos: int) -> dict[str, int]:
        kids = self._children.get(pos)
        if kids is not None:
            return kids
        kids = {}
        text = self.text
        with contextlib.suppress(ValueError, IndexError):  # keep what was found before a fault
            if text[pos] in "{[":
                is_obj = text[pos] == "{"
                close = "}" if is_obj else "]"
                p = _ws(text, pos + 1)
                index = 0
                while text[p] != close:
                    if is_obj:
                        key, p = _scanstring(text, p + 1)
                        p = _ws(text, _ws(text, p) + 1)  # past the ':'
                    else:
                        key, index = str(index), index + 1
                    kids.setdefault(key, p)
                    p = _ws(text, _skip(text, p))
                    if text[p] == ",":
                        p = _ws(text, p + 1)
        self._children[pos] = kids
        return kids

    def at(self, pointer: str) -> int:
        pos = _ws(self.text, 0)
        for part in split_pointer(pointer):
            nxt = self.children(pos).get(part)
            if nxt is None:
                break
            pos = nxt
        return pos


class Positions:
    """1-based (line, column) of JSON pointers in one file's text, for any number of lookups (the
    nearest present ancestor of an absent pointer). YAML text is composed once, by the strict
    composer (safe on hostile text); None for every pointer when it does not compose."""

    def __init__(self, text: str, yaml_syntax: bool = True):
        self.text = text
        self.yaml_syntax = yaml_syntax
        self._yaml: _YamlTree | None = None
        self._json: _JsonTree | None = None
        self._lines: LineIndex | None = None
        self._failed = False

    def at(self, pointer: str) -> tuple[int, int] | None:
        if self._failed:
            return None
        if not self.yaml_syntax:
            if self._json is None:
                self._json, self._lines = _JsonTree(self.text), LineIndex(self.text)
            assert self._lines is not None
            return self._lines.line_col(self._json.at(pointer))
        if self._yaml is None:
            from fuseopt.io.load import compose_yaml  # the strict composer: safe on hostile text

            try:
                root = compose_yaml(self.text)
            except yaml.YAMLError:
                root = None
            if root is None:
                self._failed = True
                return None
            self._yaml = _YamlTree(root)
        return self._yaml.at(pointer)


def locate_pointer(text: str, pointer: str, yaml_syntax: bool = True) -> tuple[int, int] | None:
    """(line, column), 1-based, of the value at `pointer`; the nearest located ancestor if it is
    absent. One lookup: `Positions` for many in one text."""
    return Positions(text, yaml_syntax).at(pointer)
