"""YAML 1.2's core schema for scalars, with YAML 1.1's differing readings refused.

PyYAML resolves plain scalars by YAML 1.1, where `074` is 60, `1:00` is 60, `0b1010` is 10, `1_000`
is 1000 and `yes`/`no`/`on`/`off` are booleans; in YAML 1.2 (and to a reader who knows JSON) the
first is 74 and the others are text. fuseopt reads YAML 1.2's core schema: null (`~`, `null`,
empty), booleans (`true`/`false` in three casings), integers (`[-+]?[0-9]+`, `0o17`, `0x1F`) and
floats (`1.5`, `.5`, `1e3`, `.inf`, `-.inf`, `.nan`); everything else is a string. A plain scalar
that YAML 1.1 reads as a number or a boolean and YAML 1.2 reads otherwise is refused, naming both
readings, as is every decimal integer with a leading zero (`09` as well: is it octal?). Quoted
scalars are always strings; an explicit tag (`!!int 17`) must hold its type's core form.
"""

from __future__ import annotations

import math
import re
from typing import Any

from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode, SequenceNode
from yaml.resolver import BaseResolver, Resolver

TAG = "tag:yaml.org,2002:"
NULL, BOOL, INT, FLOAT, STR, MERGE = (TAG + t for t in ("null", "bool", "int", "float", "str", "merge"))
SEQ, MAP = TAG + "seq", TAG + "map"
AMBIGUOUS = "tag:fuseopt,2024:yaml-1.1"  # a plain scalar whose YAML 1.1 reading differs

# One pattern, a group per tag; order matters: an integer also matches the float alternative.
_CORE = re.compile(
    r"(?P<null>~|null|Null|NULL|)"
    r"|(?P<bool>true|True|TRUE|false|False|FALSE)"
    r"|(?P<int>[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)"
    r"|(?P<float>[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"
    r"|(?P<merge><<)"  # not core, but kept so that the composer refuses merge keys
)
_LEADING_ZERO = re.compile(r"[-+]?0[0-9]+")
_YAML11 = Resolver()
_YAML11_VALUES = (INT, FLOAT, BOOL)
# What YAML 1.1 (PyYAML's resolver) reads as a number or a boolean: its own three patterns.
_YAML11_NOT_TEXT = re.compile(
    "|".join(
        dict.fromkeys(  # each pattern once, in a fixed order (it is listed under each first character)
            f"(?:{pattern.pattern})"
            for first in _YAML11.yaml_implicit_resolvers.values()
            for tag, pattern in first
            if tag in _YAML11_VALUES
        )
    ),
    re.X,
)

# The first characters of a plain scalar that YAML 1.2 or YAML 1.1 may read as no string: names and
# expressions (most scalars of a graph) skip the patterns.
_MAYBE_NOT_TEXT = frozenset("~nNtTfFyYoO<-+.0123456789")


def core_tag(value: str) -> str:
    """The YAML 1.2 core tag of a plain scalar."""
    if value and value[0] not in _MAYBE_NOT_TEXT:
        return STR
    m = _CORE.fullmatch(value)
    return STR if m is None else TAG + str(m.lastgroup)


def plain_tag(value: str) -> str:
    """The tag of an untagged plain scalar: its core tag, or AMBIGUOUS when YAML 1.1 reads it as a
    number or boolean and YAML 1.2 does not read it the same (or it is a leading-zero integer)."""
    tag = core_tag(value)
    if tag == STR and not _YAML11_NOT_TEXT.match(value):
        return STR  # text in both (most scalars: names and expressions)
    if tag == INT and _LEADING_ZERO.fullmatch(value):
        return AMBIGUOUS
    old = _YAML11.resolve(ScalarNode, value, (True, False))
    # Where both read a number of one type, they read the same one: YAML 1.1's decimal integers
    # and floats that match the core patterns mean what they mean in YAML 1.2.
    if old in _YAML11_VALUES and old != tag:
        return AMBIGUOUS
    return tag


class CoreResolver(BaseResolver):
    """A resolver for PyYAML's composer: `plain_tag` for untagged plain scalars, strings for quoted
    ones, the default tags for sequences and mappings (fuseopt has no path resolvers)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return plain_tag(value) if implicit[0] else STR
        return SEQ if kind is SequenceNode else MAP


def core_value(tag: str, value: str) -> Any:
    """The value of a scalar of a core tag; ValueError if the text is not that type's core form."""
    if tag == STR:
        return value
    if tag == NULL:
        if core_tag(value) != NULL:
            raise ValueError(f"{value!r} is not null (~, null or nothing)")
        return None
    if tag == BOOL:
        if core_tag(value) != BOOL:
            raise ValueError(f"{value!r} is not a boolean (true or false)")
        return value.lower() == "true"
    if tag == INT:
        if core_tag(value) != INT:
            raise ValueError(f"{value!r} is not an integer")
        if value.startswith(("0o", "0x")):
            return int(value[2:], 8 if value[1] == "o" else 16)
        if _LEADING_ZERO.fullmatch(value):
            raise ValueError(f"{value!r} has a leading zero: octal in YAML 1.1, decimal in YAML 1.2")
        return int(value, 10)
    if tag == FLOAT:
        if core_tag(value) not in (INT, FLOAT):
            raise ValueError(f"{value!r} is not a number")
        low = value.lower()
        if low.endswith(".inf"):
            return -math.inf if low.startswith("-") else math.inf
        if low == ".nan":
            return math.nan
        return float(int(value, 0) if value.startswith(("0o", "0x")) else float(value))
    raise ValueError(f"no YAML 1.2 core type {tag!r}")  # pragma: no cover - callers check tags


def ambiguity(value: str, max_chars: int) -> str:
    """Why a plain scalar tagged AMBIGUOUS is refused, and what to write instead."""
    old = _YAML11.resolve(ScalarNode, value, (True, False))
    new = core_tag(value)
    reading = (
        f"the text {value!r}"
        if new == STR
        else repr(int(value, 10))
        if new == INT
        else _spelled(new, core_value(new, value))
    )
    was: str | None = None  # YAML 1.1's value, spelled for YAML 1.2
    if old in _YAML11_VALUES and len(value) <= max_chars:  # PyYAML's base-60 reading is quadratic
        was = _spelled(old, SafeConstructor().construct_object(ScalarNode(old, value)))
    if new == INT:  # a leading zero: octal or decimal?
        fix = f"write {int(value, 10)} for the decimal number"
        if value.isdigit() and set(value) <= set("01234567"):
            fix += f" or 0o{value.lstrip('0') or '0'} for the octal one"
    else:
        fix = f"write {was} for YAML 1.1's reading" if was is not None else ""
    one_one = was if was is not None else ("a number" if old in _YAML11_VALUES else f"the text {value!r}")
    return (
        f"{value!r} is ambiguous: YAML 1.1 reads it as {one_one}, YAML 1.2 (which fuseopt reads) as "
        f"{reading}; {fix + ', or ' if fix else ''}quote it for the text"
    )


def _spelled(tag: str, v: Any) -> str:
    if tag == BOOL:
        return "true" if v else "false"
    if tag == NULL:
        return "null"
    return repr(v)
