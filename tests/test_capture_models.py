"""The real model blocks of samples/captured/programs.py: captured, equal to torch, committed as is.

Each block is captured once per module. The committed graph must be what a fresh capture writes
(same torch version), so a change to the converter or the programs shows up as a diff to review and
regenerate with `python samples/captured/programs.py`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

from fuseopt.capture import Capture, capture_program
from fuseopt.capture.specs import make_inputs, parse_spec
from fuseopt.interp import run_graph
from fuseopt.io.load import load_graph
from fuseopt.ir.expr import Masked, walk
from fuseopt.ir.graph import ComputeNode
from fuseopt.ir.serialize import dump_json
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize

ROOT = Path(__file__).resolve().parent.parent
CAPTURED = ROOT / "samples" / "captured"
NAMES = ("mlp_block", "attention_block", "inception_block", "rmsnorm_rope")


@pytest.fixture(scope="module")
def programs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("captured_programs", CAPTURED / "programs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.CAPTURES) == set(NAMES)
    return module


@pytest.fixture(scope="module")
def captured(programs: ModuleType) -> Iterator[Callable[[str], tuple[Capture, list[torch.Tensor]]]]:
    cache: dict[str, tuple[Capture, list[torch.Tensor]]] = {}

    def get(name: str) -> tuple[Capture, list[torch.Tensor]]:
        if name not in cache:
            texts, layouts = programs.CAPTURES[name]
            inputs = make_inputs([parse_spec(t, lay) for t, lay in zip(texts, layouts, strict=True)], seed=0)
            source = {
                "file": "samples/captured/programs.py",
                "function": name,
                "inputs": texts,
                "layouts": layouts,
                "seed": 0,
            }
            fn = getattr(programs, name)
            cap = capture_program(fn, *inputs, source=source)
            with torch.no_grad():
                cache[name] = (cap, [fn(*inputs)])
        return cache[name]

    yield get


@pytest.mark.parametrize("name", NAMES)
def test_block_equals_torch(captured: Callable[[str], tuple[Capture, list[torch.Tensor]]], name: str) -> None:
    cap, want = captured(name)
    got = cap.program_outputs(run_graph(cap.graph, cap.input_storages()))
    assert len(got) == len(want) == 1
    torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_committed_graph_is_a_fresh_capture(
    captured: Callable[[str], tuple[Capture, list[torch.Tensor]]], name: str
) -> None:
    cap, _ = captured(name)
    committed = load_graph(CAPTURED / f"{name}.json")
    if committed.meta["capture"]["torch"] != cap.graph.meta["capture"]["torch"]:
        pytest.skip("committed with another torch version")
    assert (CAPTURED / f"{name}.json").read_text() == dump_json(cap.graph), (
        "regenerate with: python samples/captured/programs.py"
    )


@pytest.mark.parametrize("name", NAMES)
def test_fuseopt_matches_inductor_on_the_blocks(name: str) -> None:
    g = load_graph(CAPTURED / f"{name}.json")
    ind = g.meta["inductor"]
    m = optimize(g, Options()).plan.metrics
    assert m["kernels"] <= ind["kernel_count"]
    assert m["bytes"] <= ind["num_bytes_accessed"]


def test_blocks_use_what_the_issue_asks_for() -> None:
    graphs = {n: load_graph(CAPTURED / f"{n}.json") for n in NAMES}
    ops = {n: sorted({getattr(node, "op", node.kind) for node in g.nodes}) for n, g in graphs.items()}
    # layer norm, two linears (mm + the bias added in the pointwise epilogue, as on a GPU), gelu
    assert ops["mlp_block"] == ["mm", "pointwise", "reduction"]
    assert {"bmm", "mm", "addmm", "reduction"} <= set(ops["attention_block"])  # matmuls are externs
    cl = graphs["inception_block"]
    assert cl.meta["source"]["layouts"] == ["channels_last"]
    assert "dropped_nodes" in cl.meta["capture"]  # the concatenation
    assert any(isinstance(e, Masked) for n in cl.nodes if isinstance(n, ComputeNode) for e in walk(n.value))
    rope = graphs["rmsnorm_rope"]
    assert any(node.kind == "reduction" for node in rope.nodes)
