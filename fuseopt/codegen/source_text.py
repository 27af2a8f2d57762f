"""Input text -> generated source: the one place where strings from a graph file enter kernels.py.

A string of the input reaches generated code only through these functions: an identifier is
checked against the FORMAT name grammar (`ident`), so it cannot leave its place; any other text is
a Python string literal (`literal`) or comment text (`comment_text`), both printed by `ascii()`,
so that the module stays ASCII and no input character can end a line, a comment or a string.
`check_module` is the last line of defence on the whole module text before anyone writes it.
A failure here is a bug in fuseopt (validation let the text through), not bad input.
"""

from __future__ import annotations

import keyword
import re

# docs/format.md: names of buffers, nodes and loop variables (fuseopt.ir.models.NAME_PATTERN).
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# docs/format.md: the graph's name (fuseopt.ir.models.GRAPH_NAME_PATTERN).
_GRAPH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
# Names fuseopt derives from input names (a buffer's `_ptr`, a local renamed away from a keyword).
_PYTHON_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What the module may hold besides printable ASCII: the newline. Python also ends a line (inside
# a comment too) at \r, \x0c, \x0b, \x1c-\x1e, \x85, U+2028 and U+2029, and rejects \0.
_UNSAFE = re.compile(r"[^\n\x20-\x7e]")


class UnsafeSourceError(RuntimeError):
    """Input text was about to reach generated source unchecked: a bug in fuseopt (it has a
    traceback on purpose; nothing has been written)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"internal error: {message} (a bug in fuseopt: please report it with the graph)")


def ident(name: str) -> str:
    """`name`, a buffer, node or loop name of the input, after checking the FORMAT name grammar."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise UnsafeSourceError(f"{name!r} is not a name of the graph format")
    return name


def graph_name(name: str) -> str:
    """`name`, the graph's name, after checking its FORMAT grammar (no quotes, no backslash)."""
    if not isinstance(name, str) or _GRAPH_NAME.fullmatch(name) is None:
        raise UnsafeSourceError(f"{name!r} is not a graph name of the graph format")
    return name


def python_name(name: str) -> str:
    """`name`, an identifier fuseopt derived (kernel names, locals, pointers), checked: ASCII
    letters, digits and underscores, not a keyword."""
    if not isinstance(name, str) or _PYTHON_NAME.fullmatch(name) is None or keyword.iskeyword(name):
        raise UnsafeSourceError(f"{name!r} is not a Python identifier")
    return name


def literal(text: str) -> str:
    """`text` as a Python string literal: `ascii()`, in double quotes where that needs no escape
    (as `ruff format` prints it)."""
    out = ascii(str(text))
    if out.startswith("'") and '"' not in text:  # then `text` holds no ' either (repr chose ')
        out = '"' + out[1:-1] + '"'
    return out


def comment_text(text: str) -> str:
    """`text` for a comment: printable ASCII as it is, anything else as its escape (`\\n`,
    `\\x00`, `\\u2028`, `\\ud800`), so that it cannot end the comment's line."""
    return ascii(str(text))[1:-1]


def check_module(text: str) -> str:
    """The whole generated module, checked before it is returned: printable ASCII and newlines
    only (no other character Python takes for a line end, no NUL). Returns `text`. (Parsing it
    too would double the cost of generation; tests/test_injection.py parses hostile cases.)"""
    bad = _UNSAFE.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise UnsafeSourceError(f"generated source holds {bad.group()!r} on line {line}")
    return text
