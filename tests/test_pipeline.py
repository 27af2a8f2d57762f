"""The pass pipeline (`passes/pipeline.py`): byte-identical plans for the same input, and reads
spelled another way planned, verified and generated alike."""

from __future__ import annotations

import json

import pytest

from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.passes.verify import check
from tests.planning import ROOT, load, plan


def test_same_input_gives_byte_identical_json() -> None:
    g = load(f"{ROOT}/samples/three_layouts_mean.yaml")
    a = json.dumps(optimize(g).plan.to_json())
    b = json.dumps(optimize(load(f"{ROOT}/samples/three_layouts_mean.yaml")).plan.to_json())
    assert a == b


@pytest.mark.parametrize(
    "read",
    [
        "t[16*(c % 6) + 96*(c // 6)]",  # the mixed-radix identity
        "t[16*(c // 1) + 5*(c % 1)]",  # floordiv and mod by 1
        "t[16*((c % 12) % 6) + 96*((c // 3) // 2)]",  # nested // and %
    ],
)
def test_equal_functions_plan_verify_and_generate_alike(read: str) -> None:
    """A read spelled another way is the same element: the planner fuses it, the verifier
    accepts the kernel (it said 'exit 1' for these) and the generated code matches."""
    from tests.strategies import check as run_check
    from tests.strategies import plan_of

    g = load_text(
        f"""
format: fuseopt-graph/1
name: spelled
buffers:
  x: {{shape: [96], dtype: float32, role: input}}
  t: {{shape: [96], stride: [16], dtype: float32}}
  y: {{shape: [96], dtype: float32, role: output}}
nodes:
  - {{name: n0, loops: [[c, 96]], store: 't[16*c]', value: 'x[c] * 2'}}
  - {{name: n1, loops: [[c, 96]], store: 'y[c]', value: '{read} + 1'}}
""",
        "spelled.yaml",
    )
    for opts in ({}, {"loop_order": False}, {"scoring": "inductor"}):
        stage = plan(g, **opts)
        assert [k.nodes for k in stage.plan.kernels] == [("n0", "n1")]
    fused = plan_of(g, [["n0", "n1"]])
    assert check(g, fused) == []
    run_check(g, fused)
