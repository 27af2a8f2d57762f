"""The reference interpreter's semantics: loads, masks, indirect indexing, reductions, promotion,
low precision, library calls, chunking, inputs and run-time errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from fuseopt.errors import InputError
from fuseopt.interp import InterpError, logical_outputs, logical_view, make_inputs, run_graph
from fuseopt.interp.inputs import DEFAULT_INT_RANGE, index_value_ranges
from fuseopt.interp.run import chunks
from fuseopt.ir.graph import Graph
from fuseopt.ir.parser import parse_expr_text
from tests.test_bounds import evaluate
from tests.torch_programs import inputs_from, make_graph

Tensor = torch.Tensor


def _io(shape: list[int], dtype: str = "float32", role: str = "input", **extra: object) -> dict[str, object]:
    return {"shape": shape, "dtype": dtype, "role": role, **extra}


def _node(value: str, store: str, loops: list[list[object]], reduce: list[list[object]] | None = None,
          name: str = "n0") -> dict[str, object]:  # fmt: skip
    out: dict[str, object] = {"name": name, "loops": loops, "store": store, "value": value}
    if reduce is not None:
        out["reduce"] = reduce
    return out


# -- storages and views ----------------------------------------------------------------------------
def test_returns_every_buffer_in_order_and_inputs_untouched() -> None:
    g = make_graph(
        {"x": _io([4, 3]), "t": _io([4, 3], role="intermediate"), "out": _io([4, 3], role="output")},
        [_node("x[3*i0 + i1] * 2", "t[3*i0 + i1]", [["i0", 4], ["i1", 3]], name="a"),
         _node("t[3*i0 + i1] + 1", "out[3*i0 + i1]", [["i0", 4], ["i1", 3]], name="b")],
    )  # fmt: skip
    inputs = make_inputs(g, seed=3)
    before = inputs["x"].clone()
    st = run_graph(g, inputs)
    assert list(st) == ["x", "t", "out"]
    assert st["x"] is inputs["x"] and torch.equal(st["x"], before)
    torch.testing.assert_close(st["out"], before * 2 + 1)


def test_logical_view_is_as_strided() -> None:
    g = make_graph(
        {"x": _io([3, 4], stride=[1, 5], offset=2), "out": _io([3, 4], role="output")},
        [_node("x[2 + i0 + 5*i1]", "out[4*i0 + i1]", [["i0", 3], ["i1", 4]])],
    )
    st = run_graph(g)
    assert st["x"].numel() == g.buffer("x").storage_size == 2 + 2 + 15 + 1
    view = logical_view(g, "x", st["x"])
    assert torch.equal(view, torch.as_strided(st["x"], (3, 4), (1, 5), 2))
    assert torch.equal(logical_view(g, "out", st["out"]), view)


def test_store_through_strides_leaves_gaps_zero() -> None:
    g = make_graph(
        {"x": _io([2, 3]), "out": _io([2, 3], role="output", stride=[1, 4])},
        [_node("x[3*i0 + i1]", "out[i0 + 4*i1]", [["i0", 2], ["i1", 3]])],
    )
    st = run_graph(g)
    assert torch.equal(logical_view(g, "out", st["out"]), st["x"].reshape(2, 3))
    assert st["out"].numel() == 1 + 2 * 4 + 1
    assert st["out"][[2, 3, 6, 7]].eq(0).all()


# -- masked loads ----------------------------------------------------------------------------------
def test_masked_load_is_zero_padding() -> None:
    n = 10
    g = make_graph(
        {"x": _io([n]), "out": _io([n], role="output")},
        [_node("masked(i0 >= 1, x[i0 - 1], 0.0) + x[i0] + masked(i0 + 1 < 10, x[i0 + 1], 0.0)", "out[i0]",
               [["i0", n]])],
    )  # fmt: skip
    st = run_graph(g)
    x = st["x"]
    want = F.pad(x, (1, 1))[:-2] + x + F.pad(x, (1, 1))[2:]
    torch.testing.assert_close(st["out"], want)


def test_masked_body_runs_only_where_cond_holds() -> None:
    # Non-linear condition: the bounds are checked at run time, and hold where cond holds.
    g = make_graph(
        {"x": _io([8]), "d": _io([8], "int64"), "out": _io([8], "int64", role="output"),
         "f": _io([8], role="output")},
        [_node("masked(d[i0] != 0, 100 // d[i0], -1)", "out[i0]", [["i0", 8]]),
         _node("masked(i0 % 2 == 1, x[i0 - 1], -1.0)", "f[i0]", [["i0", 8]], name="n1")],
    )  # fmt: skip
    d = torch.tensor([0, 3, 0, -7, 1, 0, 2, 5])
    x = torch.arange(8.0)
    st = run_graph(g, inputs_from(g, x=x, d=d))
    assert st["out"].tolist() == [-1, 33, -1, -15, 100, -1, 50, 20]
    assert st["f"].tolist() == [-1.0, 0.0, -1.0, 2.0, -1.0, 4.0, -1.0, 6.0]


def test_nested_masks() -> None:
    g = make_graph(
        {"x": _io([6]), "out": _io([6], role="output")},
        [_node("masked(i0 >= 1, masked(i0 >= 2, x[i0 - 2], 5.0) + x[i0 - 1], 7.0)", "out[i0]", [["i0", 6]])],
    )
    x = torch.arange(6.0) * 10
    st = run_graph(g, inputs_from(g, x=x))
    assert st["out"].tolist() == [7.0, 5.0, 10.0, 30.0, 50.0, 70.0]


def test_a_masked_floor_divided_index_reads_its_own_element() -> None:
    """Masked-off lanes must not see a rewritten index: the divisor-1 guard of value arithmetic
    once turned `x[i0 // 2]` into `x[i0]` there (IndexError for i0 >= 4 on a 4-element x)."""
    g = make_graph(
        {"x": _io([4]), "out": _io([8], role="output")},
        [_node("masked(i0 < 3, x[i0 // 2] + cast(index(i0 % 3), float32), -1.0)", "out[i0]", [["i0", 8]])],
    )
    x = torch.tensor([10.0, 20.0, 30.0, 40.0])
    assert run_graph(g, inputs_from(g, x=x))["out"].tolist() == [10.0, 11.0, 22.0] + [-1.0] * 5


_INDEX_OPS = ("+", "*", "//", "%", "min", "max")


@st.composite
def _masked_index_graphs(draw: st.DrawFn) -> tuple[Graph, list[list[int]], str, str]:
    """A node reading x[e] under a mask, e built of + * // % min max over two loop variables
    (non-negative, so its largest value sizes x)."""
    n0, n1 = draw(st.integers(1, 5)), draw(st.integers(1, 6))

    def expr(depth: int) -> str:
        if depth == 0 or draw(st.integers(0, 2)) == 0:
            return draw(st.sampled_from(("i0", "i1", "i0", "i1", "2", "5")))
        op = draw(st.sampled_from(_INDEX_OPS))
        a = expr(depth - 1)
        if op in ("//", "%", "*"):
            return f"({a}) {op} {draw(st.integers(1, 4))}"
        b = expr(depth - 1)
        return f"{op}({a}, {b})" if op in ("min", "max") else f"({a}) + ({b})"

    index = expr(3)
    cond = draw(
        st.sampled_from(
            (f"i0 < {draw(st.integers(0, n0))}", f"i0 + i1 >= {draw(st.integers(0, n0 + n1))}",
             "i1 % 2 == 0", f"(i0 >= 1) & (i1 < {draw(st.integers(0, n1))})")
        )
    )  # fmt: skip
    e = parse_expr_text(index)
    box = [[evaluate(e, {"i0": a, "i1": b}) for b in range(n1)] for a in range(n0)]
    size = max(max(row) for row in box) + 1
    value = f"masked({cond}, x[{index}] + cast(index({index}), float32), -1.0)"
    g = make_graph(
        {"x": _io([size]), "out": _io([n0, n1], role="output")},
        [_node(value, f"out[{n1}*i0 + i1]", [["i0", n0], ["i1", n1]])],
    )
    return g, box, cond, index


@settings(max_examples=60, deadline=None)
@given(_masked_index_graphs())
def test_masked_loads_with_divided_indices_match_brute_force(
    case: tuple[Graph, list[list[int]], str, str],
) -> None:
    g, box, cond, _ = case
    st_ = run_graph(g)
    x, out = st_["x"], st_["out"].reshape(len(box), len(box[0]))
    c = parse_expr_text(cond)
    for i0, row in enumerate(box):
        for i1, k in enumerate(row):
            want = float(x[k]) + k if evaluate(c, {"i0": i0, "i1": i1}) else -1.0
            assert float(out[i0, i1]) == pytest.approx(want), (cond, i0, i1)


def test_masked_load_out_of_bounds_where_cond_holds_names_the_node() -> None:
    g = make_graph(
        {"x": _io([8]), "out": _io([8], role="output")},
        [_node("masked(i0 % 2 == 0, x[i0 - 1], 0.0)", "out[i0]", [["i0", 8]], name="pad_left")],
    )
    with pytest.raises(InterpError) as info:
        run_graph(g)
    msg = str(info.value)
    assert "pad_left" in msg and "masked load" in msg and "-1" in msg and "i0=0" in msg
    assert info.value.diagnostics[0].pointer == "/nodes/0/value"
    assert isinstance(info.value, InputError) and info.value.exit_code == 2


def test_where_evaluates_both_sides() -> None:
    g = make_graph(
        {"x": _io([5]), "out": _io([5], role="output")},
        [_node("where(x[i0] > 0, x[i0], 0.5 * x[i0])", "out[i0]", [["i0", 5]])],
    )
    st = run_graph(g)
    torch.testing.assert_close(st["out"], torch.where(st["x"] > 0, st["x"], 0.5 * st["x"]))


# -- indirect loads and index() --------------------------------------------------------------------
def _gather_graph() -> Graph:
    return make_graph(
        {"table": _io([10, 8]), "ids": _io([5], "int64"), "out": _io([5, 8], role="output")},
        [_node("table[8*ids[i0] + i1]", "out[8*i0 + i1]", [["i0", 5], ["i1", 8]], name="embed")],
    )


def test_indirect_load_gathers_and_inputs_stay_in_bounds() -> None:
    g = _gather_graph()
    assert index_value_ranges(g) == {"ids": (0, 9)}
    for seed in range(5):
        st = run_graph(g, seed=seed)
        table = st["table"].reshape(10, 8)
        assert int(st["ids"].min()) >= 0 and int(st["ids"].max()) <= 9
        assert torch.equal(st["out"].reshape(5, 8), table[st["ids"]])


def test_indirect_load_out_of_bounds_names_the_node() -> None:
    g = _gather_graph()
    inputs = make_inputs(g)
    inputs["ids"] = torch.tensor([1, 2, 10, 0, 3])
    with pytest.raises(InterpError) as info:
        run_graph(g, inputs)
    msg = str(info.value)
    assert "'embed'" in msg and "indirect load" in msg and "80" in msg and "i0=2" in msg
    assert info.value.node == "embed"


def test_negative_indirect_index_is_an_error_not_a_wraparound() -> None:
    g = _gather_graph()
    inputs = make_inputs(g)
    inputs["ids"] = torch.tensor([0, -1, 0, 0, 0])
    with pytest.raises(InterpError, match="embed"):
        run_graph(g, inputs)


def test_indirect_index_range_with_offset_and_negative_coefficient() -> None:
    g = make_graph(
        {"x": _io([50]), "ids": _io([4], "int32"), "out": _io([4, 3], role="output")},
        [_node("x[40 - 5*ids[i0] + i1]", "out[3*i0 + i1]", [["i0", 4], ["i1", 3]])],
    )
    # 0 <= 40 - 5v + i1 <= 49 for i1 in [0, 2]  =>  v in [0, 8]
    assert index_value_ranges(g) == {"ids": (0, 8)}
    run_graph(g, seed=1)


def test_index_value() -> None:
    g = make_graph(
        {"x": _io([3]), "out": _io([3, 4], "int64", role="output"), "f": _io([3, 4], role="output")},
        [_node("index(4*i0 + i1) - i1", "out[4*i0 + i1]", [["i0", 3], ["i1", 4]]),
         _node("x[i0] * index(i1 // 2)", "f[4*i0 + i1]", [["i0", 3], ["i1", 4]], name="n1")],
    )  # fmt: skip
    st = run_graph(g)
    assert st["out"].dtype == torch.int64
    assert st["out"].reshape(3, 4).tolist() == [[0] * 4, [4] * 4, [8] * 4]
    torch.testing.assert_close(st["f"].reshape(3, 4), st["x"][:, None] * torch.tensor([0.0, 0, 1, 1]))


# -- reductions ------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "argmax", "argmin", "any"])
def test_reductions_over_the_flattened_reduce_box(op: str) -> None:
    out_dtype = {"argmax": "int64", "argmin": "int64", "any": "bool"}.get(op, "float32")
    value = f"{op}(x[6*i0 + 3*r0 + r1] > 0)" if op == "any" else f"{op}(x[6*i0 + 3*r0 + r1])"
    g = make_graph(
        {"x": _io([4, 2, 3]), "out": _io([4], out_dtype, role="output")},
        [_node(value, "out[i0]", [["i0", 4]], [["r0", 2], ["r1", 3]])],
    )
    st = run_graph(g, seed=2)
    x = st["x"].reshape(4, 6)
    want = {
        "sum": lambda: x.sum(-1), "prod": lambda: x.prod(-1), "max": lambda: x.amax(-1),
        "min": lambda: x.amin(-1), "argmax": lambda: x.argmax(-1), "argmin": lambda: x.argmin(-1),
        "any": lambda: (x > 0).any(-1),
    }[op]()  # fmt: skip
    torch.testing.assert_close(st["out"], want)


def test_argmax_argmin_ties_take_the_first_occurrence() -> None:
    g = make_graph(
        {"x": _io([3, 2, 2], "int32"), "amax": _io([3], "int64", role="output"),
         "amin": _io([3], "int64", role="output"), "bmax": _io([3], "int64", role="output")},
        [_node("argmax(x[4*i0 + 2*r0 + r1])", "amax[i0]", [["i0", 3]], [["r0", 2], ["r1", 2]]),
         _node("argmin(x[4*i0 + 2*r0 + r1])", "amin[i0]", [["i0", 3]], [["r0", 2], ["r1", 2]], name="n1"),
         _node("argmax(x[4*i0 + 2*r0 + r1] > 1)", "bmax[i0]", [["i0", 3]], [["r0", 2], ["r1", 2]], name="n2")],
    )  # fmt: skip
    x = torch.tensor([[1, 3, 3, 2], [5, 5, 5, 5], [2, 0, 1, 0]], dtype=torch.int32)
    st = run_graph(g, inputs_from(g, x=x))
    assert st["amax"].tolist() == [1, 0, 0]
    assert st["amin"].tolist() == [0, 0, 1]
    assert st["bmax"].tolist() == [1, 0, 0]


def test_sum_of_ints_and_bools_accumulates_in_int64() -> None:
    g = make_graph(
        {"x": _io([2, 3], "int8"), "b": _io([2, 3], "bool"), "s": _io([2], "int64", role="output"),
         "c": _io([2], "int64", role="output")},
        [_node("sum(x[3*i0 + r0])", "s[i0]", [["i0", 2]], [["r0", 3]]),
         _node("sum(b[3*i0 + r0])", "c[i0]", [["i0", 2]], [["r0", 3]], name="n1")],
    )  # fmt: skip
    x = torch.tensor([[100, 100, 100], [-128, -128, 1]], dtype=torch.int8)
    b = torch.tensor([[True, False, True], [False, False, False]])
    st = run_graph(g, inputs_from(g, x=x, b=b))
    assert st["s"].tolist() == [300, -255]
    assert st["c"].tolist() == [2, 0]


def test_full_reduction_to_a_0d_buffer() -> None:
    g = make_graph(
        {"x": _io([3, 4]), "out": _io([], role="output"), "idx": _io([], "int64", role="output")},
        [_node("sum(x[4*r0 + r1])", "out[0]", [], [["r0", 3], ["r1", 4]]),
         _node("argmax(x[r0 + 4*r1])", "idx[0]", [], [["r0", 4], ["r1", 3]], name="n1")],
    )  # fmt: skip
    st = run_graph(g)
    torch.testing.assert_close(logical_view(g, "out", st["out"]), st["x"].sum())
    assert int(st["idx"]) == int(st["x"].reshape(3, 4).t().reshape(-1).argmax())


def test_reduction_of_a_value_independent_of_the_reduce_vars() -> None:
    g = make_graph(
        {"x": _io([3]), "out": _io([3], role="output")},
        [_node("sum(x[i0] + 1)", "out[i0]", [["i0", 3]], [["r0", 5]])],
    )
    st = run_graph(g)
    torch.testing.assert_close(st["out"], (st["x"] + 1) * 5)


# -- type promotion --------------------------------------------------------------------------------
def test_promotion_with_weak_literals() -> None:
    g = make_graph(
        {"i": _io([4], "int32"), "i8": _io([4], "int8"), "b": _io([4], "bool"), "d": _io([4], "float64"),
         "f": _io([4], role="output"), "w": _io([4], "int8", role="output"), "bi": _io([4], "int64", role="output"),
         "dd": _io([4], "float64", role="output"), "lt": _io([4], "bool", role="output"),
         "q": _io([4], role="output")},
        [_node("i[i0] + 1.5", "f[i0]", [["i0", 4]], name="int_plus_float_literal"),
         _node("i8[i0] + 300", "w[i0]", [["i0", 4]], name="int8_wraps"),
         _node("b[i0] + 1", "bi[i0]", [["i0", 4]], name="bool_plus_int"),
         _node("d[i0] + 0.1", "dd[i0]", [["i0", 4]], name="double_keeps_literal"),
         _node("i[i0] < 2.5", "lt[i0]", [["i0", 4]], name="compare_in_float"),
         _node("i[i0] / i[i0 // 2]", "q[i0]", [["i0", 4]], name="int_true_division")],
    )  # fmt: skip
    i = torch.tensor([1, 2, 3, -7], dtype=torch.int32)
    i8 = torch.tensor([1, 100, -100, 127], dtype=torch.int8)
    b = torch.tensor([True, False, True, False])
    d = torch.tensor([1.0, 2.0, 3.0, 1e-17], dtype=torch.float64)
    st = run_graph(g, inputs_from(g, i=i, i8=i8, b=b, d=d))
    assert st["f"].tolist() == [2.5, 3.5, 4.5, -5.5]
    assert torch.equal(st["w"], i8 + 300)
    assert st["bi"].tolist() == [2, 1, 2, 1]
    assert torch.equal(st["dd"], d + 0.1)
    assert st["lt"].tolist() == [True, True, False, True]
    torch.testing.assert_close(st["q"], i / i[torch.tensor([0, 0, 1, 1])])
    assert st["q"].tolist()[1] == 2.0 and st["q"].tolist()[3] == -3.5


def test_store_casts_to_the_buffer_dtype() -> None:
    g = make_graph(
        {"x": _io([4]), "i": _io([4], "int32", role="output"), "b": _io([4], "bool", role="output")},
        [_node("x[i0] * 10", "i[i0]", [["i0", 4]]), _node("x[i0]", "b[i0]", [["i0", 4]], name="n1")],
    )
    x = torch.tensor([0.25, -0.35, 0.0, 1.0])
    st = run_graph(g, inputs_from(g, x=x))
    assert st["i"].tolist() == [2, -3, 0, 10]
    assert st["b"].tolist() == [True, True, False, True]


def test_integer_division_by_zero_names_the_node() -> None:
    g = make_graph(
        {"a": _io([3], "int64"), "out": _io([3], "int64", role="output")},
        [_node("7 // a[i0]", "out[i0]", [["i0", 3]], name="divide")],
    )
    with pytest.raises(InterpError, match="divide"):
        run_graph(g, inputs_from(g, a=torch.tensor([1, 0, 2])))


# -- fp16 / bf16 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_low_precision_computes_in_float32_and_rounds_on_store_and_cast(low: str) -> None:
    g = make_graph(
        {"x": _io([4], low), "wide": _io([4], role="output"), "narrow": _io([4], low, role="output"),
         "rounded": _io([4], role="output")},
        [_node("x[i0] + 0.001", "wide[i0]", [["i0", 4]]),
         _node("x[i0] * 3 + x[i0] * 5 + 0.001", "narrow[i0]", [["i0", 4]], name="n1"),
         _node("cast(x[i0] + 0.001, " + low + ") * 1", "rounded[i0]", [["i0", 4]], name="n2")],
    )  # fmt: skip
    dt = getattr(torch, low)
    x = torch.tensor([1.0, -2.0, 0.375, 100.0]).to(dt)
    st = run_graph(g, inputs_from(g, x=x))
    xf = x.float()
    assert torch.equal(st["wide"], xf + 0.001)  # not rounded to the low-precision dtype
    assert not torch.equal(st["wide"], (xf + 0.001).to(dt).float())
    assert torch.equal(st["narrow"], (xf * 3 + xf * 5 + 0.001).to(dt))  # one rounding, on store
    assert torch.equal(st["rounded"], (xf + 0.001).to(dt).float())


def test_bf16_reduction_accumulates_in_float32() -> None:
    g = make_graph(
        {"x": _io([1024], "bfloat16"), "out": _io([1], "bfloat16", role="output")},
        [_node("sum(x[r0])", "out[i0]", [["i0", 1]], [["r0", 1024]])],
    )
    x = torch.full((1024,), 1.0, dtype=torch.bfloat16)
    st = run_graph(g, inputs_from(g, x=x))
    # bf16 accumulation would stall at 256; float32 accumulation gives exactly 1024.
    assert st["out"].item() == 1024.0


# -- library nodes -------------------------------------------------------------------------------
def test_mm_bmm_addmm_on_strided_views() -> None:
    g = make_graph(
        {"a": _io([8, 12], stride=[1, 8]), "b": _io([12, 5], stride=[7, 1], offset=2),
         "bias": _io([5]), "p": _io([3, 4, 6], stride=[1, 3, 12]), "q": _io([3, 6, 5]),
         "mm": _io([8, 5], role="output", stride=[1, 8]), "bmm": _io([3, 4, 5], role="output"),
         "addmm": _io([8, 5], role="output"), "tmpl": _io([8, 5], role="output")},
        [{"name": "e0", "kind": "extern", "op": "mm", "inputs": ["a", "b"], "output": "mm"},
         {"name": "e1", "kind": "extern", "op": "bmm", "inputs": ["p", "q"], "output": "bmm"},
         {"name": "e2", "kind": "extern", "op": "addmm", "inputs": ["bias", "a", "b"], "output": "addmm"},
         {"name": "t0", "kind": "template", "op": "mm", "inputs": ["a", "b"], "output": "tmpl",
          "choices": [{"name": "triton_mm_0", "time_us": 3.0}, {"name": "extern_mm", "time_us": 4.0}]}],
    )  # fmt: skip
    st = run_graph(g)
    v = {b.name: logical_view(g, b.name, st[b.name]) for b in g.buffers}
    assert v["a"].stride() == (1, 8) and v["p"].stride() == (1, 3, 12)
    torch.testing.assert_close(v["mm"], v["a"] @ v["b"])
    torch.testing.assert_close(v["bmm"], torch.bmm(v["p"], v["q"]))
    torch.testing.assert_close(v["addmm"], v["bias"] + v["a"] @ v["b"])
    torch.testing.assert_close(v["tmpl"], v["a"] @ v["b"])
    assert v["mm"].stride() == (1, 8)


def _unchecked_mm(a: list[int], b: list[int], out: list[int]) -> Graph:
    """An mm graph built directly, past the loader's shape checks (the interpreter checks too)."""
    from fuseopt.ir.dtypes import DType
    from fuseopt.ir.graph import BufferInfo, LibraryNode

    def buf(name: str, shape: list[int], role: str) -> BufferInfo:
        stride = [shape[1], 1] if len(shape) == 2 else [1]
        return BufferInfo(name, tuple(shape), tuple(stride), 0, DType.float32, role)

    return Graph(
        "mm",
        (buf("a", a, "input"), buf("b", b, "input"), buf("out", out, "output")),
        (LibraryNode("matmul", "extern", "mm", ("a", "b"), "out"),),
    )


def test_mm_shapes_are_checked_at_load_time() -> None:
    with pytest.raises(InputError, match="nodes/0"):
        make_graph(
            {"a": _io([4, 3]), "b": _io([3, 2]), "out": _io([4, 3], role="output")},
            [{"name": "matmul", "kind": "extern", "op": "mm", "inputs": ["a", "b"], "output": "out"}],
        )


def test_mm_with_the_wrong_output_shape_names_the_node() -> None:
    with pytest.raises(InterpError, match="matmul.*shape"):
        run_graph(_unchecked_mm([4, 3], [3, 2], [4, 3]))


def test_mm_with_mismatched_inner_dims_names_the_node() -> None:
    with pytest.raises(InterpError, match="'matmul'"):
        run_graph(_unchecked_mm([4, 3], [4, 2], [4, 2]))


# -- chunking ------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=0, max_size=4),
    inner=st.integers(1, 7),
    budget=st.integers(1, 200),
)
def test_chunks_cover_the_box_exactly_once_within_budget(sizes: list[int], inner: int, budget: int) -> None:
    seen = torch.zeros(sizes, dtype=torch.int64)
    for starts, stops in chunks(sizes, inner, budget):
        seen[tuple(slice(a, b) for a, b in zip(starts, stops, strict=True))] += 1
        ext = [b - a for a, b in zip(starts, stops, strict=True)]
        n = inner
        for e in ext:
            n *= e
        if n > budget:
            # Over budget only when it cannot be smaller: one point of the outer dims and the whole
            # trailing dims that are left (a chunk never splits below one point of a split dim).
            j = next((d for d, e in enumerate(ext) if e != 1), len(ext))
            assert (j > 0 or not sizes) and ext[j:] == sizes[j:], (starts, stops)
    assert bool((seen == 1).all())


def test_chunked_run_equals_unchunked_run() -> None:
    g = make_graph(
        {"x": _io([5, 6, 7]), "s": _io([5, 6], role="output"), "p": _io([5, 6, 7], role="output")},
        [_node("sum(masked(r0 >= 1, x[42*i0 + 7*i1 + r0 - 1], 0.0))", "s[6*i0 + i1]", [["i0", 5], ["i1", 6]],
               [["r0", 7]]),
         _node("x[42*i0 + 7*i1 + i2] * index(i2)", "p[i0 + 5*i1 + 30*i2]", [["i0", 5], ["i1", 6], ["i2", 7]],
               name="n1")],
    )  # fmt: skip
    inputs = make_inputs(g)
    whole = run_graph(g, inputs)
    for budget in (1, 7, 8, 50, 100):
        parts = run_graph(g, inputs, chunk_elems=budget)
        for name in ("s", "p"):
            assert torch.equal(parts[name], whole[name]), (budget, name)


# -- inputs --------------------------------------------------------------------------------------
def test_make_inputs_is_deterministic_and_typed() -> None:
    g = make_graph(
        {"f": _io([3, 4], stride=[1, 5]), "h": _io([7], "bfloat16"), "i": _io([50], "int32"),
         "b": _io([50], "bool"), "z": _io([], "int64"), "out": _io([1], role="output")},
        [_node("f[0] + h[0] + i[0] + z[0] + where(b[0], 1.0, 0.0)", "out[i0]", [["i0", 1]])],
    )  # fmt: skip
    a, b = make_inputs(g, seed=5), make_inputs(g, seed=5)
    assert list(a) == ["f", "h", "i", "b", "z"]
    for name, t in a.items():
        info = g.buffer(name)
        assert t.dim() == 1 and t.numel() == info.storage_size
        assert torch.equal(t, b[name])
    assert a["h"].dtype == torch.bfloat16 and a["b"].dtype == torch.bool and a["i"].dtype == torch.int32
    lo, hi = DEFAULT_INT_RANGE
    assert int(a["i"].min()) >= lo and int(a["i"].max()) <= hi and 0 <= int(a["z"]) <= hi
    assert bool(a["b"].any()) and not bool(a["b"].all())
    assert not torch.equal(make_inputs(g, seed=6)["f"], a["f"])


def test_run_graph_checks_the_given_inputs() -> None:
    g = _gather_graph()
    good = make_inputs(g)
    with pytest.raises(InterpError, match="no storage given for input buffer 'ids'"):
        run_graph(g, {"table": good["table"]})
    with pytest.raises(InterpError, match="'ids' must be a 1-D"):
        run_graph(g, {**good, "ids": good["ids"].to(torch.int32)})
    with pytest.raises(InterpError, match="'ids' must be a 1-D"):
        run_graph(g, {**good, "ids": good["ids"][:3]})
    with pytest.raises(InterpError, match="'nope' is not an input buffer"):
        run_graph(g, {**good, "nope": good["ids"]})


def test_input_storages_may_be_views() -> None:
    g = make_graph(
        {"x": _io([2, 3], stride=[1, 2]), "a": _io([2, 2]), "b": _io([2, 2]), "out": _io([2, 3], role="output"),
         "mm": _io([2, 2], role="output")},
        [_node("x[i0 + 2*i1]", "out[3*i0 + i1]", [["i0", 2], ["i1", 3]]),
         {"name": "e0", "kind": "extern", "op": "mm", "inputs": ["a", "b"], "output": "mm"}],
    )  # fmt: skip
    big = torch.arange(100.0)
    inputs = {"x": big[10:16], "a": big[20:28:2], "b": big[50:54]}
    st = run_graph(g, inputs)
    want = torch.arange(10.0, 16.0).reshape(3, 2).t()
    assert torch.equal(logical_view(g, "out", st["out"]), want)
    assert torch.equal(logical_view(g, "x", inputs["x"]), want)
    a = torch.tensor([[20.0, 22.0], [24.0, 26.0]])
    assert torch.equal(logical_view(g, "mm", st["mm"]), a @ torch.tensor([[50.0, 51.0], [52.0, 53.0]]))


def test_logical_outputs_lists_outputs_in_buffer_order() -> None:
    g = make_graph(
        {"x": _io([2]), "o2": _io([2], role="output"), "o1": _io([2], role="output")},
        [_node("x[i0]", "o2[i0]", [["i0", 2]]), _node("x[i0]", "o1[i0]", [["i0", 2]], name="n1")],
    )
    assert list(logical_outputs(g, run_graph(g))) == ["o2", "o1"]


def test_a_gather_into_a_padded_written_buffer_stays_in_its_dimension() -> None:
    """t is [4, 3] at strides [1, 8]: storage positions 4-7 and 12-15 are gaps nothing writes.
    Reading its first two columns, the storage alone would let ids reach 11 (ids + 8*i1 <= 19); a
    gather along dim 0 keeps ids in [0, 3], so every read is an element (the interpreter would
    read a gap as 0, generated code whatever the allocator left)."""

    def gather(stride: int) -> Graph:
        t = {"shape": [4, 3], "stride": [1, stride], "dtype": "float32", "role": "intermediate"}
        return make_graph(
            {"x": _io([4, 3]), "ids": _io([4], "int32"), "t": t, "out": _io([4, 2], role="output")},
            [
                _node("x[3*i0 + i1] + 1", f"t[i0 + {stride}*i1]", [["i0", 4], ["i1", 3]], name="pad"),
                _node(f"t[ids[i0] + {stride}*i1]", "out[2*i0 + i1]", [["i0", 4], ["i1", 2]], name="gather"),
            ],
        )

    g = gather(8)
    assert index_value_ranges(g) == {"ids": (0, 3)}
    assert index_value_ranges(gather(4)) == {"ids": (0, 7)}  # no gaps: the storage's bound, 11 - 4
    for seed in range(6):
        st = run_graph(g, seed=seed)
        t = st["x"].reshape(4, 3)[:, :2] + 1
        assert torch.equal(st["out"].reshape(4, 2), t[st["ids"].long()])


def _gap_gather(value: str) -> Graph:
    t = {"shape": [4, 3], "stride": [1, 8], "dtype": "float32", "role": "intermediate"}
    return make_graph(
        {"x": _io([4, 3]), "ids": _io([4], "int32"), "t": t, "out": _io([4, 2], role="output")},
        [
            _node("x[3*i0 + i1] + 1", "t[i0 + 8*i1]", [["i0", 4], ["i1", 3]], name="pad"),
            _node(value, "out[2*i0 + i1]", [["i0", 4], ["i1", 2]], name="gather"),
        ],
    )


def test_an_indirect_read_of_a_gap_is_an_error_where_its_value_counts() -> None:
    """Storage position 5 of t (strides [1, 8]) is no element: nothing writes it. Read through
    ids = 5 it is reported, naming the node, the position and the point; inside `masked` only
    where the condition holds, and never in a `where` branch (its value may be discarded)."""
    ids = torch.tensor([0, 5, 1, 2], dtype=torch.int32)

    def run(value: str) -> dict[str, torch.Tensor]:
        g = _gap_gather(value)
        inputs = make_inputs(g)
        inputs["ids"] = ids
        return run_graph(g, inputs)

    with pytest.raises(InterpError) as info:
        run("t[ids[i0] + 8*i1]")
    msg = str(info.value)
    assert info.value.node == "gather" and "reads storage position 5 of 't'" in msg and "i0=1, i1=0" in msg
    with pytest.raises(InterpError, match="storage position 5"):
        run("masked(i0 > 0, t[ids[i0] + 8*i1], 0.0)")
    out = run("masked(i0 != 1, t[ids[i0] + 8*i1], 0.0)")["out"].reshape(4, 2)
    assert torch.equal(out[1], torch.zeros(2))
    out = run("where(i0 != 1, t[ids[i0] + 8*i1], -1.0)")["out"].reshape(4, 2)
    assert torch.equal(out[1], torch.full((2,), -1.0))


def test_a_gather_into_a_written_buffer_with_an_offset_stays_above_it() -> None:
    """t is dense from its offset 3: positions 0-2 are no element. ids stays in [3, 8] - 3."""
    t = {"shape": [6], "stride": [1], "offset": 3, "dtype": "float32", "role": "intermediate"}
    g = make_graph(
        {"x": _io([6]), "ids": _io([4], "int32"), "t": t, "out": _io([4], role="output")},
        [
            _node("x[i0] + 1", "t[i0 + 3]", [["i0", 6]], name="shift"),
            _node("t[ids[i0]]", "out[i0]", [["i0", 4]], name="gather"),
        ],
    )
    assert index_value_ranges(g) == {"ids": (3, 8)}
    for seed in range(6):
        st = run_graph(g, seed=seed)  # the reference refuses a read of positions 0-2
        assert torch.equal(st["out"], st["x"][st["ids"].long() - 3] + 1)
