"""The torch program behind a graph, for eager and torch.compile baselines.

A captured graph records where it came from in `meta.source` (file, function); the function is
called with the graph's input views in buffer order. Loading that file runs the user's own code,
as `fuseopt capture` did when it made the graph.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import Any

import torch

from fuseopt.errors import InputError
from fuseopt.ir.graph import Graph


def program_from_meta(graph: Graph, graph_file: str = "") -> Any | None:
    src = graph.meta.get("source")
    if not isinstance(src, Mapping):
        return None
    file, function = src.get("file"), src.get("function")
    if not isinstance(file, str) or not isinstance(function, str):
        return None
    path = file if os.path.isabs(file) else os.path.join(os.path.dirname(os.path.abspath(graph_file)), file)
    if not os.path.exists(path):
        path = file
    if not os.path.exists(path):
        raise InputError(f"meta.source.file {file!r} not found (graph {graph.name})")
    spec = importlib.util.spec_from_file_location(f"fuseopt_bench_source_{graph.name}", path)
    if spec is None or spec.loader is None:
        raise InputError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if fn is None:
        raise InputError(f"{path} has no function {function!r}")
    names = [b.name for b in graph.inputs]
    outputs = [b.name for b in graph.outputs]

    def program(views: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        result = fn(*(views[n] for n in names))
        if isinstance(result, torch.Tensor):
            result = (result,)
        flat = [r for r in result if isinstance(r, torch.Tensor)]
        return dict(zip(outputs, flat, strict=False))

    return program
