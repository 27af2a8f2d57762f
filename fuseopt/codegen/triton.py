"""Triton emission entry points: a Plan for a Graph -> one standalone Python module.

The module (torch + triton only) holds one `@triton.jit` kernel per planned compute kernel, named
after what it computes (`triton_poi_fused_mul_add_0`, `triton_per_fused_sum_1`, `triton_red_...`),
and `call(inputs) -> outputs` over flat storages. The same graph and plan give byte-identical text.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from fuseopt.codegen.tiling import CodegenOptions
from fuseopt.codegen.wrapper import build_module
from fuseopt.ir.graph import Graph
from fuseopt.plan import Plan

MODULE_FILE = "kernels.py"


def emit_module(
    graph: Graph, plan: Plan, *, autotune: bool = False, options: CodegenOptions | None = None
) -> str:
    """The generated module's source. `autotune=True` emits `triton.autotune` configs per kernel.

    Raises `CodegenError` when the plan breaks the planner contract (see
    `fuseopt.codegen.schedule`) or an op has no Triton rule.
    """
    opts = options or CodegenOptions()
    if autotune != opts.autotune and autotune:
        opts = dataclasses.replace(opts, autotune=True)
    return build_module(graph, plan, opts)


def write_module(
    graph: Graph,
    plan: Plan,
    out_dir: str | Path,
    *,
    autotune: bool = False,
    options: CodegenOptions | None = None,
) -> Path:
    """Write `out_dir/kernels.py` (creating the directory) and return its path."""
    text = emit_module(graph, plan, autotune=autotune, options=options)  # before touching the disk
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / MODULE_FILE
    tmp = out / f".{MODULE_FILE}.{os.getpid()}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader sees the old module or the whole new one
    return path
