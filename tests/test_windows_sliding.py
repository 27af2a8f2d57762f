"""Sliding-window kernels (fuseopt/codegen/windows/sliding.py): random stencils run through the Triton
interpreter against the reference, the loads carried from row to row counted independently, and
the keys that must never match."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.codegen import emit_module
from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.windows.sliding import KeyContext, Walk, WindowLoad, carry_plan, cond_key, index_key
from fuseopt.io.load import load_text
from fuseopt.ir.expr import Binary, Const, Load, Var
from fuseopt.passes.pipeline import optimize
from tests.strategies import WINDOW, check, graph, plan_of, unfused_plan
from tests.sweeps import examples

CARRIED = re.compile(r"sliding window, (\d+) rows a program, (\d+) of (\d+) row loads carried")


def stencil_doc(
    n: int, h: int, w: int, c: int, layout: str, offsets: list[tuple[int, int]], dtype: str, combine: str
) -> dict[str, Any]:
    """out[n, h, w, c] = combine over (dh, dw) of k * x[n, h + dh, w + dw, c] (zero outside the image),
    x stored channels-last ("nhwc") or planar ("nchw")."""
    if layout == "nhwc":
        shape, loops = [n, h, w, c], [["n", n], ["h", h], ["w", w], ["c", c]]
        sh, sw = w * c, c
        base = f"c + {c}*w + {w * c}*h + {h * w * c}*n"
    else:
        shape, loops = [n, c, h, w], [["n", n], ["c", c], ["h", h], ["w", w]]
        sh, sw = w, 1
        base = f"w + {w}*h + {h * w}*c + {c * h * w}*n"
    terms = []
    for k, (dh, dw) in enumerate(offsets):
        cond = f"(h + {dh} >= 0) & (h + {dh} < {h}) & (w + {dw} >= 0) & (w + {dw} < {w})"
        off = dh * sh + dw * sw
        load = f"x[{base} + {off}]" if off >= 0 else f"x[{base} - {-off}]"
        term = f"masked({cond}, {load}, 0.0)"
        terms.append(f"{k + 1}.0 * {term}" if combine == "sum" else term)
    value = terms[0]
    for t in terms[1:]:
        value = f"{value} + {t}" if combine == "sum" else f"maximum({value}, {t})"
    return {
        "format": "fuseopt-graph/1",
        "name": "stencil",
        "buffers": {
            "x": {"shape": shape, "dtype": dtype, "role": "input"},
            "out": {"shape": shape, "dtype": dtype, "role": "output"},
        },
        "nodes": [{"name": "n0", "loops": loops, "store": f"out[{base}]", "value": value}],
    }


def draw_offsets(draw: st.DrawFn, rectangular: bool, min_kw: int = 1) -> list[tuple[int, int]]:
    """A stencil's (dh, dw) offsets: a rectangular window (pooling, convolution) at least 2 x
    `min_kw`, maybe with holes; or up to six anywhere within +-2."""
    if rectangular:
        dh0, dw0 = draw(st.integers(-2, 0)), draw(st.integers(-2, 0))
        kh, kw = draw(st.integers(2, 3)), draw(st.integers(min_kw, 3))
        full = [(dh0 + i, dw0 + j) for i in range(kh) for j in range(kw)]
        keep = draw(
            st.lists(st.sampled_from([True, True, True, False]), min_size=len(full), max_size=len(full))
        )
        return [o for o, k in zip(full, keep, strict=True) if k] or full[:1]
    return draw(
        st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2)), min_size=1, max_size=6, unique=True)
    )


@st.composite
def stencils(draw: st.DrawFn) -> dict[str, Any]:
    offsets = draw_offsets(draw, draw(st.booleans()))
    return stencil_doc(
        draw(st.integers(1, 2)),
        draw(st.integers(2, 7)),
        draw(st.integers(2, 5)),
        draw(st.integers(1, 3)),
        draw(st.sampled_from(["nhwc", "nchw"])),
        offsets,
        draw(st.sampled_from(["float32", "bfloat16"])),
        draw(st.sampled_from(["sum", "max"])),
    )


def window_reduce_doc(
    n: int, h: int, w: int, c: int, layout: str, kh: int, kw: int, dh0: int, dw0: int, dtype: str, op: str
) -> dict[str, Any]:
    """out[n, h, w, c] = op over a kh x kw window at offset (dh0, dw0) of x (zero outside the
    image): a reduction over two reduce loops, unrolled by the generator."""
    doc = stencil_doc(n, h, w, c, layout, [(0, 0)], dtype, "sum")
    node = doc["nodes"][0]
    sh, sw = (w * c, c) if layout == "nhwc" else (w, 1)
    base = node["store"][len("out[") : -1]
    cond = f"(h + r0 + {dh0} >= 0) & (h + r0 + {dh0} < {h}) & (w + r1 + {dw0} >= 0) & (w + r1 + {dw0} < {w})"
    off = sh * dh0 + sw * dw0
    idx = f"{base} + {sh}*r0 + {sw}*r1 + {off}" if off >= 0 else f"{base} + {sh}*r0 + {sw}*r1 - {-off}"
    node["reduce"] = [["r0", kh], ["r1", kw]]
    node["value"] = f"{op}(masked({cond}, x[{idx}], 0.0))"
    return doc


@st.composite
def window_reductions(draw: st.DrawFn) -> tuple[dict[str, Any], int, int]:
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    doc = window_reduce_doc(
        draw(st.integers(1, 2)),
        draw(st.integers(2, 6)),
        draw(st.integers(2, 5)),
        draw(st.integers(1, 3)),
        draw(st.sampled_from(["nhwc", "nchw"])),
        kh,
        kw,
        draw(st.integers(-2, 0)),
        draw(st.integers(-2, 0)),
        draw(st.sampled_from(["float32", "bfloat16"])),
        draw(st.sampled_from(["sum", "max", "min"])),
    )
    return doc, kh, kw


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window_reductions())
def test_random_window_reductions_match_the_reference(case: tuple[dict[str, Any], int, int]) -> None:
    """Unrolled window reductions: each row of the window combined on its own, the rows' partial
    results carried down (a valid order for a reduction)."""
    doc, kh, kw = case
    g = load_text(json.dumps(doc), "window.json")
    src = check(g, unfused_plan(g), WINDOW)
    m = CARRIED.search(src)
    if m is not None:
        # walking image rows, kh - 1 rows of kw points come from the row before; walking
        # columns (w), kw - 1 columns of kh points
        walks = {((kh - 1) * kw, kh * kw), (kh * (kw - 1), kh * kw)}
        assert (int(m.group(2)), int(m.group(3))) in walks, src
    elif kh >= 2:
        raise AssertionError(f"a {kh}x{kw} window and no sliding window:\n{src}")


def test_window_reduction_carries_row_sums() -> None:
    """A 3x3 sum carries two row sums (not six loads): three loads and two adds per row."""
    g = load_text(json.dumps(window_reduce_doc(2, 6, 5, 3, "nhwc", 3, 3, -1, -1, "float32", "sum")), "w.json")
    src = check(g, unfused_plan(g), WINDOW)
    assert CARRIED.search(src) is not None
    loop = src[src.index("for ywalk in range(YBLOCK):") :]
    assert loop.count("tl.load(") == 3
    assert re.search(r"win1 = win0\n\s+win0 = tmp\d+", loop), loop


def _offsets(doc: dict[str, Any]) -> list[tuple[int, int]]:
    value = doc["nodes"][0]["value"]
    return [
        (int(a), int(b))
        for a, b in re.findall(r"\(h \+ (-?\d+) >= 0\) & \(h \+ -?\d+ < \d+\) & \(w \+ (-?\d+)", value)
    ]


def _expected_counts(offsets: list[tuple[int, int]], step: tuple[int, int]) -> tuple[int, int]:
    """(values a row takes from the row before, values a row needs) of a stencil whose terms are
    `offsets` (in chain order) walking one `step` a row. A term is carried when the term one step
    further exists (it read the same element a row earlier). The chain's head, its longest run
    of carried terms from the first (at least two), is carried as one value, computed a row early
    from the terms it is carried from; unless a carried term outside the head takes its value from
    a head term no head term is carried from."""
    src = {o: (o[0] + step[0], o[1] + step[1]) for o in offsets}
    j = 0
    while j < len(offsets) and src[offsets[j]] in offsets:
        j += 1
    head, tail = offsets[:j], offsets[j:]
    head_sources = {src[o] for o in head}
    if j < 2 or any(src[o] in set(head) - head_sources for o in tail if src[o] in offsets):
        return sum(src[o] in offsets for o in offsets), len(offsets)
    needed = set(tail) | head_sources
    return sum(src[o] in offsets for o in needed) + 1, len(needed) + 1


@settings(max_examples=examples(40, quick=5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stencils())
def test_random_stencils_match_the_reference(doc: dict[str, Any]) -> None:
    g = load_text(json.dumps(doc), "stencil.json")
    offsets = _offsets(doc)
    for plan_graph, plan in ((g, unfused_plan(g)), *((s.graph, s.plan) for s in [optimize(g)])):
        src = check(plan_graph, plan, WINDOW)
        m = CARRIED.search(src)
        # Walking image rows (h), a load (dh, dw) reads what (dh + 1, dw) read one row earlier;
        # the emitter takes that window when at least 1/window_carry_ratio of the loads are carried. (It may
        # instead walk w, or nothing, when walking h carries too few.)
        by_h = sum((dh + 1, dw) in offsets for dh, dw in offsets)
        if m is not None and int(m.group(1)) > 1 and "ywalk" in src:
            counts = (int(m.group(2)), int(m.group(3)))
            assert counts[0] >= 1
            assert counts in (_expected_counts(offsets, (1, 0)), _expected_counts(offsets, (0, 1)))
        elif WINDOW.tuning.window_carry_ratio * by_h >= len(offsets) and by_h:
            raise AssertionError(f"walking h would carry {by_h} of {len(offsets)} loads; no window:\n{src}")


def test_three_by_three_window_carries_its_head_and_three_loads() -> None:
    """A 3x3 window as a chain of nine terms (Inductor's lowering of avg_pool2d): the first six
    terms, all carried, are carried as one value computed a row early from the six terms below
    them, in the chain's own order; three loads a row are carried, three are loaded."""
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    for layout in ("nhwc", "nchw"):
        g = load_text(json.dumps(stencil_doc(2, 6, 5, 3, layout, offsets, "float32", "sum")), "s.json")
        src = check(g, unfused_plan(g), WINDOW)
        m = CARRIED.search(src)
        assert m is not None and (m.group(2), m.group(3)) == ("4", "7"), src
        assert src.count("tl.load(") == 6 + 3  # six before the loop (the first row's), three a row
        loop = src[src.index("for ywalk in range(YBLOCK):") :]
        # the head: win0, then the terms 7..9 of this row in order
        assert re.search(r"tmp\d+ = win0 \+ tmp\d+\n", loop), loop
        # next row's head: the chain's first six terms from the rows' three carried and three new loads
        assert re.search(r"win0 = tmp\d+\n\s+win1 = tmp\d+\n\s+win2 = tmp\d+\n\s+win3 = tmp\d+", loop), loop


def test_carried_head_keeps_the_sources_of_other_nodes() -> None:
    """A second node of the kernel reads x two rows up, carried from the row above, a term only
    the first node's carried head reads: that load still runs every row, as the carry's source
    (three rows of x[., w] chained through the row), and both outputs match the reference."""
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    doc = stencil_doc(2, 6, 5, 3, "nhwc", offsets, "float32", "sum")
    base = "c + 3*w + 15*h + 90*n"
    doc["buffers"]["out2"] = {"shape": [2, 6, 5, 3], "dtype": "float32", "role": "output"}
    doc["nodes"].append(
        {
            "name": "n1",
            "loops": doc["nodes"][0]["loops"],
            "store": f"out2[{base}]",
            "value": f"5.0 * masked((h - 2 >= 0) & (h - 2 < 6) & (w + 0 >= 0) & (w + 0 < 5), x[{base} - 30], 0.0)",
        }
    )
    g = load_text(json.dumps(doc), "two.json")
    src = check(g, plan_of(g, [["n0", "n1"]]), WINDOW)
    m = CARRIED.search(src)
    # n0's head, its three loads of row h, and x[h - 1, w] (the source of n1's x[h - 2, w])
    assert m is not None and (m.group(2), m.group(3)) == ("6", "9"), src
    loop = src[src.index("for ywalk in range(YBLOCK):") :]
    assert loop.count("tl.load(") == 3
    assert re.search(r"(win\d+) = (win\d+)\n(?:.*\n)*?\s+\2 = win\d+", loop), loop


def test_no_window_without_overlap_between_rows() -> None:
    """Pointwise kernels whose loads never meet again one row later keep their usual tile."""
    g = load_text(
        json.dumps(stencil_doc(2, 6, 5, 3, "nhwc", [(0, -1), (0, 1), (2, 0)], "float32", "sum")), "s.json"
    )
    src = check(g, unfused_plan(g), dataclasses.replace(WINDOW, window_band=8))
    m = CARRIED.search(src)
    # walking w carries (0, -1) from (0, 1)? no: (0, -1) needs (0, 0). Walking h: (2, 0) needs (3, 0).
    assert m is None, src


def test_windows_off_by_option() -> None:
    offsets = [(dh, 0) for dh in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(2, 6, 5, 3, "nhwc", offsets, "float32", "sum")), "s.json")
    assert "sliding window" in emit_module(g, unfused_plan(g), options=WINDOW)
    off = dataclasses.replace(WINDOW, window_min_row=0)
    assert "sliding window" not in emit_module(g, unfused_plan(g), options=off)


def test_unrolled_pooling_window_and_bands_aligned_to_the_image() -> None:
    """avg_pool2d as a 9-point reduction (unrolled): walked over h in bands that divide H, so a band
    never runs from one image into the next."""
    from tests.fixtures.workloads import WORKLOADS

    for h, band in ((6, 6), (7, 7), (4, 4), (9, 3)):
        doc, _ = WORKLOADS["avgpool_cl"](n=2, c=4, h=h, w=3)
        g = load_text(json.dumps(doc), "pool.json")
        stage = optimize(g)
        src = check(stage.graph, stage.plan, WINDOW)
        m = CARRIED.search(src)
        assert m is not None and int(m.group(1)) == band and m.group(2) == "6", src


# -- keys -------------------------------------------------------------------------------------------
def _kc(period: int, digits: dict[str, Digit | None]) -> KeyContext:
    return KeyContext(digits, {"v": 10**6}, {"yindex": 64, "xindex": 16}, {}, Walk("yindex", period), {})


def test_keys_shift_the_row_digit() -> None:
    v = Var("v")
    kc = _kc(8, {"v": Digit("yindex", 1, None)})
    assert index_key(Binary("add", Binary("mul", Const(16), v), Const(16)), kc, -1) == index_key(
        Binary("mul", Const(16), v), kc, 0
    )
    # (y + 1) % 8 == y % 8 + 1 inside a band aligned to 8 rows
    kc8 = _kc(8, {"v": Digit("yindex", 1, 8)})
    assert index_key(Binary("add", v, Const(1)), kc8, -1) == index_key(v, kc8, 0)


def test_keys_refuse_row_digits_that_wrap_inside_a_band() -> None:
    kc = _kc(8, {"v": Digit("yindex", 1, 6)})  # y % 6 wraps inside a band of 8 rows
    assert index_key(Var("v"), kc, 0) is None
    kc = _kc(8, {"v": Digit("yindex", 4, None)})  # y // 4 changes inside a band of 8 rows
    assert index_key(Var("v"), kc, 0) is None
    kc = _kc(4, {"v": Digit("yindex", 8, None)})  # y // 8 is constant inside a band of 4 rows
    assert index_key(Var("v"), kc, 0) == index_key(Var("v"), kc, 1)


def test_keys_refuse_loads_inside_masks() -> None:
    kc = _kc(8, {"v": Digit("yindex", 1, None)})
    cond = Binary("gt", Load("m", Var("v")), Const(0))
    assert cond_key(cond, kc, 0) is None


def test_carry_plan_pairs_each_load_with_the_row_before() -> None:
    a, b, c = ("x", 1), ("x", 2), ("x", 3)
    # b at row y is a at row y - 1; c at row y is b at row y - 1
    plan = carry_plan([WindowLoad(a, b), WindowLoad(b, c), WindowLoad(c, None)])
    assert plan == {b: a, c: b}
    assert carry_plan([WindowLoad(("load", "tmp1"), None)]) == {}


def test_window_source_is_deterministic() -> None:
    offsets = [(dh, dw) for dh in (-1, 0, 1) for dw in (-1, 0, 1)]
    g = graph(json.dumps(stencil_doc(2, 6, 5, 3, "nhwc", offsets, "bfloat16", "max")))
    assert emit_module(g, unfused_plan(g), options=WINDOW) == emit_module(g, unfused_plan(g), options=WINDOW)


def test_window_autotune_configs() -> None:
    """--autotune: the band and tile vary over whole bands that divide the rows' period."""
    from fuseopt.runtime.module import load_module
    from tests.fixtures.workloads import WORKLOADS

    doc, _ = WORKLOADS["avgpool_cl"](n=2, c=8, h=6, w=5)
    stage = optimize(load_text(json.dumps(doc), "pool.json"))
    src = emit_module(stage.graph, stage.plan, options=dataclasses.replace(WINDOW, autotune=True))
    assert "sliding window, 6/3 (autotuned) rows a program" in src
    assert 'triton.Config({"YBLOCK": 6, "XBLOCK": 8}, num_warps=1)' in src
    assert 'triton.Config({"YBLOCK": 3, "XBLOCK": 8}, num_warps=1)' in src
    assert '[_grid({"XBLOCK": 40}, {"YBLOCK": 12})](' in src
    load_module(src)  # decorating needs no driver; running autotune does (GPU only)


def test_window_with_int64_indices() -> None:
    """A window over an image batch past int32 indexing: program ids and the band's rows widened
    (generation only: the tensor would not fit in a test)."""
    offsets = [(dh, 0) for dh in (-1, 0, 1)]
    g = load_text(json.dumps(stencil_doc(4096, 64, 128, 128, "nhwc", offsets, "bfloat16", "sum")), "big.json")
    src = emit_module(g, unfused_plan(g))
    assert CARRIED.search(src) is not None
    assert "tl.program_id(1).to(tl.int64) * YBLOCK + tl.zeros([1], tl.int64)" in src
    assert "tl.program_id(0).to(tl.int64) * XBLOCK" in src
    compile(src, "kernels.py", "exec")
