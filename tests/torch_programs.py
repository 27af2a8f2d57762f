"""Each sample graph's program written in plain torch: the expected outputs, computed from the same
input storages the interpreter gets (as the logical views of the graph's input buffers).

`PROGRAMS` maps a graph name to a function from input views to output tensors, keyed by output
buffer name. Two graphs may share a program (a sample and its small form). `make_graph` builds the
small hand-written graphs of the interpreter's unit tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F

from fuseopt.interp import logical_view
from fuseopt.interp.ops import TORCH_DTYPE
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph

Tensor = torch.Tensor
Views = Mapping[str, Tensor]
Program = Callable[[Views], dict[str, Tensor]]

PROGRAMS: dict[str, Program] = {}


def program(*names: str) -> Callable[[Program], Program]:
    def register(fn: Program) -> Program:
        for name in names:
            assert name not in PROGRAMS, name
            PROGRAMS[name] = fn
        return fn

    return register


def expected_outputs(graph: Graph, storages: Mapping[str, Tensor]) -> dict[str, Tensor]:
    views = {b.name: logical_view(graph, b.name, storages[b.name]) for b in graph.inputs}
    return PROGRAMS[graph.name](views)


def make_graph(buffers: dict[str, dict[str, Any]], nodes: list[dict[str, Any]], name: str = "t") -> Graph:
    """A validated graph from docs/format.md fields (buffers in the given order)."""
    doc = {"format": "fuseopt-graph/1", "name": name, "buffers": buffers, "nodes": nodes}
    return load_text(json.dumps(doc), f"{name}.json")


def inputs_from(graph: Graph, **values: Tensor) -> dict[str, Tensor]:
    """Input storages from given flat tensors (each converted to its buffer's dtype)."""
    return {k: v.reshape(-1).to(TORCH_DTYPE[graph.buffer(k).dtype]) for k, v in values.items()}


@program("apbt", "apbt_realize")
def _apbt(v: Views) -> dict[str, Tensor]:
    return {"out": v["x"] * 2 + v["y"] * 3}


@program("avgpool_cl", "avgpool_cl_small")
def _avgpool(v: Views) -> dict[str, Tensor]:
    return {"out": torch.relu(F.avg_pool2d(v["x"], 3, stride=1, padding=1))}


@program("layernorm_t")
def _layernorm(v: Views) -> dict[str, Tensor]:
    x = v["x"]
    return {"out": F.layer_norm(x, (x.shape[-1],), v["w"], v["b"], eps=1e-5)}


@program("softmax_bias_t")
def _softmax(v: Views) -> dict[str, Tensor]:
    return {"out": torch.softmax(v["x"] + v["bias"], dim=-1)}


@program("three_layouts_mean")
def _three_layouts(v: Views) -> dict[str, Tensor]:
    s = torch.sigmoid(v["a"]) * v["b"] + v["c"]
    return {"s": s, "mean": s.mean(0)}


@program("jit_aot")
def _jit_aot(v: Views) -> dict[str, Tensor]:
    x = v["x"]
    return {
        "buf0": x + x,
        "buf1": torch.tensor(v["number"].item()),
        "buf2": x * x,
        "buf3": x @ x,
        "buf4": x**2,
    }


@program("extern_mm")
def _extern_mm(v: Views) -> dict[str, Tensor]:
    return {"out": torch.relu(v["a"] @ v["b"] + v["bias"])}


@program("sum_and_t")
def _sum_and_t(v: Views) -> dict[str, Tensor]:
    x = v["x"]
    return {"buf0": x.sum(-1), "buf1": x.t().contiguous()}


@program("pw_outer_red")
def _pw_outer_red(v: Views) -> dict[str, Tensor]:
    return {"out": (v["x"] + 1).sum([0, 1])}


@program("pw_outer_red_2")
def _pw_outer_red_2(v: Views) -> dict[str, Tensor]:
    return {"out": (((v["x"] + 1) - 2) * 3).sum([0, 1])}


@program("view")
def _view(v: Views) -> dict[str, Tensor]:
    x = v["x"]
    return {"buf0": x.view(10, 10), "buf1": x.sin()}


@program("outer_sum_plus_pw")
def _outer_sum_plus_pw(v: Views) -> dict[str, Tensor]:
    x = v["x"]
    return {"out": x.sum(0, keepdim=True) + x}


@program("rms_reshape")
def _rms_reshape(v: Views) -> dict[str, Tensor]:
    x = v["x"]
    g = x.reshape(-1, 128).float()
    y = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + 1e-5)
    return {"out": y.reshape(x.shape).to(torch.bfloat16)}


@program("floordiv_broadcast")
def _floordiv_broadcast(v: Views) -> dict[str, Tensor]:
    x = v["x"]
    g = x.unflatten(-1, (x.shape[-1] // 32, 32))
    s = g.abs().amax(-1).clamp(min=1e-6)
    return {"out": (g / s.unsqueeze(-1)).flatten(-2)}


@program("cast_and_t")
def _cast_and_t(v: Views) -> dict[str, Tensor]:
    y = (v["x"] * v["s"]).clamp(-448, 448).to(torch.float16)
    return {"y": y, "yt": y.t().contiguous().t()}
