"""`codegen.helpers`: the `@triton.jit` helpers of the rule tables, emitted only when used; the
libdevice ones branch on `_INTERPRETED` (libdevice in a compiled kernel, plain `tl` arithmetic
under TRITON_INTERPRET=1). The GPU branch is checked by tests/test_codegen_gpu.py."""

from __future__ import annotations

import re

import pytest

from fuseopt.codegen import emit_module
from fuseopt.codegen.helpers import HELPERS
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from tests.strategies import DEVICE

GRAPH = """
format: fuseopt-graph/1
name: one_op
buffers:
  x: {{shape: [64], dtype: float32, role: input}}
  y: {{shape: [64], dtype: float32, role: output}}
nodes:
  - {{name: n, loops: [[i, 64]], store: "y[i]", value: "{value}"}}
"""


def _module(value: str) -> str:
    st = optimize(load_text(GRAPH.format(value=value), "one_op.yaml"))
    return emit_module(st.graph, st.plan)


@pytest.mark.parametrize("op", ["tanh", "expm1", "log1p", "tan"])
def test_a_libdevice_helper_branches_on_the_interpreter(op: str) -> None:
    helper = HELPERS[f"_{op}"]
    assert helper.interpreted
    body = helper.source.split("if _INTERPRETED:", 1)
    assert len(body) == 2 and "libdevice." not in body[0]
    portable, compiled = body[1].split("\n    else:\n", 1)
    assert "libdevice" not in portable and compiled.strip() == f"return libdevice.{op}(x)"
    src = _module(f"{op}(x[i])")
    assert "from triton.language.extra import libdevice\n" in src and "import os\n" in src
    assert src.index("_INTERPRETED = tl.constexpr(") < src.index(f"def _{op}(")


def test_a_module_without_them_imports_neither() -> None:
    src = _module("exp(x[i]) + 1")
    assert "libdevice" not in src and "_INTERPRETED" not in src and "import os" not in src


def test_every_helper_that_calls_libdevice_is_interpreted() -> None:
    """A libdevice call outside the `_INTERPRETED` branch would fail under the interpreter."""
    for name, helper in HELPERS.items():
        if "libdevice." in helper.source or "_INTERPRETED" in helper.source:
            assert helper.interpreted, name
            assert re.search(r"if _INTERPRETED:", helper.source), name


@pytest.mark.parametrize(
    "value",
    ["fmod(x[i], 0.75)", "fmod(2.5, x[i])", "x[i] % 0.75", "1.5 % x[i]", "x[i] // 0.7", "x[i] % x[i]"],
)
def test_compiled_float_remainders_are_libdevice_fmod(value: str) -> None:
    """Compiled, Triton's float % is a - trunc(a / b) * b: inexact once a / b rounds, NaN for a
    finite a by an infinite b (the H200 run of the special values found it). Every float fmod,
    remainder and floor division reaches libdevice.fmod there, and % only under the interpreter."""
    src = _module(value)
    kernel = src[src.index("def triton_") :]
    kernel = kernel[: kernel.index("\ndef ", 1)]
    assert "%" not in kernel, kernel  # the kernel's own arithmetic: no float %
    fmod = HELPERS["_fmod"].source
    interpreted, compiled = fmod.split("if _INTERPRETED:", 1)[1].split("\n    else:\n", 1)
    assert "a % b" in interpreted and compiled.strip() == "return libdevice.fmod(a, b)"
    for name in ("_remainder_float", "_floordiv_float"):
        body = HELPERS[name].source
        assert "%" not in body and "_fmod(a, b)" in body and HELPERS[name].deps == ("_fmod",)
    assert "def _fmod(" in src and "from triton.language.extra import libdevice" in src


SPECIAL = (0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 2.5, -2.5, 3.0, -3.0, 1e-30, 1e30)
SPECIAL += (float("inf"), float("-inf"), float("nan"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["pow", "atan2", "fmod", "maximum", "minimum", "remainder", "floordiv"])
def test_binary_helpers_on_special_values_are_torchs(op: str, dtype: str) -> None:
    """Every pair of signed zeros, +-1, integers and not, tiny, huge, infinite and NaN operands:
    the generated module computes what torch computes (pow(-1, inf) is 1, pow(-inf, 0.5) inf)."""
    import itertools

    import torch

    from fuseopt.runtime.module import load_module, run_module
    from tests.strategies import unfused_plan

    pairs = list(itertools.product(SPECIAL, repeat=2))
    n = len(pairs)
    expr = {"remainder": "a[i] % b[i]", "floordiv": "a[i] // b[i]"}.get(op, f"{op}(a[i], b[i])")
    graph = load_text(
        "format: fuseopt-graph/1\nname: special\nbuffers:\n"
        f"  a: {{shape: [{n}], dtype: {dtype}, role: input}}\n"
        f"  b: {{shape: [{n}], dtype: {dtype}, role: input}}\n"
        f"  y: {{shape: [{n}], dtype: {dtype}, role: output}}\n"
        f'nodes:\n  - {{name: n, loops: [[i, {n}]], store: "y[i]", value: "{expr}"}}\n',
        "special.yaml",
    )
    dt = getattr(torch, dtype)
    a = torch.tensor([p[0] for p in pairs], dtype=dt)
    b = torch.tensor([p[1] for p in pairs], dtype=dt)
    module = load_module(emit_module(graph, unfused_plan(graph)))
    got = run_module(module, {"a": a.to(DEVICE), "b": b.to(DEVICE)})["y"].cpu()
    want = {
        "pow": torch.pow,
        "atan2": torch.atan2,
        "fmod": torch.fmod,
        "maximum": torch.maximum,
        "minimum": torch.minimum,
        "remainder": torch.remainder,
        "floordiv": lambda x, y: torch.div(x, y, rounding_mode="floor"),
    }[op](a, b)
    if op in ("fmod", "remainder", "floordiv"):  # torch's own vectorised fmod turns a quotient
        huge = (a / b).abs() > 1e20  # past the float range into NaN (its scalar path is exact)
        got, want = got[~huge], want[~huge]
    torch.testing.assert_close(got, want, equal_nan=True, rtol=2e-6, atol=0, msg=lambda m: f"{op}: {m}")


UNARY_SPECIAL = (0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 1e-30, -1e-30, 1e-7, 30.0, -30.0, 88.0, -88.0)
UNARY_SPECIAL += (1e30, -1e30, float("inf"), float("-inf"), float("nan"), 0.49999997, 1.5, -1.5, 2.5000002)
UNARY = (
    "exp exp2 log log2 log1p expm1 sqrt rsqrt abs sin cos tan tanh sigmoid relu erf floor ceil round trunc"
)
UNARY += " sign reciprocal"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_unary_functions_on_special_values_are_torchs(dtype: str) -> None:
    """Every function of the format on signed zeros, halves (round), tiny, huge, infinite and NaN
    operands, and the edges of exp's range: what torch computes (half precision in float32, then
    rounded), within a few ulp."""
    import torch

    from fuseopt.runtime.module import load_module, run_module

    n = len(UNARY_SPECIAL)
    dt = getattr(torch, dtype)
    x = torch.tensor(UNARY_SPECIAL, dtype=torch.float64).to(dt)
    tol = {"float32": 2e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    for fn in UNARY.split():
        graph = load_text(
            "format: fuseopt-graph/1\nname: special\nbuffers:\n"
            f"  x: {{shape: [{n}], dtype: {dtype}, role: input}}\n"
            f"  y: {{shape: [{n}], dtype: {dtype}, role: output}}\n"
            f'nodes:\n  - {{name: n, loops: [[i, {n}]], store: "y[i]", value: "{fn}(x[i])"}}\n',
            "special.yaml",
        )
        st = optimize(graph)
        got = run_module(load_module(emit_module(st.graph, st.plan)), {"x": x.to(DEVICE)})["y"].cpu()
        wide = x.float() if dtype in ("float16", "bfloat16") else x
        want = getattr(torch, fn)(wide).to(dt)
        torch.testing.assert_close(
            got, want, equal_nan=True, rtol=tol, atol=1e-37, msg=lambda m, f=fn: f"{f}: {m}"
        )
