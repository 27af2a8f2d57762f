"""IR graph -> docs/format.md document (dict, JSON or YAML text), and the graph's content hash.

`load_text(dump_json(g)) == g` for every valid graph; passes that rewrite graphs (reduce, loop
order) use this to write files people can re-run. A non-finite float argument of a library call
is written as the string "inf", "-inf" or "nan" (JSON has no literal for them), which the binder
reads back as that float where the operator's schema takes a float or a Scalar.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import yaml

from fuseopt.ir.expr import to_text
from fuseopt.ir.graph import BufferInfo, ComputeNode, EnumArg, Graph, LibraryNode, Node, View
from fuseopt.ir.models import FORMAT_ID


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    acc = 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def buffer_to_dict(b: BufferInfo) -> dict[str, Any]:
    d: dict[str, Any] = {"shape": list(b.shape)}
    if b.stride != _contiguous(b.shape):
        d["stride"] = list(b.stride)
    if b.offset:
        d["offset"] = b.offset
    d["dtype"] = b.dtype.value
    if b.role != "intermediate":
        d["role"] = b.role
    return d


def _call_value(a: Any, buffers: dict[str, BufferInfo] | None) -> Any:
    """A bound argument of an extension-1.1 call as the format writes it."""
    if isinstance(a, View):
        b = None if buffers is None else buffers.get(a.buffer)
        if b is not None and View.of(b) == a:
            return {"buffer": a.buffer}
        return {"buffer": a.buffer, "shape": list(a.shape), "stride": list(a.stride), "offset": a.offset}
    if isinstance(a, EnumArg):
        return a.name
    if isinstance(a, tuple):
        return [_call_value(x, buffers) for x in a]
    if isinstance(a, float) and not math.isfinite(a):
        return nonfinite_text(a)
    return a


def nonfinite_text(x: float) -> str:
    """How the format writes a non-finite float argument ("inf", "-inf", "nan"): JSON has no literal
    for them, and one spelling for JSON and YAML keeps the content hash format-independent."""
    if math.isnan(x):
        return "nan"
    return "inf" if x > 0 else "-inf"


def node_to_dict(n: Node, buffers: dict[str, BufferInfo] | None = None) -> dict[str, Any]:
    if isinstance(n, LibraryNode) and n.call is not None:
        c = n.call
        d: dict[str, Any] = {"name": n.name, "kind": n.kind, "op": n.op}
        d["args"] = [_call_value(x, buffers) for x in c.args]
        if c.kwargs:
            d["kwargs"] = {k: _call_value(v, buffers) for k, v in c.kwargs}
        outs = [None if v is None else _call_value(v, buffers) for v in c.outputs]
        d["outputs"] = [o["buffer"] if isinstance(o, dict) and len(o) == 1 else o for o in outs]
        return d
    if isinstance(n, LibraryNode):
        d = {
            "name": n.name,
            "kind": n.kind,
            "op": n.op,
            "inputs": list(n.inputs),
            "output": n.output,
        }
        if n.kind == "template":
            d["choices"] = [{"name": c, "time_us": t} for c, t in n.choices]
            if n.epilogue_fusion:
                d["epilogue_fusion"] = True
        return d
    assert isinstance(n, ComputeNode)
    d = {"name": n.name, "kind": n.kind, "loops": [[lv.name, lv.size] for lv in n.loops]}
    if n.reduce:
        d["reduce"] = [[lv.name, lv.size] for lv in n.reduce]
    d["store"] = to_text(n.store)
    d["value"] = to_text(n.value)
    return d


def graph_to_dict(g: Graph) -> dict[str, Any]:
    d: dict[str, Any] = {"format": FORMAT_ID, "name": g.name}
    if g.description is not None:
        d["description"] = g.description
    d["buffers"] = {b.name: buffer_to_dict(b) for b in g.buffers}
    bufmap = {b.name: b for b in g.buffers}
    d["nodes"] = [node_to_dict(n, bufmap) for n in g.nodes]
    if g.meta:
        d["meta"] = _plain(g.meta)
    return d


def _plain(x: Any) -> Any:
    if isinstance(x, dict) or hasattr(x, "items"):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def dump_json(g: Graph) -> str:
    return json.dumps(graph_to_dict(g), indent=2, ensure_ascii=False) + "\n"


def dump_yaml(g: Graph) -> str:
    return yaml.safe_dump(
        graph_to_dict(g), sort_keys=False, default_flow_style=None, width=120, allow_unicode=True
    )


def graph_sha256(g: Graph) -> str:
    """Hash of the graph's content (canonical JSON, order of buffers and nodes kept): the same graph
    gives the same hash whether it was written as JSON or YAML, spaced or not."""
    canon = json.dumps(graph_to_dict(g), separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canon.encode()).hexdigest()
