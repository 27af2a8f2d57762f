"""The window load counts of fuseopt/codegen/windows/census.py: counted from the IR, they are the
loads the emitter writes for the same tiling (its own record of them, `RowWalk.loads` and the
cells' loads), on random stencils, window reductions and fused kernels of both; and choosing a
window emits no code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.codegen.kernel import KernelEmitter
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.tile_shapes import window_tilings
from fuseopt.codegen.tiling import CodegenOptions, Tiling
from fuseopt.codegen.windows.census import cell_loads, row_loads
from fuseopt.codegen.windows.register import cell_tilings
from fuseopt.codegen.windows.sliding import carry_plan
from fuseopt.io.load import load_graph, load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from tests.strategies import WINDOW, unfused_plan
from tests.sweeps import examples
from tests.test_windows_register import CELLS
from tests.test_windows_register import stencils as cell_stencils
from tests.test_windows_sliding import stencil_doc, stencils, window_reductions

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def with_epilogue(doc: dict[str, Any]) -> dict[str, Any]:
    """The graph with a pointwise node after its node, reading its output at the same point
    (fused, it reads the producer's value, or a reduction's result)."""
    node = doc["nodes"][0]
    out = dict(doc["buffers"]["out"])
    doc = {**doc, "buffers": {**doc["buffers"], "out": {**out, "role": "intermediate"}, "out2": out}}
    store = node["store"]
    epilogue = {
        "name": "n1",
        "loops": node["loops"],
        "store": "out2" + store[3:],
        "value": f"relu({store}) * 0.5",
    }
    return {**doc, "nodes": [*doc["nodes"], epilogue]}


def _tilings(doc: dict[str, Any] | Graph, options: CodegenOptions, cells: bool) -> list[tuple[Graph, Tiling]]:
    """Every window candidate of every launch, unfused and as planned."""
    g = doc if isinstance(doc, Graph) else load_text(json.dumps(doc), "stencil.json")
    stage = optimize(g)
    out = []
    for graph, plan in ((g, unfused_plan(g)), (stage.graph, stage.plan)):
        for launch in build_schedule(graph, plan).launches:
            if isinstance(launch, ComputeLaunch) and launch.stores:
                found = (
                    cell_tilings(graph, launch, options) if cells else window_tilings(graph, launch, options)
                )
                out.extend((graph, t) for t in found)
    return out


def _emitted_row_loads(graph: Graph, tiling: Tiling) -> tuple[list[object], int, int]:
    probe = KernelEmitter(graph, tiling, "probe")
    probe.body()
    assert probe.walk is not None
    plan = carry_plan(probe.walk.loads)
    loads = len({ld.key for ld in probe.walk.loads}) + probe.walk.carried_points
    return sorted(map(repr, plan.items())), loads, len(plan) + probe.walk.carried_points


def _check_rows(doc: dict[str, Any] | Graph, options: CodegenOptions) -> int:
    found = _tilings(doc, options, cells=False)
    for graph, tiling in found:
        plan, loads, carried = row_loads(tiling)
        assert (sorted(map(repr, plan.items())), loads, carried) == _emitted_row_loads(graph, tiling)
    return len(found)


@settings(max_examples=examples(60, quick=8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(stencils(), window_reductions().map(lambda case: case[0])), st.booleans(), st.booleans())
def test_row_loads_are_the_loads_the_row_loop_emits(doc: dict[str, Any], small: bool, epilogue: bool) -> None:
    _check_rows(with_epilogue(doc) if epilogue else doc, WINDOW if small else CodegenOptions())


@settings(max_examples=examples(40, quick=6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(cell_stencils().map(lambda case: case[0]), window_reductions().map(lambda case: case[0])),
    st.booleans(),
)
def test_cell_loads_are_the_loads_the_cells_emit(doc: dict[str, Any], epilogue: bool) -> None:
    for graph, tiling in _tilings(with_epilogue(doc) if epilogue else doc, CELLS, cells=True):
        probe = KernelEmitter(graph, tiling, "probe")
        probe.body()
        assert cell_loads(tiling) == probe.cells_counts()


def test_a_3x3_window_in_rows_and_in_cells() -> None:
    """A 3x3 window over a channels-last image: a row of the walk loads 9 values, 6 of them
    carried from the row before; 5 x 5 cells load 7 x 7 distinct values for 25 x 9."""
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    doc = stencil_doc(2, 5, 10, 3, "nhwc", offsets, "bfloat16", "sum")
    assert _check_rows(doc, WINDOW) > 0
    walks = [row_loads(t)[1:] for _, t in _tilings(doc, WINDOW, cells=False)]
    assert (9, 6) in walks, walks
    cells = {
        (t.strategy.cells.rows, t.strategy.cells.cols): cell_loads(t) for _, t in _tilings(doc, CELLS, True)
    }
    assert cells[(5, 5)] == (5 * 5 * 9, 7 * 7), cells


@pytest.mark.parametrize("name", ["avgpool_cl_small.yaml", "captured/inception_block.json"])
def test_captured_pooling_rows_and_cells(name: str) -> None:
    """A captured avg_pool2d (a window reduction and its epilogue, which reads the result) and
    Inception's pooling branches (indices over a flat index of rows and columns)."""
    g = load_graph(str(SAMPLES / name))
    assert _check_rows(g, WINDOW) + _check_rows(g, CodegenOptions()) > 0
    found = _tilings(g, CELLS, cells=True)
    for graph, tiling in found:
        probe = KernelEmitter(graph, tiling, "probe")
        probe.body()
        assert cell_loads(tiling) == probe.cells_counts()


def test_choosing_a_window_emits_no_code() -> None:
    """`codegen.choice` weighs windows without the emitter: importing it loads none of it."""
    code = (
        "import sys, fuseopt.codegen.choice\n"
        "emitter = [m for m in sys.modules if m.split('.')[-1] in "
        "('kernel', 'emitter', 'expressions', 'reductions', 'sliding_emit', 'register_emit')]\n"
        "assert not emitter, emitter\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
