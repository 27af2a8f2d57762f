"""The reference run in float64: what decides an element that generated code and the reference
disagree on by more than the tolerance.

A value that cancels (`sqrt(1 - a*a)` with `a` near 1, `exp` of a difference of large numbers, a
recurrent gate of RecurrentGemma on random inputs) magnifies one rounding of its inputs beyond any
fixed tolerance, in the reference as much as in generated code: neither is the exact value. Such
an element is still a match when the generated value is about as close to the float64 run as the
reference is:

    |got - x| <= m * |expected - x| + atol + rtol * |x|      (x: the float64 run's value)

with m = 2, or 3 for 16-bit floats: the multipliers of PyTorch's own accuracy check of
torch.compile (`torch._dynamo.utils.same` with an fp64 reference). That check compares RMS
errors; this one compares each element, so that one wrong element still fails however many
others are right.

The float64 run is the same graph with every float buffer, every cast to a float and every
float dtype a library call names in float64 (`promoted`). Where it cannot run (a library call
with no float64 kernel), nothing is decided by it: the tolerance's verdict stands.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

import torch

from fuseopt.errors import FuseoptError
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Cast, Expr, to_text, transform
from fuseopt.ir.graph import CallArg, EnumArg, Graph, LibraryNode
from fuseopt.ir.parser import parse_expr_text

HALF_MULTIPLIER = 3.0  # float16, bfloat16 (torch._dynamo.utils.same)
MULTIPLIER = 2.0  # float32, float64


def multiplier(dtype: torch.dtype) -> float:
    return HALF_MULTIPLIER if dtype in (torch.float16, torch.bfloat16) else MULTIPLIER


def promoted(graph: Graph) -> Graph:
    """`graph` computed in float64: float buffers, casts to a float, float dtypes of calls."""
    from fuseopt.io.load import load_text
    from fuseopt.ir.serialize import graph_to_dict, node_to_dict

    doc = graph_to_dict(graph)
    doc.pop("meta", None)
    for b in doc["buffers"].values():
        if DType(b["dtype"]).is_float:
            b["dtype"] = DType.float64.value
    buffers = {b.name: b for b in graph.buffers}
    for i, n in enumerate(graph.nodes):
        if isinstance(n, LibraryNode):
            if n.call is not None:
                call = replace(
                    n.call,
                    args=tuple(_wide_arg(a) for a in n.call.args),
                    kwargs=tuple((k, _wide_arg(v)) for k, v in n.call.kwargs),
                )
                doc["nodes"][i] = node_to_dict(replace(n, call=call), buffers)
        else:
            doc["nodes"][i]["value"] = to_text(
                transform(parse_expr_text(doc["nodes"][i]["value"]), _wide_cast)
            )
    return load_text(json.dumps(doc), f"<{graph.name} in float64>")


_FLOATS = frozenset(d.value for d in DType if d.is_float)


def _wide_arg(a: CallArg) -> CallArg:
    if isinstance(a, EnumArg) and a.kind == "dtype" and a.name in _FLOATS:
        return EnumArg("dtype", DType.float64.value)
    if isinstance(a, tuple):
        return tuple(_wide_arg(x) for x in a)
    return a


def _wide_cast(e: Expr) -> Expr | None:
    return Cast(e.x, DType.float64) if isinstance(e, Cast) and e.to.is_float else None


def run_float64(graph: Graph, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor] | None:
    """The float64 run's storages on `inputs` (floats widened exactly), or None where it cannot
    run (a library call without a float64 kernel; the graph past the format's limits in float64)."""
    from fuseopt.interp import run_graph

    wide = {k: v.double() if v.is_floating_point() else v.clone() for k, v in inputs.items()}
    try:
        return run_graph(promoted(graph), wide)
    except (FuseoptError, RuntimeError):
        return None


def as_close_as_the_reference(
    got: torch.Tensor, expected: torch.Tensor, exact: torch.Tensor, rtol: float, atol: float
) -> torch.Tensor:
    """Per element (float64 views): whether `got` is within `multiplier` times the reference's
    own distance from the float64 value, plus the tolerance."""
    m = multiplier(expected.dtype)
    g, e, x = got.double(), expected.double(), exact.double()
    return (g - x).abs() <= m * (e - x).abs() + atol + rtol * x.abs()
