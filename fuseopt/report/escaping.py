"""Input text -> output for people: rich markup, HTML and JSON that show input strings as text.

Anything from a graph file, a plan file or the command line (names, meta values, file paths,
error messages that quote them) is printed through `shown` (rich console text) or `html_text`
(HTML text and attribute values), or written with `json_text`. `printable` shows
what a terminal or a UTF-8 file cannot take as it is (control characters, lone surrogates from
`\\ud800` escapes or undecodable file names, bidirectional overrides) as its Python escape.
"""

from __future__ import annotations

import html
import json
import math
import re
from contextlib import suppress
from json.encoder import encode_basestring
from typing import Any

# Control characters but newline and tab (an ANSI escape, \r overwriting a line), line and
# paragraph separators, bidirectional embeddings/overrides/isolates, lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_char(m: re.Match[str]) -> str:
    return ascii(m.group())[1:-1]


def printable(text: object) -> str:
    """`str(text)` with every character a terminal or a UTF-8 file cannot show as text replaced
    by its escape (`\\x1b`, `\\r`, `\\ud800`, `\\u202e`)."""
    return _UNPRINTABLE.sub(_escape_char, str(text))


def shown(text: object) -> str:
    """`text` for rich's `Console.print`, a table cell or a title: printed literally (markup such
    as `[/bold]` or `[link=...]` escaped, unprintable characters escaped), whatever follows it."""
    return _MARKUP_SPECIAL.sub(_markup_escape, printable(text))


# Every `[`, and every run of backslashes before a `[` or at the end. rich.markup.escape leaves
# gaps: rich halves backslashes before a tag but drops only one before any other `[`, and a
# trailing backslash escapes a tag that follows. So each `[` is written `\[`, and a run of
# backslashes before it (or at the end) is written doubled and closed by an empty tag, which
# makes both readings agree.
_MARKUP_SPECIAL = re.compile(r"(\\*)(\[|\Z)")


def _markup_escape(m: re.Match[str]) -> str:
    run = m.group(1)
    bracket = "\\[" if m.group(2) else ""
    if not run:
        return bracket
    return "\\" * (2 * len(run)) + "[default][/default]" + bracket


def html_text(text: object) -> str:
    """`text` for HTML, as element text or inside a quoted attribute value."""
    return html.escape(printable(text), quote=True)


def json_text(obj: Any, *, indent: int | None = 2) -> str:
    """JSON that any UTF-8 writer can write: non-ASCII text kept readable, lone surrogates (which
    UTF-8 cannot encode) written as their `\\uXXXX` escapes, as `ensure_ascii` would."""
    text = None
    if indent is not None:
        with suppress(_NotPlain, RecursionError):  # then json.dumps writes it, or raises as it does
            text = _indented_json(obj, " " * indent)
    if text is None:
        text = json.dumps(obj, indent=indent, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _NotPlain(Exception):
    """A value `_indented_json` leaves to json.dumps."""


_FLOAT_WORDS = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _indented_json(obj: Any, step: str) -> str:
    """`json.dumps(obj, indent=len(step), ensure_ascii=False)`, for plain data only: str, int,
    float, bool, None, and lists, tuples and str-keyed dicts of them (exactly those types; anything
    else raises _NotPlain). json.dumps indents in pure Python, a generator per container: a
    10,000-node plan took a quarter of a second; this builds the same text in half the time."""
    parts: list[str] = []
    add = parts.append
    newlines = ["\n"]  # "\n" + the indentation of each level
    string = encode_basestring

    def value(o: Any, level: int) -> None:
        t = type(o)
        if t is str:
            add(string(o))
        elif t is dict or t is list or t is tuple:
            if not o:
                add("{}" if t is dict else "[]")
                return
            if len(newlines) <= level + 1:
                newlines.append(newlines[-1] + step)
            inner = newlines[level + 1]
            sep = "," + inner
            first = True
            if t is dict:
                add("{" + inner)
                for k, v in o.items():
                    if type(k) is not str:
                        raise _NotPlain
                    if first:
                        first = False
                    else:
                        add(sep)
                    add(string(k) + ": ")
                    value(v, level + 1)
                add(newlines[level] + "}")
            else:
                add("[" + inner)
                for v in o:
                    if first:
                        first = False
                    else:
                        add(sep)
                    value(v, level + 1)
                add(newlines[level] + "]")
        elif o is None:
            add("null")
        elif o is True:
            add("true")
        elif o is False:
            add("false")
        elif t is int:
            add(int.__repr__(o))
        elif t is float:
            add("NaN" if o != o else _FLOAT_WORDS.get(o) or float.__repr__(o))
        else:
            raise _NotPlain

    value(obj, 0)
    return "".join(parts)
