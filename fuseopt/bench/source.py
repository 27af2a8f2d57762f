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
        return self._outputs(self.run(self._storages(views)))

    def run(self, storages: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Flat input storages -> flat output storages."""
        from fuseopt.interp import run_graph

        out = run_graph(self.graph, storages, chunk_elems=1 << 62)
        return {b.name: out[b.name] for b in self.graph.outputs}

    def compiled(self, views: Mapping[str, torch.Tensor], backend: str = "inductor") -> Any:
        """torch.compile of the storages -> storages function, traced first; the views are taken
        apart and put back outside it (compiled code must not see `as_strided` of an input view:
        its storage offset is lost there)."""
        from torch.fx.experimental.proxy_tensor import make_fx

        fn = torch.compile(make_fx(lambda st: self.run(st))(self._storages(views)), backend=backend)
        return lambda v: self._outputs(fn(self._storages(v)))

    def _storages(self, views: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        # as_strided's offset is absolute: the whole flat storage behind each input view
        return {
            b.name: torch.as_strided(views[b.name], (b.storage_size,), (1,), 0) for b in self.graph.inputs
        }

    def _outputs(self, storages: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        from fuseopt.interp import logical_view

        return {b.name: logical_view(self.graph, b.name, storages[b.name]) for b in self.graph.outputs}


def rendered_program(graph: Graph) -> RenderedProgram:
    return RenderedProgram(graph)
