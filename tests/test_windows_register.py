"""Register windows (fuseopt/codegen/windows/register.py): random stencils and window reductions over
channels-last images run through the Triton interpreter against the reference, the loads their
cells share counted independently, the captured avg_pool2d bit for bit against the sliding
window, and the shapes that must not take one."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.codegen import emit_module
from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.tiling import CodegenOptions
from fuseopt.codegen.windows.register import column_stride
from fuseopt.interp import make_inputs
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module
from tests.strategies import check, unfused_plan
from tests.sweeps import examples
from tests.test_windows_sliding import draw_offsets, stencil_doc, window_reduce_doc, window_reductions

# Tiny images take the register window: rows of 2+ points, slices of one point of a column.
CELLS = CodegenOptions(window_min_row=2, max_xblock=8, window_slice=1)
HEADER = re.compile(r"register window, (\d+) x (\d+) cells, (\d+) loads for (\d+)")
COLUMN = re.compile(r"xoffset = xcol0 \* (\d+) \+ pid % \(\1 // XBLOCK\)")


def _cells(src: str) -> tuple[int, int, int, int, int] | None:
    """(rows, columns, column points, distinct loads, loads of all cells) of a register window."""
    m, c = HEADER.search(src), COLUMN.search(src)
    if m is None or c is None:
        return None
    rows, cols, distinct, needed = (int(g) for g in m.groups())
    return rows, cols, int(c.group(1)), distinct, needed


def _expected_loads(
    offsets: list[tuple[int, int]], rows: int, cols: int, col: int, shape: list[int]
) -> tuple[int, int]:
    """(loads every cell makes, distinct loads) of a stencil over an [n, h, w, c] image: a cell is
    one image row further (rows) and one column further (cols) when the columns are the image's
    columns (`col` = c); one image further and one image row further when they are whole image
    rows (`col` = w * c). A load (dh, dw) of a cell reads the element (dh, dw) away from the
    cell's; two cells reading one element read it under one mask."""
    _, _, w, c = shape
    if col == c:
        cell = {(t, s): (0, t, s) for t in range(rows) for s in range(cols)}
    else:
        assert col == w * c, (col, shape)
        cell = {(t, s): (t, s, 0) for t in range(rows) for s in range(cols)}
    distinct = {(n, h + dh, x + dw) for n, h, x in cell.values() for dh, dw in offsets}
    return rows * cols * len(offsets), len(distinct)


@st.composite
def stencils(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    offsets = draw_offsets(draw, rectangular=draw(st.integers(0, 3)) > 0, min_kw=2)
    doc = stencil_doc(
        draw(st.integers(1, 2)),
        draw(st.integers(3, 6)),
        draw(st.integers(3, 6)),
        draw(st.integers(2, 4)),
        "nhwc",
        offsets,
        draw(st.sampled_from(["float32", "bfloat16"])),
        draw(st.sampled_from(["sum", "max"])),
    )
    return doc, offsets


@settings(max_examples=examples(40, quick=2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stencils())
def test_random_stencils_in_register_windows_match_the_reference(case: tuple[dict[str, Any], list]) -> None:
    doc, offsets = case
    g = load_text(json.dumps(doc), "stencil.json")
    for plan_graph, plan in ((g, unfused_plan(g)), *((s.graph, s.plan) for s in [optimize(g)])):
        src = check(plan_graph, plan, CELLS)
        got = _cells(src)
        if got is None:
            continue
        rows, cols, col, distinct, needed = got
        shape = doc["buffers"]["x"]["shape"]
        assert (needed, distinct) == _expected_loads(offsets, rows, cols, col, shape), src
        # kept only when cells share at least 1/cells_share_ratio of their loads
        assert CELLS.tuning.cells_share_ratio * (needed - distinct) >= needed
        walk = emit_module(plan_graph, plan, options=dataclasses.replace(CELLS, window_cells=0))
        m = re.search(r"sliding window, \d+ rows a program, (\d+) of (\d+) row loads carried", walk)
        if m is not None:  # and then only when they load fewer values a point than it
            assert distinct < (int(m.group(2)) - int(m.group(1))) * rows * cols, (src, walk)
        assert "for " not in src.split("def call", 1)[0].split("@triton.jit")[-1]  # fully unrolled


@pytest.mark.slow  # the golden kernel avgpool_cells64 checks a register window's structure in the quick run
def test_a_3x3_window_takes_a_register_window_and_shares_its_loads() -> None:
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(2, 5, 10, 3, "nhwc", offsets, "bfloat16", "sum")), "s.json")
    src = check(g, unfused_plan(g), CELLS)
    rows, cols, col, distinct, needed = _cells(src) or (0, 0, 0, 0, 0)
    assert (rows, cols, col) == (5, 5, 3)  # every row of the image (period 5), 5 of its 10 columns
    assert (needed, distinct) == (5 * 5 * 9, 7 * 7)
    assert src.count("tl.load(") == 7 * 7
    # a row of cells stores after all of its loads: 5 runs of 5 stores, no load after a store
    # of the same row (interleaved, a store would block every later load of the row)
    kernel = src.split("@triton.jit")[-1].split("def call")[0]
    ops = "".join(
        "L" if "tl.load(" in ln else "S"
        for ln in kernel.splitlines()
        if "tl.load(" in ln or "tl.store(" in ln
    )
    assert re.findall(r"S+", ops) == ["S" * 5] * 5 and ops.endswith("S"), ops
    # each cell's address: the program's base pointer plus a constant (folded by the compiler)
    addr = re.compile(r"tl\.(?:load|store)\((\w+)_ptr \+ (\(.*?\)|\w+)(?: ([+-]) (\d+))?, ")
    found = addr.findall(src)
    assert len(found) == 7 * 7 + 5 * 5
    assert len({base for _, base, _, _ in found}) == 1, found
    offsets_seen = {(buf, int(sign + k) if k else 0) for buf, _, sign, k in found}
    assert ("x", -33) in offsets_seen and ("out", 0) in offsets_seen and ("out", 3) in offsets_seen


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window_reductions())
def test_random_window_reductions_in_register_windows_match_the_reference(
    case: tuple[dict[str, Any], int, int],
) -> None:
    """Unrolled window reductions (sum, max, min over kh x kw), each cell combining its points
    in r order, under whichever window the emitter takes."""
    doc, _, _ = case
    g = load_text(json.dumps(doc), "window.json")
    check(g, unfused_plan(g), CELLS)


@pytest.mark.slow  # the random window reductions above take the same path in the quick run
def test_window_reductions_take_register_windows() -> None:
    """A 3x3 sum written as a reduction over two reduce loops (unrolled): each cell combines its
    nine points in r order (a valid order), the points' loads shared between cells."""
    for op in ("sum", "max"):
        doc = window_reduce_doc(2, 5, 5, 2, "nhwc", 3, 3, -1, -1, "float32", op)
        g = load_text(json.dumps(doc), "w.json")
        src = check(g, unfused_plan(g), CELLS)
        rows, cols, col, distinct, needed = _cells(src) or (0, 0, 0, 0, 0)
        window = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]
        assert (needed, distinct) == _expected_loads(window, rows, cols, col, [2, 5, 5, 2])
        assert "reduction unrolled over r0=9, register window" in src


def _captured_pool(h: int, w: int) -> Any:
    import fuseopt
    from tests.fixtures.programs import avgpool_cl

    x = torch.empty((2, 64, h, w), dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    return optimize(fuseopt.capture(avgpool_cl, x))


@pytest.mark.slow  # the seed case at its captured size; tests/test_samples.py runs it against torch
def test_captured_avgpool_is_bit_identical_to_the_sliding_window() -> None:
    """Inductor's avg_pool2d lowering (a chain of nine additions): the same additions in the same
    order in every cell, so the output matches the sliding window's bit for bit."""
    stage = _captured_pool(10, 10)
    src = emit_module(stage.graph, stage.plan)
    rows, cols, col, distinct, needed = _cells(src) or (0, 0, 0, 0, 0)
    assert (rows, cols, col, distinct, needed) == (5, 5, 64, 49, 225)
    assert "num_warps=1" in src and "XBLOCK=64" in src
    # the column and the image row once a program, from the program's ids (the compiler folds
    # the cells' bounds checks into a few predicates), not from the flat index once a point
    assert "xcol = xcol0 + tl.zeros([1], tl.int32)" in src and "xindex // 64" not in src
    assert re.search(r"y0 = ypid % \d+ \* 5\n", src) and "yindex" not in src
    walk = emit_module(stage.graph, stage.plan, options=CodegenOptions(window_cells=0))
    assert "sliding window" in walk
    check(stage.graph, stage.plan)
    inputs = make_inputs(stage.graph, seed=3)
    a, b = load_module(src).call(inputs), load_module(walk).call(inputs)
    for name in a:
        assert torch.equal(a[name].view(torch.int16), b[name].view(torch.int16)), name


def test_register_window_needs_a_column_of_whole_slices() -> None:
    """48 channels: no 64-point slice divides a column, so the sliding window stays."""
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(1, 5, 8, 48, "nhwc", offsets, "bfloat16", "sum")), "s.json")
    src = emit_module(g, unfused_plan(g))
    assert "register window" not in src and "sliding window" in src
    src64 = emit_module(g, unfused_plan(g), options=dataclasses.replace(CodegenOptions(), window_slice=16))
    assert _cells(src64) is not None


def test_register_window_off_by_option_and_deterministic_and_autotuned() -> None:
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(1, 5, 5, 64, "nhwc", offsets, "float32", "sum")), "s.json")
    src = emit_module(g, unfused_plan(g))
    assert _cells(src) is not None
    assert src == emit_module(g, unfused_plan(g))
    off = emit_module(g, unfused_plan(g), options=CodegenOptions(window_cells=0))
    assert "register window" not in off and "sliding window" in off
    # under --autotune too (its cells are unrolled for one shape: a fixed launch, no candidates)
    tuned = emit_module(g, unfused_plan(g), autotune=True)
    assert _cells(tuned) == _cells(src) and "@triton.autotune" not in tuned
    check(g, unfused_plan(g), CodegenOptions(autotune=True))


def test_vertical_stencils_keep_the_sliding_window() -> None:
    """Three loads of one column (dh = -1, 0, 1): 5 x 5 cells load 7 x 5 values for 25 points
    (1.4 a point); the sliding window carries two of three a row (one load a point)."""
    offsets = [(dh, 0) for dh in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(1, 5, 5, 64, "nhwc", offsets, "float32", "sum")), "s.json")
    src = emit_module(g, unfused_plan(g))
    assert "register window" not in src and "sliding window" in src


def test_column_stride_rules() -> None:
    row = 6720
    col, whole, within = Digit("xindex", 192, 35), Digit("xindex", 1, None), Digit("xindex", 2, 96)
    rows = Digit("xindex", 6720, 35)
    assert column_stride({whole, col, rows}, row) == 192
    assert column_stride({whole, col, within, rows}, row) == 192  # a digit inside a column
    assert column_stride({whole, rows}, row) is None  # no column digit
    assert column_stride({col, Digit("xindex", 64, None)}, row) is None  # crosses columns
    assert column_stride({Digit("xindex", 100, None)}, row) is None  # does not divide the row


def test_register_window_with_int64_indices() -> None:
    """Past int32 indexing: the program ids, the chunk's column and the band's rows widened
    (generation only)."""
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(4096, 35, 35, 512, "nhwc", offsets, "bfloat16", "sum")), "big.json")
    src = emit_module(g, unfused_plan(g))
    assert _cells(src) is not None
    assert "pid = tl.program_id(0).to(tl.int64)" in src
    assert "ypid = tl.program_id(1).to(tl.int64) + tl.zeros([1], tl.int64)" in src
    assert "xcol = xcol0 + tl.zeros([1], tl.int64)" in src
    compile(src, "kernels.py", "exec")


def test_cells_over_whole_images() -> None:
    """A row split at the image (rows: images, columns: image rows of w x c points): cells one
    image and one image row apart; offsets along w stay within a column (hypothesis found this
    orientation)."""
    offsets = [(0, 0), (0, 1), (1, 0), (2, 0), (2, 1)]
    g = load_text(json.dumps(stencil_doc(2, 5, 3, 2, "nhwc", offsets, "float32", "sum")), "s.json")
    src = check(g, unfused_plan(g), dataclasses.replace(CELLS, window_shape=(2, 5)))
    rows, cols, col, distinct, needed = _cells(src) or (0, 0, 0, 0, 0)
    assert (rows, cols, col) == (2, 5, 6)
    assert (needed, distinct) == (50, 28) == _expected_loads(offsets, rows, cols, col, [2, 5, 3, 2])
    # Left to choose, the emitter takes the image's own rows and columns: 5 x 3 cells (the whole
    # image) load 28 values for 15 points, against 28 for 10 above.
    src = check(g, unfused_plan(g), CELLS)
    rows, cols, col, distinct, needed = _cells(src) or (0, 0, 0, 0, 0)
    assert (rows, cols, col) == (5, 3, 2)
    assert (needed, distinct) == _expected_loads(offsets, rows, cols, col, [2, 5, 3, 2])


@pytest.mark.slow
def test_overlapping_bands_and_chunks_match_the_reference() -> None:
    """Rows or columns that no allowed band or chunk divides (9 x 8 images): the last band of an
    image (the last chunk of a row) ends at its edge and overlaps the one before, its points
    computed and stored twice, the same values."""
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(2, 9, 8, 2, "nhwc", offsets, "float32", "sum")), "s.json")
    for shape, note in (
        ((5, 5), "overlapping bands and chunks"),
        ((3, 3), "overlapping chunks"),
        ((5, 4), "overlapping bands"),
    ):
        src = check(g, unfused_plan(g), dataclasses.replace(CELLS, window_shape=shape))
        rows, cols, col, distinct, needed = _cells(src) or (0, 0, 0, 0, 0)
        assert (rows, cols, col) == (*shape, 2) and note in src, src
        assert (needed, distinct) == _expected_loads(offsets, rows, cols, col, [2, 9, 8, 2])
        assert src.count("tl.minimum(") == len(note.split(" and "))  # band, chunk: a clamp each
    # Left to choose (bands may overlap, chunks must divide the row), the emitter takes the shape
    # that loads the fewest values a point of the output, points computed twice counted: 5 x 4
    # (42 loads for 20 points, 10 rows computed for 9: 2.33 a point) before 3 x 4 (30 for 12: 2.5).
    src = check(g, unfused_plan(g), CELLS)
    assert (_cells(src) or (0,))[:3] == (5, 4, 2)
