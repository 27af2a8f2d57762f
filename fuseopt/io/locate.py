"""Map JSON pointers back to lines and columns of the file they came from (for error messages).

Only used on the error path. YAML positions come from the composed node tree's start marks; JSON
positions from a small descent over the text that only enters containers on the way to a wanted
pointer and skips everything else with the json module's C scanner. A pointer that is absent from
the document (a missing field) is located at its nearest present ancestor.
"""

from __future__ import annotations

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
    """1-based (line, column) of a character offset."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# -- YAML -----------------------------------------------------------------------------------------
def yaml_positions(root: yaml.Node, pointers: Iterable[str]) -> dict[str, tuple[int, int]]:
    """(line, column) of each pointer's node (or of its nearest present ancestor)."""
    out: dict[str, tuple[int, int]] = {}
    for pointer in pointers:
        node: Any = root
        best = node.start_mark
        for part in split_pointer(pointer):
            nxt = None
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == part:
                        nxt = v
                        break
            elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
                nxt = node.value[int(part)]
            if nxt is None:
                break
            node = nxt
            best = node.start_mark
        out[pointer] = (best.line + 1, best.column + 1)
    return out


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
    out: dict[str, int] = {}
    for p in wanted:
        parts = split_pointer(p)
        for n in range(len(parts), -1, -1):
            key = "".join("/" + escape_pointer_part(x) for x in parts[:n])
            if key in found:
                out[p] = found[key]
                break
    return out


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


# -- one pointer, either syntax (kept for callers outside the loader) ------------------------------
def locate_pointer(text: str, pointer: str, yaml_syntax: bool = True) -> tuple[int, int] | None:
    """(line, column), 1-based, of the value at `pointer`; the nearest located ancestor if it is absent."""
    if not yaml_syntax:
        off = json_positions(text, [pointer]).get(pointer)
        return None if off is None else line_col(text, off)
    from fuseopt.io.load import compose_yaml  # the strict composer: safe on hostile text

    try:
        root = compose_yaml(text)
    except yaml.YAMLError:
        return None
    if root is None:
        return None
    return yaml_positions(root, [pointer])[pointer]
