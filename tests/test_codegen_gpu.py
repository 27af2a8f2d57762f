"""On a CUDA GPU only: every sample at full size, unfused and as the planner fuses it, with fixed
and with autotuned launch parameters, checked against the interpreter (outputs poisoned first).

Run on the GPU machine with `python3 -m pytest tests/test_codegen_gpu.py`; skipped elsewhere.
"""

from __future__ import annotations

import glob
import os

import pytest
import torch

from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.plan import Kernel, Plan
from fuseopt.runtime import compare_with_reference

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = sorted(glob.glob(os.path.join(ROOT, "samples", "*.yaml"))) + sorted(
    glob.glob(os.path.join(ROOT, "samples", "cases", "*.yaml"))
)


def _name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _unfused(g: Graph) -> Plan:
    return Plan(
        g.name, "", tuple(Kernel(f"k{i}", (n.name,), n.kind, (), (), 0) for i, n in enumerate(g.nodes))
    )


@pytest.mark.parametrize("mode", ["unfused", "fused", "fused-autotune"])
@pytest.mark.parametrize("path", PATHS, ids=[_name(p) for p in PATHS])
def test_sample_on_gpu(path: str, mode: str) -> None:
    g = load_graph(path)
    if mode == "unfused":
        compare_with_reference(g, _unfused(g))
        return
    pipeline = pytest.importorskip("fuseopt.passes.pipeline")
    stage = pipeline.optimize(g)
    compare_with_reference(stage.graph, stage.plan, autotune=mode.endswith("autotune"))


TRANSPOSED_SOFTMAX = """
format: fuseopt-graph/1
name: softmax_t_{rows}
buffers:
  x:   {{shape: [{rows}, 1024], stride: [1, {rows}], dtype: float32, role: input}}
  b:   {{shape: [1024], dtype: float32, role: input}}
  m:   {{shape: [{rows}], dtype: float32}}
  s:   {{shape: [{rows}], dtype: float32}}
  out: {{shape: [{rows}, 1024], dtype: float32, role: output}}
nodes:
  - {{name: mx, loops: [[i, {rows}]], reduce: [[r, 1024]], store: "m[i]", value: "max(x[i + {rows}*r] + b[r])"}}
  - {{name: sm, loops: [[i, {rows}]], reduce: [[r, 1024]], store: "s[i]", value: "sum(exp(x[i + {rows}*r] + b[r] - m[i]))"}}
  - {{name: o, loops: [[i, {rows}], [j, 1024]], store: "out[1024*i + j]", value: "exp(x[i + {rows}*j] + b[j] - m[i]) / s[i]"}}
"""


@pytest.mark.parametrize("rows", [4096, 4100])  # 4100: the last cluster's rows partly masked
@pytest.mark.parametrize("clusters", [None, True, False])
def test_cluster_launches_on_gpu(rows: int, clusters: bool | None) -> None:
    """A transposed softmax's persistent tile as a cluster of two programs (on this GPU when it
    has clusters: None), forced on where the GPU has them, and its single-program fallback."""
    from fuseopt.codegen import emit_module
    from fuseopt.io.load import load_text
    from fuseopt.passes.pipeline import optimize

    if clusters and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("thread-block clusters need compute capability 9.0")
    st = optimize(load_text(TRANSPOSED_SOFTMAX.format(rows=rows), "softmax_t.yaml"))
    src = emit_module(st.graph, st.plan)
    assert "num_ctas=2" in src
    src = src.replace("\nCLUSTERS = None\n", f"\nCLUSTERS = {clusters}\n")
    compare_with_reference(st.graph, st.plan, source=src)


SPLIT_THEN_MORE = """
format: fuseopt-graph/1
name: split_then_more
buffers:
  x:   {shape: [4096, 8192], dtype: float32, role: input}
  y:   {shape: [8192, 4096], dtype: float32, role: input}
  s:   {shape: [4096], dtype: float32, role: output}
  t:   {shape: [4096], dtype: float32, role: output}
nodes:
  - {name: rs, loops: [[i, 4096]], reduce: [[r, 8192]], store: "s[i]", value: "sum(x[8192*i + r] * 2.0 + y[i + 4096*r])"}
  - {name: sc, loops: [[i, 4096]], store: "t[i]", value: "s[(i + 1) % 4096] * 0.5"}
"""


@pytest.mark.parametrize("pdl", [None, True, False])
def test_split_finish_with_programmatic_dependent_launch(pdl: bool | None) -> None:
    """A split reduction's finishing kernel launched dependent on its partial kernel (on this GPU
    when it has grid dependency control: None), forced on where it has, and off; a kernel after
    it reads the finished results of every program (a neighbour's row)."""
    from fuseopt.codegen import emit_module
    from fuseopt.io.load import load_text
    from fuseopt.passes.pipeline import optimize

    if pdl and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("programmatic dependent launch needs compute capability 9.0")
    st = optimize(load_text(SPLIT_THEN_MORE, "split_then_more.yaml"))
    src = emit_module(st.graph, st.plan)
    assert "rsplit" in src and "launch_pdl=pdl" in src and "_gdc_wait(PDL)" in src
    src = src.replace("\nPDL = None\n", f"\nPDL = {pdl}\n")
    for seed in range(3):
        compare_with_reference(st.graph, st.plan, seed, source=src)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("shape", [(2, 35, 35, 192), (3, 12, 10, 128), (1, 6, 7, 64)])
def test_register_windows_on_gpu(shape: tuple[int, int, int, int], dtype: str) -> None:
    """3x3 stencils over channels-last images take register windows (`codegen.windows.register`), compiled
    and checked against the interpreter, edges and image boundaries included."""
    import json

    from fuseopt.codegen import emit_module
    from fuseopt.io.load import load_text
    from tests.test_windows_sliding import stencil_doc

    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(*shape, "nhwc", offsets, dtype, "sum")), "stencil.json")
    assert "register window" in emit_module(g, _unfused(g))
    compare_with_reference(g, _unfused(g))


@pytest.mark.parametrize("window", [(4, 5), (4, 6), (3, 7)])
def test_overlapping_register_windows_on_gpu(window: tuple[int, int]) -> None:
    """Shapes whose last band of an image (and last chunk of a row) overlap the one before,
    pinned on the 35 x 35 pooling window: points computed and stored twice by two programs."""
    import json

    from fuseopt.codegen import emit_module
    from fuseopt.codegen.tiling import CodegenOptions
    from fuseopt.io.load import load_text
    from tests.test_windows_sliding import stencil_doc

    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(2, 35, 35, 192, "nhwc", offsets, "bfloat16", "sum")), "s.json")
    src = emit_module(g, _unfused(g), options=CodegenOptions(window_shape=window))
    assert f"register window, {window[0]} x {window[1]} cells" in src and "overlapping" in src
    compare_with_reference(g, _unfused(g), source=src)


LIBDEVICE_MATH = """
format: fuseopt-graph/1
name: libdevice_math_{dtype}
buffers:
  x: {{shape: [1000, 777], dtype: {dtype}, role: input}}
  y: {{shape: [1000, 777], dtype: {dtype}, role: output}}
nodes:
  - {{name: n, loops: [[i, 1000], [j, 777]], store: "y[777*i + j]",
      value: "tanh(x[777*i + j] * 3) + expm1(x[777*i + j] * 0.1) + log1p(abs(x[777*i + j])) + tan(x[777*i + j] * 0.5)"}}
"""


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_libdevice_helpers_on_gpu(dtype: str) -> None:
    """tanh, expm1, log1p and tan take libdevice's branch in a compiled kernel (the CPU tests run
    the portable one), checked against the reference in each float dtype."""
    from fuseopt.io.load import load_text
    from fuseopt.passes.pipeline import optimize

    st = optimize(load_text(LIBDEVICE_MATH.format(dtype=dtype), "libdevice_math.yaml"))
    compare_with_reference(st.graph, st.plan)
