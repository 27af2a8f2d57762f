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


class RenderedProgram:
    """The graph itself as a torch program, for graphs that record no source: every node run by
    the reference interpreter's vectorised torch ops (index arithmetic, gathers, `index_put_`) on
    the inputs' device, one chunk per node. Eager runs it as written. For torch.compile it is
    first traced to a straight-line graph of aten ops (`make_fx` on the benchmark's inputs), so
    that Dynamo does not have to follow the interpreter's Python (it would graph-break on it)."""

    def __init__(self, graph: Graph):
        self.graph = graph

    def __call__(self, views: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        from fuseopt.interp import logical_view, run_graph

        g = self.graph
        # as_strided's offset is absolute: the whole flat storage behind each input view
        storages = {b.name: torch.as_strided(views[b.name], (b.storage_size,), (1,), 0) for b in g.inputs}
        out = run_graph(g, storages, chunk_elems=1 << 62)
        return {b.name: logical_view(g, b.name, out[b.name]) for b in g.outputs}

    def compiled(self, views: Mapping[str, torch.Tensor]) -> Any:
        from torch.fx.experimental.proxy_tensor import make_fx

        return torch.compile(make_fx(self)(dict(views)))


def rendered_program(graph: Graph) -> RenderedProgram:
    return RenderedProgram(graph)
