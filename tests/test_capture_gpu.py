"""On a GPU machine: the CPU capture under GPU emulation against a capture of the same program on CUDA.

Skipped without CUDA (the development machine). On the GPU machine each docs/cases.md program, docs/inductor.md
workload and real model block is captured twice -- CUDA tensors with Inductor's own GPU path, and CPU
tensors with `gpu_emulation()` -- and the graphs (buffers, nodes) and Inductor's kernels compared.
Where Inductor's *lowering* differs by device (docs/capture.md lists how), the difference is expected
and named in KNOWN_LOWERING_DIFFERENCES; everything else must be identical. With
FUSEOPT_CAPTURE_REPORT=path, every comparison is also written there as JSON.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree

from fuseopt.capture import capture_program
from fuseopt.capture.specs import make_inputs, parse_spec
from fuseopt.interp import run_graph
from fuseopt.ir.graph import Graph
from fuseopt.ir.serialize import graph_to_dict

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# program -> what differs between Inductor's CPU and GPU lowering there (docs/capture.md).
KNOWN_LOWERING_DIFFERENCES: dict[str, str] = {}

_REPORT: dict[str, Any] = {}


def _to_cuda(t: Any) -> Any:
    """The same tensor on the GPU, with the same sizes, strides and storage offset."""
    if not isinstance(t, torch.Tensor):
        return t
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))
    return torch.as_strided(flat.cuda(), t.shape, t.stride(), t.storage_offset())


def _comparable(g: Graph) -> dict[str, Any]:
    d = graph_to_dict(g)
    return {"buffers": d["buffers"], "nodes": d["nodes"], "kernels": d["meta"]["inductor"]["kernels"]}


def _load_programs(module_name: str) -> ModuleType:
    from tests.test_capture_models import CAPTURED

    spec = importlib.util.spec_from_file_location(module_name, CAPTURED / "programs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _programs() -> dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]]:
    """name -> (function on CPU tensors, the same on CUDA tensors and parameters, CPU inputs)."""
    from tests.test_capture import PROGRAMS

    out = {name: (fn, fn, args) for name, (fn, args) in PROGRAMS.items()}
    cpu, gpu = _load_programs("captured_programs_cpu"), _load_programs("captured_programs_gpu")
    for value in vars(gpu).values():
        if isinstance(value, torch.nn.Module):
            value.cuda()
    for name, (texts, layouts) in cpu.CAPTURES.items():
        inputs = make_inputs([parse_spec(t, lay) for t, lay in zip(texts, layouts, strict=True)], seed=0)
        out[name] = (getattr(cpu, name), getattr(gpu, name), tuple(inputs))
    return out


PROGRAMS = _programs() if torch.cuda.is_available() else {}


@pytest.fixture(scope="module", autouse=True)
def report() -> Any:
    yield
    path = os.environ.get("FUSEOPT_CAPTURE_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(_REPORT, f, indent=1, sort_keys=True)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emulated_capture_equals_the_gpu_capture(name: str) -> None:
    fn, fn_cuda, args = PROGRAMS[name]
    entry: dict[str, Any] = {}
    _REPORT[name] = entry
    try:
        gpu = capture_program(fn_cuda, *[_to_cuda(a) for a in args], emulate_gpu=False)
    except Exception as exc:
        entry["gpu_error"] = str(exc)
        raise
    emu = capture_program(fn, *args)
    a, b = _comparable(gpu.graph), _comparable(emu.graph)
    entry.update(
        same=a == b,
        gpu_kernels=a["kernels"],
        emulated_kernels=b["kernels"],
        gpu_bytes=gpu.graph.meta["inductor"]["num_bytes_accessed"],
        emulated_bytes=emu.graph.meta["inductor"]["num_bytes_accessed"],
        emulation_missing=emu.emulation.missing if emu.emulation else None,
    )
    if a != b:
        entry["gpu"], entry["emulated"] = a, b
    # The GPU capture is itself a correct graph of the program.
    got = gpu.program_outputs(run_graph(gpu.graph, gpu.input_storages()))
    want = emu.program_outputs(run_graph(emu.graph, emu.input_storages()))
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)
    if name in KNOWN_LOWERING_DIFFERENCES:
        pytest.xfail(KNOWN_LOWERING_DIFFERENCES[name])
    assert a == b


def test_max_autotune_templates_become_template_nodes() -> None:
    """With max_autotune and Triton templates only, the matmul of jit_aot is a template node."""
    fn, _, args = PROGRAMS["jit_aot"]
    config = {"max_autotune": True, "max_autotune_gemm_backends": "TRITON", "max_fusion_size": 2}
    cap = capture_program(fn, *[_to_cuda(a) for a in args], emulate_gpu=False, inductor_config=config)
    kinds = {n.name: n.kind for n in cap.graph.nodes}
    _REPORT["jit_aot_max_autotune"] = {"kinds": kinds, "kernels": cap.graph.meta["inductor"]["kernels"],
                                       "graph": graph_to_dict(cap.graph)["nodes"]}  # fmt: skip
    assert "template" in kinds.values()
    assert max(len(k) for k in cap.graph.meta["inductor"]["kernels"]) <= 2
    got = cap.program_outputs(run_graph(cap.graph, cap.input_storages()))
    want = [t if isinstance(t, torch.Tensor) else torch.tensor(t) for t in pytree.tree_leaves(fn(*args))]
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-3)
