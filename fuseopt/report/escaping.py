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
import re
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
    text = json.dumps(obj, indent=indent, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
