"""Reading graph files safely: size and depth caps, YAML without aliases, duplicate keys rejected.

`load_graph(path)` is the one entry point: text -> plain data -> pydantic models -> validated IR.
Every failure is an `InputError` naming the file and a JSON pointer (and, where known, line:col).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from fuseopt.errors import Diagnostic, InputError
from fuseopt.io.locate import locate_pointer
from fuseopt.ir import models
from fuseopt.ir.build import build_graph
from fuseopt.ir.graph import Graph

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64

_YAMLBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_YAMLBase):  # type: ignore[misc, valid-type]
    """Safe YAML: no aliases (each node is constructed at most once), no duplicate keys."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        if node in self.constructed_objects or node in self.recursive_objects:
            raise yaml.constructor.ConstructorError(
                None, None, "YAML anchors/aliases are not allowed in graph files", node.start_mark
            )
        return super().construct_object(node, deep=True)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(
                    None, None, "mapping keys must be scalars", key_node.start_mark
                )
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=True)


def _no_dup_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _depth_ok(data: Any) -> int:
    """Maximum nesting depth, computed iteratively (input may be adversarially deep)."""
    worst = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        obj, d = stack.pop()
        if isinstance(obj, dict | list):
            worst = max(worst, d)
            if d > MAX_DEPTH:
                return d
            stack.extend((v, d + 1) for v in (obj.values() if isinstance(obj, dict) else obj))
    return worst


def is_yaml_path(path: str) -> bool:
    return path.lower().endswith((".yaml", ".yml"))


def parse_text(text: str, file: str) -> Any:
    """Text -> plain data (dict/list/str/int/float/bool/None)."""
    as_yaml = is_yaml_path(file) or not text.lstrip().startswith(("{", "["))
    try:
        if as_yaml:
            loader = _StrictLoader(text)
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
        else:
            data = json.loads(text, object_pairs_hook=_no_dup_pairs)
    except RecursionError:
        raise InputError(
            [Diagnostic(f"document nests deeper than {MAX_DEPTH} levels", "", file, code="limit")]
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        line = mark.line + 1 if mark is not None else None
        col = mark.column + 1 if mark is not None else None
        raise InputError(
            [Diagnostic(f"YAML: {msg}", "", file, code="syntax", line=line, column=col)]
        ) from None
    except yaml.YAMLError as exc:
        raise InputError([Diagnostic(f"YAML: {exc}", "", file, code="syntax")]) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            [Diagnostic(f"JSON: {exc.msg}", "", file, code="syntax", line=exc.lineno, column=exc.colno)]
        ) from None
    except ValueError as exc:  # duplicate keys from _no_dup_pairs
        raise InputError([Diagnostic(f"JSON: {exc}", "", file, code="syntax")]) from None
    depth = _depth_ok(data)
    if depth > MAX_DEPTH:
        raise InputError(
            [Diagnostic(f"document nests deeper than {MAX_DEPTH} levels", "", file, code="limit")]
        )
    return data


def _pointer(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for i, p in enumerate(loc):
        # Discriminated unions insert the tag (e.g. 'pointwise') after the list index: drop it.
        if i >= 2 and loc[0] == "nodes" and i == 2 and p in ("pointwise", "reduction", "extern", "template"):
            continue
        if isinstance(p, str) and p in ("function-after", "function-before"):
            continue
        parts.append(str(p).replace("~", "~0").replace("/", "~1"))
    return "/" + "/".join(parts) if parts else ""


def validate_data(data: Any, file: str) -> models.Graph:
    if not isinstance(data, dict):
        raise InputError(
            [Diagnostic("a graph file must hold a mapping at the top level", "", file, code="type")]
        )
    try:
        return models.Graph.model_validate(data)
    except ValidationError as exc:
        diags = []
        for err in exc.errors(include_url=False):
            ptr = _pointer(tuple(err["loc"]))
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown field (not part of the format)"
            diags.append(Diagnostic(msg, ptr, file, code=str(err["type"])))
        raise InputError(diags) from None


def load_text(text: str, file: str = "<input>") -> Graph:
    data = parse_text(text, file)
    model = validate_data(data, file)
    return build_graph(model, file)


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Load and validate a graph file (JSON or YAML). Raises InputError with located diagnostics."""
    p = Path(path)
    file = str(path)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(
                [
                    Diagnostic(
                        f"file is {size} bytes; the limit is {MAX_FILE_BYTES} (16 MiB)",
                        "",
                        file,
                        code="limit",
                    )
                ]
            )
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError([Diagnostic(f"cannot read file: {exc.strerror}", "", file, code="io")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            [Diagnostic(f"file is not UTF-8 (byte {exc.start})", "", file, code="encoding")]
        ) from None
    try:
        return load_text(text, file)
    except InputError as err:
        raise InputError([_with_position(d, text, file) for d in err.diagnostics]) from None


def _with_position(d: Diagnostic, text: str, file: str) -> Diagnostic:
    if d.line is not None or not d.pointer:
        return d
    pos = locate_pointer(text, d.pointer, yaml_syntax=is_yaml_path(file) or not text.lstrip().startswith("{"))
    if pos is None:
        return d
    return d.with_location(line=pos[0], column=pos[1])
