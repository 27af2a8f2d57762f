"""docs/inductor.md's six workloads as PyTorch programs, captured into graphs with `fuseopt.capture`.

    captured(name, small=False) -> (graph, program)

The graph is what `fuseopt capture` makes of the program (Inductor's scheduler nodes before
fusion, with the inputs' real layouts: `y` stored transposed, `c` a padded slice, channels-last
images); `program(views)` runs the same function on the graph's input views for the eager and
torch.compile baselines. Capturing needs no data: Inductor traces fake tensors of these shapes.
`benchmarks/workloads.py` has the same six computations written by hand, at any size (tests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F

from fuseopt.ir.graph import Graph

Program = Callable[[Mapping[str, Any]], dict[str, Any]]


def apbt(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    import torch._inductor.test_operators  # noqa: F401  (registers torch.ops._inductor_test.realize)

    realize = torch.ops._inductor_test.realize
    return realize(x * 2) + realize(y * 3)


def tsum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x * 2 + y).sum(-1)


def avgpool_cl(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(F.avg_pool2d(x, 3, stride=1, padding=1))


def layernorm_t(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def softmax_bias_t(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x + bias, dim=-1)


def three_layouts_mean(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    s = torch.sigmoid(a) * b + c
    return s, s.mean(0)


def _t(rows: int, cols: int) -> torch.Tensor:
    """A (rows, cols) view of a (cols, rows) tensor: stored transposed."""
    return torch.empty(cols, rows).t()


def example_inputs(name: str, small: bool = False) -> tuple[torch.Tensor, ...]:
    """Inputs of the sizes in benchmarks/workloads.py (FULL: docs/inductor.md's; SMALL: tiny), so the
    captured graphs and the hand-written ones have the same shapes. Values do not matter to a
    capture."""
    from benchmarks.workloads import FULL, SMALL

    sz = (SMALL if small else FULL)[name]
    if name in ("apbt", "tsum"):
        return torch.empty(sz["rows"], sz["cols"]), _t(sz["rows"], sz["cols"])
    if name == "avgpool_cl":
        shape = (sz["n"], sz["c"], sz["h"], sz["w"])
        return (torch.empty(shape, dtype=torch.bfloat16).to(memory_format=torch.channels_last),)
    if name == "layernorm_t":
        return _t(sz["rows"], sz["cols"]), torch.empty(sz["cols"]), torch.empty(sz["cols"])
    if name == "softmax_bias_t":
        return _t(sz["rows"], sz["cols"]), torch.empty(sz["cols"])
    if name == "three_layouts_mean":
        r, c, pad = sz["rows"], sz["cols"], sz.get("pad", 64)
        return torch.empty(r, c), _t(r, c), torch.empty(r, c + pad)[:, :c]
    raise KeyError(name)


PROGRAMS: dict[str, Callable[..., Any]] = {
    "apbt": apbt,
    "tsum": tsum,
    "avgpool_cl": avgpool_cl,
    "layernorm_t": layernorm_t,
    "softmax_bias_t": softmax_bias_t,
    "three_layouts_mean": three_layouts_mean,
}


def captured(name: str, small: bool = False) -> tuple[Graph, Program]:
    import fuseopt

    fn = PROGRAMS[name]
    graph = fuseopt.capture(fn, *example_inputs(name, small))
    inputs = [b.name for b in graph.inputs]
    outputs = [b.name for b in graph.outputs]

    def program(views: Mapping[str, Any]) -> dict[str, Any]:
        result = fn(*(views[n] for n in inputs))
        flat = (result,) if isinstance(result, torch.Tensor) else tuple(result)
        return dict(zip(outputs, flat, strict=True))

    return graph, program
