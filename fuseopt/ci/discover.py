"""Finding the graph files of a CI run, and the stable key that names each one's golden plan.

An argument is a file (taken as is), a directory (searched recursively for *.json, *.yaml and
*.yml, skipping hidden entries and `*.plan.json` golden plans), or a glob (`graphs/**/*.yaml`,
whose matches skip golden plans too).
A graph's key is its path relative to the argument that found it, without the extension and with
`/` separators: `graphs/` finds `graphs/nn/ln.yaml` as `nn/ln`; a glob's root is the part before
its first wildcard; a file argument's key is its name without the extension. The golden plan of
key K is `BASELINE/K.plan.json`, so a graph may move between YAML and JSON and keep its golden
plan, and the run does not depend on the current directory. Order: arguments in the order given,
files sorted by key within each; a file found twice is checked once.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

GRAPH_SUFFIXES = (".json", ".yaml", ".yml")
PLAN_SUFFIX = ".plan.json"
_MAGIC = ("*", "?", "[")


class DiscoveryError(Exception):
    """A usage problem: a path that does not exist, two graphs with one key, no graphs at all."""


@dataclass(frozen=True)
class GraphFile:
    path: str  # as it reads in reports: relative to the current directory when inside it
    key: str  # names the golden plan: BASELINE/<key>.plan.json


def display_path(path: str | os.PathLike[str]) -> str:
    """`path` relative to the current directory when it is inside it, else absolute; `/` separators."""
    p = Path(os.path.abspath(path))
    try:
        rel = p.relative_to(Path.cwd())
    except ValueError:
        return p.as_posix()
    return rel.as_posix()


def _strip_suffix(rel: str) -> str:
    for suffix in GRAPH_SUFFIXES:
        if rel.lower().endswith(suffix):
            return rel[: -len(suffix)]
    return rel


def _has_magic(arg: str) -> bool:
    return any(c in arg for c in _MAGIC)


def _glob_root(pattern: str) -> str:
    """The directory part of a glob before its first wildcard (`graphs/**/*.yaml` -> `graphs`)."""
    parts = PurePosixPath(pattern.replace(os.sep, "/")).parts
    fixed: list[str] = []
    for part in parts[:-1]:
        if _has_magic(part):
            break
        fixed.append(part)
    return os.path.join(*fixed) if fixed else "."


def _is_candidate(name: str) -> bool:
    low = name.lower()
    return low.endswith(GRAPH_SUFFIXES) and not low.endswith(PLAN_SUFFIX) and not name.startswith(".")


def _walk(root: str, skip: Sequence[Path]) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(os.path.abspath(dirpath))
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and not any(_inside(here / d, s) for s in skip)
        )
        found.extend(os.path.join(dirpath, f) for f in sorted(filenames) if _is_candidate(f))
    return found


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _key(path: str, root: str) -> str:
    rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()
    if rel.startswith("../"):  # a glob like `a/*/../b.yaml`: a key must stay inside the baseline folder
        rel = os.path.basename(path)
    return _strip_suffix(rel)


def discover(
    args: Sequence[str],
    *,
    exclude: Sequence[str] = (),
    skip_dirs: Sequence[str] = (),
    unique_keys: bool = False,
) -> tuple[list[GraphFile], list[str]]:
    """The graph files the arguments name, and warnings (a directory or glob that found nothing).

    `exclude` holds fnmatch patterns matched against a file's key-with-extension and its name;
    `skip_dirs` are folders never searched (the baseline folder). With `unique_keys`, two files
    with the same key are an error (they would share a golden plan). Raises DiscoveryError.
    """
    skip = [Path(os.path.abspath(d)) for d in skip_dirs]
    out: list[GraphFile] = []
    seen: dict[str, GraphFile] = {}
    warnings: list[str] = []
    for arg in args:
        if os.path.isdir(arg):
            root, paths = arg, _walk(arg, skip)
        elif os.path.exists(arg):
            root, paths = os.path.dirname(arg) or ".", [arg]
        elif _has_magic(arg):
            root = _glob_root(arg)
            paths = []
            for m in sorted(glob.glob(arg, recursive=True)):
                if os.path.isdir(m):
                    paths.extend(_walk(m, skip))
                elif not m.lower().endswith(PLAN_SUFFIX) and not any(
                    _inside(Path(os.path.abspath(m)), s) for s in skip
                ):
                    paths.append(m)
        else:
            raise DiscoveryError(f"{arg}: no such file or directory")
        found = []
        for p in paths:
            key = _key(p, root)
            name = os.path.basename(p)
            rel_with_ext = Path(os.path.relpath(os.path.abspath(p), os.path.abspath(root))).as_posix()
            if any(fnmatch.fnmatch(rel_with_ext, x) or fnmatch.fnmatch(name, x) for x in exclude):
                continue
            found.append(GraphFile(display_path(p), key))
        if not found:
            warnings.append(f"{arg}: no graph files found")
        for gf in sorted(found, key=lambda g: (g.key, g.path)):
            real = os.path.realpath(gf.path)
            if real in seen:
                continue
            seen[real] = gf
            out.append(gf)
    if not out:
        raise DiscoveryError("no graph files found in " + " ".join(args) if args else "no graph files given")
    if unique_keys:
        by_key: dict[str, GraphFile] = {}
        for gf in out:
            other = by_key.setdefault(gf.key, gf)
            if other is not gf:
                raise DiscoveryError(
                    f"{other.path} and {gf.path} would share the golden plan {gf.key}{PLAN_SUFFIX}: "
                    "rename one, or check them in separate runs"
                )
    return out, warnings


def golden_path(baseline: str | os.PathLike[str], key: str) -> str:
    return os.path.join(os.fspath(baseline), *key.split("/")) + PLAN_SUFFIX
