"""`codegen.reductions`: every reduction of the format on rows of special values (NaN, signed
zeros and infinities, huge values, ties) under every strategy that reduces a row (the one chosen,
persistent, looped, split and unrolled), against torch: NaN propagates through max and min,
argmax and argmin take the first of equal values and count NaN as the largest, sums overflow
alike."""

from __future__ import annotations

import random
import re

import pytest
import torch

from fuseopt.codegen import emit_module
from fuseopt.codegen.options import CodegenOptions
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module, run_module
from tests.strategies import DEVICE

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

VALUES = (0.0, -0.0, 1.0, -1.0, 2.5, float("inf"), float("-inf"), float("nan"), 1e30, -1e30, 3.0, 3.0)
ROWS, POINTS = 16, 24
TORCH = {
    "sum": lambda t: t.sum(1),
    "prod": lambda t: t.prod(1),
    "max": lambda t: t.max(1).values,
    "min": lambda t: t.min(1).values,
    "argmax": lambda t: t.argmax(1),
    "argmin": lambda t: t.argmin(1),
    "any": lambda t: t.any(1),
}
# Split and looped tiles of a few points, so that 24-point rows take several chunks and steps.
SMALL_TILES = {"split_programs": 1 << 20, "split_min_r_blocks": 1, "max_r0_block": 8, "persistent_rnumel": 1}
STRATEGIES = {
    "chosen": CodegenOptions(),
    "persistent_row": CodegenOptions(strategy="persistent_row"),
    "looped_row": CodegenOptions(strategy="looped_row", **SMALL_TILES),  # type: ignore[arg-type]
    "split": CodegenOptions(strategy="split", **SMALL_TILES),  # type: ignore[arg-type]
    "unrolled": CodegenOptions(strategy="unrolled", unroll_rnumel=POINTS),
}
TOLERANCE = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}


def _rows() -> torch.Tensor:
    rnd = random.Random(0)
    rows = [[rnd.choice(VALUES) for _ in range(POINTS)] for _ in range(ROWS)]
    rows[0], rows[1] = [float("nan")] * POINTS, [3.0] * POINTS  # all NaN; all tied
    rows[2], rows[3] = [float("-inf")] * POINTS, [-0.0] * POINTS
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("op", list(TORCH))
def test_reductions_of_special_values_are_torchs(op: str, dtype: str) -> None:
    dt = getattr(torch, dtype)
    x = _rows().to(dt)
    out = {"argmax": "int64", "argmin": "int64", "any": "bool"}.get(op, dtype)
    graph = load_text(
        "format: fuseopt-graph/1\nname: rows\nbuffers:\n"
        f"  x: {{shape: [{ROWS}, {POINTS}], dtype: {dtype}, role: input}}\n"
        f"  y: {{shape: [{ROWS}], dtype: {out}, role: output}}\n"
        f"nodes:\n  - {{name: n, loops: [[i, {ROWS}]], reduce: [[r, {POINTS}]], store: 'y[i]', "
        f"value: '{op}(x[{POINTS}*i + r])'}}\n",
        "rows.yaml",
    )
    stage = optimize(graph)
    want = TORCH[op](x.float() if dtype in ("float16", "bfloat16") else x)  # half: in float32
    if out == dtype:
        want = want.to(dt)
    kernels = set()
    for name, options in STRATEGIES.items():
        source = emit_module(stage.graph, stage.plan, options=options)
        kernels.add(source[source.index("# plan kernel") :].split("\n", 1)[0])
        got = run_module(load_module(source), {"x": x.reshape(-1).to(DEVICE)})["y"].cpu()
        if out == dtype:
            rtol = TOLERANCE[dtype]
            torch.testing.assert_close(
                got, want, equal_nan=True, rtol=rtol, atol=1e-30, msg=lambda m, n=name: f"{n}: {m}"
            )
        else:
            assert torch.equal(got, want), (name, got, want)
    # persistent, looped, split and unrolled kernels; argmax/argmin neither split nor unroll
    # (their pair of value and index has no partial result or per-point form)
    assert len(kernels) == (2 if op.startswith("arg") else 4), kernels


# A base that each dtype's doubled maximum or minimum overflows (torch wraps it).
NARROW = {"int8": 100, "int16": 20000, "uint8": 200}


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("dtype", list(NARROW))
@pytest.mark.parametrize("op", ["max", "min"])
def test_arithmetic_on_a_narrow_integer_reduction_wraps_as_torchs(op: str, dtype: str, strategy: str) -> None:
    """Triton's tl.max and tl.min return int32 for integers narrower than 32 bits; the kernel
    casts the result back, so that the reduction doubled wraps in its dtype as torch's does
    (int8: 101 + 101 -> -54), under every strategy that reduces it."""
    from fuseopt.runtime import compare_with_reference
    from tests.strategies import plan_of

    text = f"""
format: fuseopt-graph/1
name: narrow
buffers:
  x: {{shape: [4, 6], dtype: bool, role: input}}
  y: {{shape: [4], dtype: float32, role: input}}
  m: {{shape: [4], dtype: {dtype}}}
  out: {{shape: [4], dtype: float32, role: output}}
nodes:
  - {{name: r, loops: [[i, 4]], reduce: [[j, 6]], store: "m[i]", value: "{op}(cast(x[6*i + j], {dtype}) + {NARROW[dtype]})"}}
  - {{name: p, loops: [[i, 4]], store: "out[i]", value: "y[i] + cast(m[i] + m[i], float32)"}}
"""
    g = load_text(text, "narrow.yaml")
    compare_with_reference(
        g,
        plan_of(g, [["r", "p"]]),
        source=emit_module(g, plan_of(g, [["r", "p"]]), options=STRATEGIES[strategy]),
    )


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_positions_accumulate_in_int32_where_the_row_fits(op: str) -> None:
    """An argmax/argmin's running positions are int32 (a register a lane) where the reduction's
    points fit int32, int64 past it (2**16 x 2**16 points: emitted, not run); the result is int64
    either way (the finishing helper widens)."""

    def text(r0: int, r1: int) -> str:
        return f"""
format: fuseopt-graph/1
name: positions
buffers:
  x: {{shape: [2, {r0}, {r1}], dtype: float16, role: input}}
  y: {{shape: [2], dtype: int64, role: output}}
nodes:
  - {{name: a, loops: [[i, 2]], reduce: [[r0, {r0}], [r1, {r1}]], store: "y[i]", value: "{op}(x[{r0 * r1}*i + {r1}*r0 + r1])"}}
"""

    looped = CodegenOptions(strategy="looped_row", **SMALL_TILES)  # type: ignore[arg-type]
    for (r0, r1), width in (((4, 6), "int32"), ((1 << 16, 1 << 16), "int64")):
        stage = optimize(load_text(text(r0, r1), "positions.yaml"))
        for options in (looped, CodegenOptions(strategy="persistent_row")):
            src = emit_module(stage.graph, stage.plan, options=options)
            positions = re.findall(r"r0_index(?:, \[XBLOCK, R0_BLOCK\]\))?\.to\(tl\.(int\d+)\)", src)
            assert positions == [width], (r0, r1, options.strategy)
            assert "_final(" in src and "tl.int64), 9223372036854775807" in src
    small = optimize(load_text(text(4, 6), "positions.yaml"))
    x = torch.tensor([random.Random(s).choice(VALUES) for s in range(48)], dtype=torch.float16)
    for options in (looped, CodegenOptions(strategy="persistent_row")):
        module = load_module(emit_module(small.graph, small.plan, options=options))
        got = run_module(module, {"x": x.to(DEVICE)})["y"].cpu()
        assert got.dtype == torch.int64
        assert got.tolist() == TORCH[op](x.float().view(2, 24)).tolist()
