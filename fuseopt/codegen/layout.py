"""The formatting discipline of generated code: what `ruff format` (line length 110) would print.

Statements are generated on one line; a line that is too long is split at its last call's
parentheses, first with all arguments on one indented line, else one argument per line with a
trailing comma. Generated modules are checked against `ruff format` in the tests.
"""

from __future__ import annotations

LINE_LENGTH = 110


def wrap(line: str, limit: int = LINE_LENGTH) -> list[str]:
    """`line` (with its indentation) as one or more lines no longer than `limit` where possible."""
    if len(line) <= limit or not line.endswith(")") or line.lstrip().startswith("#"):
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    open_at = _matching_open(line)
    if open_at is None:
        return [line]
    head, inner = line[: open_at + 1], line[open_at + 1 : -1]
    pad = " " * (indent + 4)
    if len(pad) + len(inner) <= limit:
        return [head, pad + inner, " " * indent + ")"]
    return [head, *(f"{pad}{arg}," for arg in split_args(inner)), " " * indent + ")"]


def _matching_open(line: str) -> int | None:
    """Where the parenthesis that the line's last character closes opens (brackets inside string
    literals do not count); None when it is not a parenthesis."""
    opens: list[int] = []
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            opens.append(i)
        elif ch in ")]}" and opens:
            at = opens.pop()
            if i == len(line) - 1:
                return at if line[at] == "(" else None
    return None


def split_args(inner: str) -> list[str]:
    """Top-level comma-separated parts (brackets and string literals respected)."""
    out: list[str] = []
    depth = 0
    quote: str | None = None
    escaped = False
    cur = ""
    for ch in inner:
        if quote:
            cur += ch
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def truncate_comment(line: str, limit: int = LINE_LENGTH) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."
