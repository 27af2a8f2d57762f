"""Planning options a graph records in its `meta` (`meta: {max_fusion_size: 2}`), and how every
planning command combines them with its command line: the command line first, then the graph's
`meta`, then the defaults of `fuseopt.passes.options.Options`.

The keys are a rule table (`RECORDED`): each names the check of its value; validation reports a
bad value at `/meta/KEY` like any other located error, so a graph that loads has usable ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fuseopt.passes.options import MAX_FUSION_SIZE_LIMIT, SCORINGS, Options

# A check returns None for a good value, else what a good one is.
Check = Callable[[Any], str | None]


def _scoring(v: Any) -> str | None:
    return None if isinstance(v, str) and v in SCORINGS else f"one of {', '.join(SCORINGS)}"


def _fusion_size(v: Any) -> str | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_FUSION_SIZE_LIMIT
    return None if ok else f"an integer from 1 to {MAX_FUSION_SIZE_LIMIT}"


def _flag(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


# meta key (= Options field) -> check of its value
RECORDED: dict[str, Check] = {
    "scoring": _scoring,
    "max_fusion_size": _fusion_size,
    "loop_order": _flag,
}


def recorded_problems(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(message, JSON pointer) for each recorded planning option with a value that is not one."""
    out = []
    for key, check in RECORDED.items():
        if key in meta:
            want = check(meta[key])
            if want is not None:
                out.append(
                    (f"meta.{key} is a planning option: expected {want}, got {meta[key]!r}", f"/meta/{key}")
                )
    return out


@dataclass(frozen=True)
class Resolved:
    """The options a command plans with, and where each came from (`command line`, `graph meta`
    or `default`), in Options' field order."""

    options: Options
    sources: Mapping[str, str]

    def describe(self) -> str:
        """`scoring stable, max fusion size 2 (from the graph's meta), loop order on`."""
        parts = []
        for key in RECORDED:
            value = getattr(self.options, key)
            shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
            where = {"graph meta": " (from the graph's meta)", "command line": " (command line)"}.get(
                self.sources[key], ""
            )
            parts.append(f"{key.replace('_', ' ')} {shown}{where}")
        return ", ".join(parts)


def resolve_options(meta: Mapping[str, Any], given: Mapping[str, Any]) -> Resolved:
    """Options from the command line's `given` values (None: not given), else the graph's meta,
    else the defaults. `meta` has passed validation (`recorded_problems` is empty)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key in RECORDED:
        if given.get(key) is not None:
            values[key], sources[key] = given[key], "command line"
        elif key in meta and RECORDED[key](meta[key]) is None:
            values[key], sources[key] = meta[key], "graph meta"
        else:
            sources[key] = "default"
    return Resolved(Options(**values), sources)
