"""The `triton` backend of `fuseopt run`: plan the graph, emit Triton, run it.

The plan comes from the pass pipeline (`fuseopt.passes.pipeline.optimize`); the module runs on the
GPU when there is one, else on the CPU under TRITON_INTERPRET=1 (slow: small graphs only).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import torch

from fuseopt.errors import NoGPUError
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.runtime.module import run_module


def triton_backend(
    graph: Graph, inputs: Mapping[str, torch.Tensor], options: Options | None = None, *, poison: bool = False
) -> dict[str, torch.Tensor]:
    """Flat storages of the graph's outputs, computed by generated Triton kernels (on the CPU)."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif os.environ.get("TRITON_INTERPRET") == "1":
        device = torch.device("cpu")
    else:
        raise NoGPUError(
            "the triton backend needs a CUDA GPU; on a CPU, set TRITON_INTERPRET=1 to run the kernels "
            "in Triton's interpreter (slow: small graphs only)"
        )
    stage = optimize(graph, options if options is not None else Options())
    source = emit_module(stage.graph, stage.plan)
    out = run_module(source, {k: v.to(device) for k, v in inputs.items()}, poison=poison)
    return {k: v.cpu() for k, v in out.items()}
