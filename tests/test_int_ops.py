"""Integer semantics, decided once (docs/format.md, Expressions): the reference interpreter computes
what torch computes on the CPU, and generated code computes what the reference does, for every
integer dtype, on the values where the rules bite -- negative operands of `//`, `%` and `fmod`,
INT_MIN by -1, negative exponents, overflow, literals wrapped into a narrow dtype -- and a zero
divisor is a located error of the reference (generated code does not trap)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch

from fuseopt.codegen import emit_module
from fuseopt.interp import InterpError, run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.runtime import compare_with_reference, run_module
from tests.strategies import unfused_plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on wrapping lanes

Tensor = torch.Tensor
DTYPES = {
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
}

# Each expression over a[i0], b[i0] and what torch computes for it on the tensors a, b (literals are
# Python scalars there, as they are weak in the graph language).
OPS: dict[str, tuple[str, Callable[[Tensor, Tensor], Tensor]]] = {
    "floordiv": ("a[i0] // b[i0]", lambda a, b: a // b),
    "mod": ("a[i0] % b[i0]", lambda a, b: a % b),
    "fmod": ("fmod(a[i0], b[i0])", torch.fmod),
    "pow": ("pow(a[i0], b[i0])", torch.pow),
    "mul": ("a[i0] * b[i0]", lambda a, b: a * b),
    "add": ("a[i0] + b[i0]", lambda a, b: a + b),
    "sub": ("a[i0] - b[i0]", lambda a, b: a - b),
    "neg": ("-a[i0]", lambda a, b: -a),
    "abs": ("abs(a[i0])", lambda a, b: torch.abs(a)),
    "sign": ("sign(a[i0])", lambda a, b: torch.sign(a)),
    "max": ("maximum(a[i0], b[i0])", torch.maximum),
    "div3": ("a[i0] // 3", lambda a, b: a // 3),
    "mod3": ("a[i0] % 3", lambda a, b: a % 3),
    "div_m3": ("a[i0] // -3", lambda a, b: a // -3),
    "mod_m3": ("a[i0] % -3", lambda a, b: a % -3),
    "fmod_m3": ("fmod(a[i0], -3)", lambda a, b: torch.fmod(a, -3)),
    "div_m1": ("a[i0] // -1", lambda a, b: a // -1),
    "mod_m1": ("a[i0] % -1", lambda a, b: a % -1),
    "div_255": ("a[i0] // 255", lambda a, b: a // 255),  # -1 as int8: literals wrap
    "mod_255": ("a[i0] % 255", lambda a, b: a % 255),
    "pow3": ("pow(a[i0], 3)", lambda a, b: torch.pow(a, 3)),
    "pow0": ("pow(a[i0], 0)", lambda a, b: torch.pow(a, 0)),
    "minus_one_pow": ("pow(-1, b[i0])", lambda a, b: torch.pow(torch.tensor(-1, dtype=a.dtype), b)),
    "add_300": ("a[i0] + 300", lambda a, b: a + 300),
}
DIVISIONS = ("floordiv", "mod", "fmod")


def _generated(g: Graph, inputs: dict[str, Tensor]) -> dict[str, Tensor]:
    """The generated module's outputs (on the GPU when there is one, else under the interpreter)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out = run_module(emit_module(g, unfused_plan(g)), {k: v.clone().to(device) for k, v in inputs.items()})
    return {k: v.cpu() for k, v in out.items()}


def _edges(dtype: torch.dtype) -> list[int]:
    info = torch.iinfo(dtype)
    return sorted({v for v in (info.min, info.min + 1, -7, -3, -2, -1, 0, 1, 2, 3, 7, info.max - 1, info.max)
                   if info.min <= v <= info.max})  # fmt: skip


def _operands(dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """Every pair of edge values; b never 0 (a zero divisor is an error, tested on its own)."""
    v = _edges(dtype)
    pairs = [(x, y) for x in v for y in v if y != 0]
    a = torch.tensor([p[0] for p in pairs]).to(dtype)
    b = torch.tensor([p[1] for p in pairs]).to(dtype)
    return a, b


def _graph(dtype: str, n: int, exprs: dict[str, str]) -> Graph:
    buffers: dict[str, Any] = {
        "a": {"shape": [n], "dtype": dtype, "role": "input"},
        "b": {"shape": [n], "dtype": dtype, "role": "input"},
    }
    nodes = []
    for name, text in exprs.items():
        buffers[f"out_{name}"] = {"shape": [n], "dtype": dtype, "role": "output"}
        nodes.append({"name": f"n_{name}", "loops": [["i0", n]], "store": f"out_{name}[i0]", "value": text})
    doc = {"format": "fuseopt-graph/1", "name": "int_ops", "buffers": buffers, "nodes": nodes}
    return load_text(json.dumps(doc), "int_ops.json")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_reference_and_generated_code_compute_torchs_integer_ops(dtype: str) -> None:
    a, b = _operands(DTYPES[dtype])
    g = _graph(dtype, a.numel(), {name: text for name, (text, _) in OPS.items()})
    ref = run_graph(g, {"a": a.clone(), "b": b.clone()})
    got = _generated(g, {"a": a, "b": b})
    for name, (text, fn) in OPS.items():
        want = fn(a, b).to(DTYPES[dtype])
        assert torch.equal(ref[f"out_{name}"], want), (
            dtype,
            text,
            _first_difference(a, b, ref[f"out_{name}"], want),
        )
        assert torch.equal(got[f"out_{name}"], want), (
            dtype,
            text,
            _first_difference(a, b, got[f"out_{name}"], want),
        )


def _first_difference(a: Tensor, b: Tensor, got: Tensor, want: Tensor) -> str:
    i = int((got != want).nonzero()[0])
    return f"a={int(a[i])} b={int(b[i])}: got {int(got[i])}, torch {int(want[i])}"


def test_negative_exponents_give_zero_except_for_plus_and_minus_one() -> None:
    a = torch.tensor([-3, -2, -1, -1, 0, 1, 2, 5], dtype=torch.int32)
    b = torch.tensor([-1, -2, -1, -2, -3, -5, -1, -7], dtype=torch.int32)
    g = _graph("int32", a.numel(), {"p": "pow(a[i0], b[i0])"})
    want = [0, 0, -1, 1, 0, 1, 0, 0]
    assert torch.pow(a, b).tolist() == want
    assert run_graph(g, {"a": a, "b": b})["out_p"].tolist() == want
    assert _generated(g, {"a": a, "b": b})["out_p"].tolist() == want


@pytest.mark.parametrize("op", DIVISIONS)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64"])
def test_a_zero_divisor_at_run_time_is_a_located_error_of_the_reference(op: str, dtype: str) -> None:
    text = OPS[op][0]
    a = torch.tensor([7, 5, 3, 1]).to(DTYPES[dtype])
    b = torch.tensor([2, 1, 0, 3]).to(DTYPES[dtype])
    g = _graph(dtype, 4, {"q": text})
    with pytest.raises(
        InterpError, match=r"node 'n_q': integer division by zero in .* at the point \(i0=2\)"
    ) as info:
        run_graph(g, {"a": a, "b": b})
    assert info.value.diagnostics[0].pointer == "/nodes/0/value"
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        OPS[op][1](a, b)  # torch raises too
    # Generated code does not trap: the lane divides by 1 (unspecified, documented), others are exact.
    got = _generated(g, {"a": a, "b": b})["out_q"]
    ok = b != 0
    assert torch.equal(got[ok], OPS[op][1](a[ok], b[ok]))


def test_compare_with_reference_reports_the_reference_error_first() -> None:
    """A graph whose divisor is 0 at run time: the check stops at the reference's located error
    instead of comparing against generated code's unspecified quotient."""
    g = _graph("int32", 4, {"q": "a[i0] // (b[i0] - b[i0])"})
    with pytest.raises(InterpError, match="integer division by zero"):
        compare_with_reference(g, unfused_plan(g))


def test_masked_lanes_never_divide() -> None:
    """Only where the condition holds does the body's divisor count, in the reference and in
    generated code."""
    a = torch.tensor([7, -7, 9, -9, 5], dtype=torch.int16)
    b = torch.tensor([2, 0, -4, 0, 3], dtype=torch.int16)
    for op in DIVISIONS:
        text = f"masked(b[i0] != 0, {OPS[op][0]}, -1)"
        g = _graph("int16", 5, {"q": text})
        want = [int(OPS[op][1](a[i : i + 1], b[i : i + 1])) if int(b[i]) else -1 for i in range(5)]
        assert run_graph(g, {"a": a, "b": b})["out_q"].tolist() == want
        assert _generated(g, {"a": a, "b": b})["out_q"].tolist() == want


def test_pow_of_bools_by_a_bool_literal() -> None:
    """torch's scalar-exponent shortcuts, the only pows of bools torch accepts."""
    doc = {
        "format": "fuseopt-graph/1",
        "name": "bool_pow",
        "buffers": {
            "m": {"shape": [4], "dtype": "bool", "role": "input"},
            "t": {"shape": [4], "dtype": "bool", "role": "output"},
            "f": {"shape": [4], "dtype": "bool", "role": "output"},
        },
        "nodes": [
            {"name": "n0", "loops": [["i0", 4]], "store": "t[i0]", "value": "pow(m[i0], true)"},
            {"name": "n1", "loops": [["i0", 4]], "store": "f[i0]", "value": "pow(m[i0], false)"},
        ],
    }
    g = load_text(json.dumps(doc), "bool_pow.json")
    m = torch.tensor([True, False, True, False])
    for st in (run_graph(g, {"m": m}), _generated(g, {"m": m})):
        assert torch.equal(st["t"], torch.pow(m, True))
        assert torch.equal(st["f"], torch.pow(m, False))
