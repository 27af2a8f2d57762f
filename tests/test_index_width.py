"""Index widths: a kernel computes its indices in int64 wherever some intermediate of an index can
leave int32 (not only its final value), the reference computes them exactly, and generated code
and the reference agree on indices whose intermediates cross 2**31 and 2**32 on their way to a
small index (sums before a floor division, products before one, moduli of big multiples).

The graphs stay tiny: the big terms cancel (`(i0 * 2**31 + i1) % 2**31` is i1), so storages are a
few elements while the arithmetic runs past int32 (or int64, for the interpreter's checks).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.codegen.common import INT32_MAX
from fuseopt.interp import InterpError, run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.bounds import index_magnitude
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.ir.parser import parse_expr_text
from fuseopt.passes.loop_transform import simplify_graph
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime import compare_with_reference
from tests.strategies import unfused_plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on masked lanes

# Small blocks: several programs and masked lanes past the loop box.
SMALL = CodegenOptions(max_xblock=4, max_yblock=2, max_r0_block=2, unroll_rnumel=0)
N0, N1 = 3, 5


def _doc(value: str, out_dtype: str = "float32", storage: int = 16) -> dict[str, Any]:
    return {
        "format": "fuseopt-graph/1",
        "name": "wide",
        "buffers": {
            "x": {"shape": [storage], "dtype": "float32", "role": "input"},
            "out": {"shape": [N0, N1], "dtype": out_dtype, "role": "output"},
        },
        "nodes": [
            {"name": "n0", "loops": [["i0", N0], ["i1", N1]], "store": f"out[{N1}*i0 + i1]", "value": value}
        ],
    }


def _graph(doc: dict[str, Any]) -> Graph:
    return load_text(json.dumps(doc), "wide.json")


def _int64_kernel(src: str) -> bool:
    return "tl.program_id(0).to(tl.int64)" in src


def _magnitude(g: Graph) -> int:
    """The largest intermediate of any index or index() value of the graph, over its loop boxes."""
    best = 0
    for node in g.nodes:
        assert isinstance(node, ComputeNode)
        for e in [node.store.index, *(n.index for n in _indexed(node))]:
            m = index_magnitude(e, node.var_sizes)
            assert m is not None
            best = max(best, m)
    return best


def _indexed(node: ComputeNode) -> list[Any]:
    from fuseopt.ir.expr import IndexValue, Load, walk

    return [e for e in walk(node.value) if isinstance(e, Load | IndexValue)]


def _check(g: Graph) -> None:
    """Generated code equals the reference, unfused and as planned, and runs in int64 wherever an
    intermediate of an index it prints (`simplify_graph`'s) leaves int32 over the loop box."""
    wide = _magnitude(simplify_graph(g)) > INT32_MAX
    for plan in (unfused_plan(g), optimize(g).plan):
        src = emit_module(g, plan, options=SMALL)
        if wide:
            assert _int64_kernel(src), src
        compare_with_reference(g, plan, source=src)


# -- the classes of the issue, one example each -----------------------------------------------------
@pytest.mark.parametrize(
    "index",
    [
        "(i1 + 2147483645) // 268435456 - 7",  # a sum past int32, then a floor division
        "(i1 + 1099511627776) // 274877906944 - 4 + i0",  # at int64 width: literals past int32
        "(i1 * 2147483648) // 2147483648",  # a product past int32, then a floor division
        "(i0 * 2147483648 + i1) % 2147483648",  # a modulo of a big multiple
        "(i0 * 4294967296 + i1 * 3) % 4294967296 // 3",  # past 2**32: a wrap would look right
        "(2147483647 - i1) % 4",  # near the top of int32, no overflow: int32 stays
        # The same classes where no simplification takes the large intermediate out (the divisor
        # does not divide the coefficient): int64 arithmetic in the kernel.
        "(i1 * 1099511627776) // 1099511627775 + i0",  # literals past int32
        "(i1 * 2147483648) // 2147483649",  # a product past int32, then a floor division
        "(i0 * 2147483648 + i1) % 2147483647",  # a modulo of a big multiple
        "(i0 * 4294967296 + i1 * 3) % 4294967295 // 3",  # past 2**32
    ],
)
def test_index_intermediates_past_int32_load_the_right_element(index: str) -> None:
    g = _graph(_doc(f"x[{index}]"))
    _check(g)
    got = run_graph(g)["out"].reshape(N0, N1)
    x = run_graph(g)["x"]
    want = torch.tensor(
        [[x[_py(index, i0, i1)] for i1 in range(N1)] for i0 in range(N0)], dtype=torch.float32
    )
    assert torch.equal(got, want)


@pytest.mark.parametrize(
    "index",
    [
        "(i1 + 1099511627776) // 274877906944 - 4 + i0",
        "(i1 * 2147483648) // 2147483648",
        "(i0 * 4294967296 + i1 * 3) % 4294967296 // 3",
    ],
)
def test_an_index_that_simplifies_is_printed_simply_in_int32(index: str) -> None:
    """Code generation prints an index as simple as the loop box allows (`simplify_graph`): a loop
    variable here, with no intermediate past int32 left, so the kernel's arithmetic stays int32."""
    g = _graph(_doc(f"x[{index}]"))
    src = emit_module(g, unfused_plan(g), options=SMALL)
    assert re.search(r"tl\.load\(x_ptr \+ x\d, xmask", src) and not _int64_kernel(src), src


def _py(index: str, i0: int, i1: int) -> int:
    """The index in Python's exact integers (the graph language's // and % are Python's)."""
    from tests.test_bounds import evaluate

    return evaluate(parse_expr_text(index), {"i0": i0, "i1": i1})


def test_index_values_past_int32() -> None:
    g = _graph(_doc("index((i0 * 2147483648 + i1) // 1073741824) + (i0 * 3000000000 + i1) % 7", "int64"))
    _check(g)
    got = run_graph(g)["out"].tolist()
    assert got == [(i0 * 2 + (i0 * 3000000000 + i1) % 7) for i0 in range(N0) for i1 in range(N1)]


def test_final_value_in_range_is_not_enough() -> None:
    """Only the final interval of `(i1 + 2**31 - 3) // 2**28` fits int32 (the old rule); its sum
    does not, and the kernel is int64. A kernel whose every intermediate fits stays int32."""
    wide = emit_module(g := _graph(_doc("x[(i1 + 2147483645) // 268435456 - 7]")), unfused_plan(g))
    assert _int64_kernel(wide)
    narrow = emit_module(g := _graph(_doc("x[(i1 + 1073741824) // 268435456 - 4]")), unfused_plan(g))
    assert "tl.int64" not in narrow


def test_padded_lanes_count() -> None:
    """The loop box's last index is INT32_MAX, but the block's lanes past it (masked off from
    memory) compute up to 3 * 23 more: int64. Generation only (2**31 elements)."""
    doc = {
        "format": "fuseopt-graph/1",
        "name": "edge",
        "buffers": {
            "x": {"shape": [INT32_MAX + 1], "dtype": "int8", "role": "input"},
            "out": {"shape": [1000], "dtype": "int8", "role": "output"},
        },
        "nodes": [
            {"name": "n0", "loops": [["i0", 1000]], "store": "out[i0]", "value": "x[2147480650 + 3*i0]"}
        ],
    }
    g = _graph(doc)
    assert _int64_kernel(emit_module(g, unfused_plan(g)))
    doc["nodes"][0]["value"] = "x[2147480000 + 2*i0]"  # its lanes up to 1023 stay within int32
    g = _graph(doc)
    assert "tl.int64" not in emit_module(g, unfused_plan(g))


def test_indirect_indices_by_what_a_valid_run_loads() -> None:
    """A load that is a term of its index only loads values that keep the access in bounds (the
    reference checks every indirect access), so a lookup into a small table is int32 indexing
    whatever the index buffer's dtype; inside a `//` the load's dtype range counts, and an int64
    index buffer there makes the kernel int64."""
    doc = _doc("x[ids[i1] * 2 + 1]")
    doc["buffers"]["ids"] = {"shape": [N1], "dtype": "int64", "role": "input"}
    g = _graph(doc)
    assert "tl.int64" not in emit_module(g, unfused_plan(g)).split("def call(")[0]
    compare_with_reference(g, unfused_plan(g))
    for dtype, wide in (("int64", True), ("int32", True), ("int16", False)):
        doc = _doc("x[ids[i1] // 2]")
        doc["buffers"]["ids"] = {"shape": [N1], "dtype": dtype, "role": "input"}
        g = _graph(doc)
        assert _int64_kernel(emit_module(g, unfused_plan(g))) == wide, dtype
        compare_with_reference(g, unfused_plan(g))


def test_indirect_bounds_hold_on_valid_runs_only() -> None:
    """An index past the table (a run the reference rejects) is not what the bound is for."""
    doc = _doc("x[ids[i1] * 2 + 1]")
    doc["buffers"]["ids"] = {"shape": [N1], "dtype": "int64", "role": "input"}
    g = _graph(doc)
    bad = {"x": torch.zeros(16), "ids": torch.tensor([0, 1, 2**40, 3, 4])}
    with pytest.raises(InterpError, match="indirect load"):
        run_graph(g, bad)


def test_reduction_index_past_int32() -> None:
    doc = {
        "format": "fuseopt-graph/1",
        "name": "wide_red",
        "buffers": {
            "x": {"shape": [N0, N1], "dtype": "float32", "role": "input"},
            "out": {"shape": [N0], "dtype": "float32", "role": "output"},
        },
        "nodes": [
            {
                "name": "n0",
                "loops": [["i0", N0]],
                "reduce": [["r0", N1]],
                "store": "out[i0]",
                "value": f"sum(x[(r0 * 2147483649 + {N1}*i0 + 17179869184) % 2147483648])",
            }
        ],
    }
    g = _graph(doc)
    for options in (
        SMALL,
        CodegenOptions(persistent_rnumel=0, max_xblock=2, max_r0_block=2, unroll_rnumel=0),
    ):
        src = emit_module(g, unfused_plan(g), options=options)
        assert _int64_kernel(src)
        compare_with_reference(g, unfused_plan(g), source=src, rtol=1e-5, atol=1e-5)


# -- the reference: exact, or a located error ------------------------------------------------------
def test_reference_never_wraps_an_index() -> None:
    """(2**64 + 1) * i0 % 3 is 2*i0 % 3; wrapped through int64 it would be i0 % 3. Validation
    proves x[4..6]; the reference names the overflowing sub-expression instead of reading x[5]."""
    g = _graph(_doc("x[(i0 * 4611686018427387904 * 4 + i0) % 3 + 4]"))
    with pytest.raises(InterpError, match=r"n0.*overflows int64 in i0 \* 4611686018427387904 at the point"):
        run_graph(g)


def test_reference_checks_indirect_indices_for_overflow() -> None:
    doc = _doc("x[(ids[i1] * 4611686018427387904 + i1) % 4]")
    doc["buffers"]["ids"] = {"shape": [N1], "dtype": "int64", "role": "input"}
    g = _graph(doc)
    inputs = {"x": torch.arange(16, dtype=torch.float32), "ids": torch.tensor([0, 1, 0, 1, 0])}
    st = run_graph(g, inputs)  # ids * 2**62 fits: checked, exact
    assert st["out"].reshape(N0, N1)[0].tolist() == [
        (i * 2**62 * k + i) % 4 for i, k in enumerate([0, 1, 0, 1, 0])
    ]
    inputs["ids"] = torch.tensor([0, 1, 2, 1, 0])  # 2 * 2**62 leaves int64
    with pytest.raises(
        InterpError, match=r"overflows int64 in ids\[i1\] \* 4611686018427387904 at the point \(i0=0, i1=2\)"
    ):
        run_graph(g, inputs)


def test_masked_lanes_do_not_overflow_the_check() -> None:
    """Where the mask is off, the index is not used: an overflow there is no error."""
    g = _graph(_doc("masked(i1 < 2, x[(i1 * 4611686018427387904 + i1) % 4], 0.0)"))
    st = run_graph(g)
    assert st["out"].reshape(N0, N1)[:, 2:].abs().sum() == 0


# -- generated: random detours through big intermediates -------------------------------------------
def _detour(draw: Any, e: str, top: int) -> tuple[str, int]:
    """An expression equal to `e` (values in [0, top]) through intermediates past int32."""
    kind = draw(st.sampled_from(("mod", "var_mod", "div", "mul_div", "sum_div")))
    big = draw(st.sampled_from((2**31, 2**31 + 3, 3 * 2**30, 2**32 + 1, 2**33 - 1, 2**40)))
    v = draw(st.sampled_from(("i0", "i1")))
    if kind == "mod":  # (K*M + e) % M, M > e
        k = draw(st.integers(1, 2**20))
        return f"({k * big} + {e}) % {big}", top
    if kind == "var_mod":  # (v*M + e) % M
        return f"({v} * {big} + {e}) % {big}", top
    if kind == "div":  # (e*c + K) // c - K // c
        c = draw(st.integers(2, 2**12))
        return f"(({e}) * {c} + {big}) // {c} - {big // c}", top
    if kind == "mul_div":  # (e + K) * c // c - K
        c = draw(st.integers(2, 2**12))
        return f"(({e}) + {big}) * {c} // {c} - {big}", top
    c = draw(st.integers(2, 64))  # (e + M*c) // c - M: e // c
    return f"(({e}) + {big * c}) // {c} - {big}", top // c


@st.composite
def wide_graphs(draw: Any) -> dict[str, Any]:
    a, b, c = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 4))
    e, top = f"{a}*i0 + {b}*i1 + {c}", a * (N0 - 1) + b * (N1 - 1) + c
    for _ in range(draw(st.integers(1, 2))):
        e, top = _detour(draw, e, top)
    f, _ = _detour(draw, "i0 + i1", N0 + N1 - 2)
    value = f"x[{e}] + cast(index({f}), float32)"
    if draw(st.booleans()):
        value = f"masked(i1 >= 1, x[{e}], 0.5) + cast(index({f}), float32)"
    return _doc(value, storage=top + 1)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wide_graphs())
def test_random_detours_past_int32_match_the_reference(doc: dict[str, Any]) -> None:
    _check(_graph(doc))
