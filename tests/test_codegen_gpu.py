"""On a CUDA GPU only: every sample at full size, unfused and as the planner fuses it, with fixed
and with autotuned launch parameters, checked against the interpreter (outputs poisoned first).

Run on the GPU machine with `python3 -m pytest tests/test_codegen_gpu.py`; skipped elsewhere.
"""

from __future__ import annotations

import glob
import os

import pytest
import torch

from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.plan import Kernel, Plan
from fuseopt.runtime import compare_with_reference

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = sorted(glob.glob(os.path.join(ROOT, "samples", "*.yaml"))) + sorted(
    glob.glob(os.path.join(ROOT, "samples", "cases", "*.yaml"))
)


def _name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _unfused(g: Graph) -> Plan:
    return Plan(
        g.name, "", tuple(Kernel(f"k{i}", (n.name,), n.kind, (), (), 0) for i, n in enumerate(g.nodes))
    )


@pytest.mark.parametrize("mode", ["unfused", "fused", "fused-autotune"])
@pytest.mark.parametrize("path", PATHS, ids=[_name(p) for p in PATHS])
def test_sample_on_gpu(path: str, mode: str) -> None:
    g = load_graph(path)
    if mode == "unfused":
        compare_with_reference(g, _unfused(g))
        return
    pipeline = pytest.importorskip("fuseopt.passes.pipeline")
    stage = pipeline.optimize(g)
    compare_with_reference(stage.graph, stage.plan, autotune=mode.endswith("autotune"))
