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
