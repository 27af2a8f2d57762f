"""The torch programs behind a graph's eager and torch.compile baselines.

A graph file never makes fuseopt import or run code: `meta.source` (where `fuseopt capture` found
the program) is descriptive data only. The source program is rebuilt only from the command line
(`fuseopt bench --source FILE.py:FUNCTION`, `program_from_source`: called with its own arguments,
on its own weights, which the graph's weight buffers then hold too, `fuseopt.bench.model`);
otherwise the baseline is the graph's own rendering as torch ops (`RenderedProgram`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import torch

from fuseopt.bench.model import bind_program, is_captured
from fuseopt.capture.program import load_function, split_target
from fuseopt.ir.graph import Graph


def describe_source(target: str) -> str:
    """What `program_from_source(target, ...)` will import, checked but not imported: the file's
    absolute path and the function. Raises a usage error (exit 2) for a malformed target or a
    missing file."""
    path, function = split_target(target)
    return f"{os.path.abspath(path)}:{function}"


def program_from_source(target: str, graph: Graph) -> Callable[[Mapping[str, torch.Tensor]], Any]:
    """Import FILE.py of `FILE.py:FUNCTION` (this runs that file's code) and return FUNCTION as the
    graph's program. FUNCTION may be any callable (a function, an `nn.Module` instance).

    A captured graph (`meta.source` lists the program's input specs) is bound to it
    (`fuseopt.bench.model.bind_program`): called with its own arguments, on its own weights, which
    the graph's weight buffers then hold too. Any other graph's inputs are the program's arguments,
    in buffer order, and its tensor results are the outputs in buffer order."""
    fn = load_function(target)
    if is_captured(graph):
        return bind_program(graph, fn)
    names = [b.name for b in graph.inputs]
    outputs = [b.name for b in graph.outputs]

    def program(views: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        result = fn(*(views[n] for n in names))
        if isinstance(result, torch.Tensor):
            result = (result,)
        flat = [r for r in result if isinstance(r, torch.Tensor)]
        return dict(zip(outputs, flat, strict=False))

    return program


def recorded_source(graph: Graph) -> str | None:
    """`meta.source` as `FILE:FUNCTION` text, for saying what --source could be (never imported)."""
    src = graph.meta.get("source")
    if not isinstance(src, Mapping):
        return None
    file, function = src.get("file"), src.get("function")
    if not isinstance(file, str) or not isinstance(function, str):
        return None
    return f"{file}:{function}"


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
