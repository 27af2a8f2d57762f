"""The one read/write check (`access_match`) and the normal form behind it (`index_form`).

Equal functions spelled over different loop structures must match, different functions must
not (checked by enumerating the box), and random graphs with split and merged loops must plan,
verify and generate code that matches the reference interpreter, with and without loop order:
the planner, the verifier and code generation ask the same question.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.analysis.access_match import Space, access_form, match_read
from fuseopt.analysis.deps import canonical_dep
from fuseopt.analysis.index_form import Digit, IndexForm, index_form
from fuseopt.io.load import load_text
from fuseopt.ir.expr import Binary, Const, Expr, Load, Var, substitute_vars, to_text
from fuseopt.ir.graph import ComputeNode, LoopVar
from fuseopt.ir.parser import parse_expr_text
from fuseopt.passes.verify import check as verify_check
from tests.index_strategies import (
    Layout,
    evaluate,
    layouts,
    loop_structures,
    mutated,
    point_values,
    random_indices,
    spelled,
    values_over,
)
from tests.planning import plan
from tests.strategies import check
from tests.sweeps import examples

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _node(name: str, loops: tuple[LoopVar, ...], store: Expr, read: Expr | None = None) -> ComputeNode:
    value: Expr = Load("t", read) if read is not None else Const(0.0)
    return ComputeNode(name, "pointwise", loops, (), Load("t" if read is None else "o", store), value)


def _pair(e1: Expr, l1: tuple[LoopVar, ...], e2: Expr, l2: tuple[LoopVar, ...]) -> bool:
    producer, consumer = _node("w", l1, e1), _node("r", l2, Const(0), e2)
    ld = consumer.value
    assert isinstance(ld, Load)
    return match_read(producer, ld, consumer, Space(producer.numel)).ok


def _form_values(f: IndexForm, extent: int) -> list[int] | None:
    """The normal form evaluated at every point (None if it has opaque atoms)."""
    if f.atoms:
        return None
    out = []
    for p in range(extent):
        v = f.const
        for d, k in f.digits:
            q = p // d.div
            v += k * (q if d.mod is None else q % d.mod)
        out.append(v)
    return out


# -- the normal form and the match ------------------------------------------------------------------
@given(data=st.data())
@SETTINGS
def test_one_function_spelled_over_two_loop_structures_matches(data: st.DataObject) -> None:
    layout = data.draw(layouts())
    l1 = data.draw(loop_structures(layout.dims, "a"))
    l2 = data.draw(loop_structures(layout.dims, "b"))
    e1, e2 = data.draw(spelled(layout, l1)), data.draw(spelled(layout, l2))
    n = layout.extent
    assert values_over(e1, l1, n) == values_over(e2, l2, n), "the generator spells one function"
    assert access_form(e1, l1, 1, n) == access_form(e2, l2, 1, n), (to_text(e1), to_text(e2))
    assert _pair(e1, l1, e2, l2)
    # The same spellings over the loops themselves (each variable its own base): the canonical
    # dependency of the planner's memory score sees them equal too.
    e3 = data.draw(spelled(layout, l1))
    assert canonical_dep("t", e1, l1) == canonical_dep("t", e3, l1), (to_text(e1), to_text(e3))


@given(data=st.data())
@SETTINGS
def test_different_functions_never_match(data: st.DataObject) -> None:
    layout = data.draw(layouts())
    other = data.draw(mutated(layout))
    l1 = data.draw(loop_structures(layout.dims, "a"))
    l2 = data.draw(loop_structures(layout.dims, "b"))
    e1, e2 = data.draw(spelled(layout, l1)), data.draw(spelled(other, l2))
    n = layout.extent
    if values_over(e1, l1, n) != values_over(e2, l2, n):
        assert not _pair(e1, l1, e2, l2), (to_text(e1), to_text(e2))


@given(data=st.data())
@SETTINGS
def test_normal_form_is_the_same_function(data: st.DataObject) -> None:
    """Any index (sums, products, nested // and %, min, max): its normal form, where it has no
    opaque part, computes the index at every point; two indices with one form are one function."""
    dims = tuple(data.draw(st.lists(st.sampled_from((1, 2, 3, 4, 6)), min_size=1, max_size=3)))
    l1 = data.draw(loop_structures(dims, "a"))
    l2 = data.draw(loop_structures(dims, "b"))
    e1, e2 = data.draw(random_indices(l1)), data.draw(random_indices(l2))
    n = math.prod(dims)
    f1, f2 = access_form(e1, l1, 1, n), access_form(e2, l2, 1, n)
    v1 = values_over(e1, l1, n)
    got = _form_values(f1, n)
    assert got is None or got == v1, (to_text(e1), f1.text())
    if f1 == f2:
        assert v1 == values_over(e2, l2, n), (to_text(e1), to_text(e2), f1.text())


@pytest.mark.parametrize(
    ("write", "wloops", "read", "rloops"),
    [
        # a node iterating another's first axis split (3 x 11, 2 x 3 x 5, 11 x 3), any layout
        ("4*i + j", [("i", 33), ("j", 4)], "44*a + 4*b + j", [("a", 3), ("b", 11), ("j", 4)]),
        ("i + 33*j", [("i", 33), ("j", 4)], "11*a + b + 33*j", [("a", 3), ("b", 11), ("j", 4)]),
        (
            "4*i0 + 16*(i2 + 11*i1) + i4 + 2*i3",
            [("i0", 4), ("i1", 3), ("i2", 11), ("i3", 2), ("i4", 2)],
            "4*(a1 + 2*a0) + 16*a2 + a3",
            [("a0", 2), ("a1", 2), ("a2", 33), ("a3", 4)],
        ),
        ("i", [("i", 30)], "15*a + 5*b + c", [("a", 2), ("b", 3), ("c", 5)]),
        ("i", [("i", 30)], "10*(m // 10) + m % 10", [("m", 30)]),
        # the mixed-radix identity, nested // and %, mod and floordiv by 1, constant digits
        ("16*c1", [("c1", 96)], "16*(c1 % 6) + 96*(c1 // 6)", [("c1", 96)]),
        ("x // 4", [("x", 48)], "(x % 12) // 4 + 3*((x // 4) // 3)", [("x", 48)]),
        ("x", [("x", 12)], "x % 1 + x // 1 + (x % 6) % 3 - x % 3 + 5*(x // 12)", [("x", 12)]),
        ("x % 6 // 3", [("x", 9)], "(x // 3) % 2", [("x", 9)]),
    ],
)
def test_known_identities_match(
    write: str, wloops: list[tuple[str, int]], read: str, rloops: list[tuple[str, int]]
) -> None:
    l1 = tuple(LoopVar(n, s) for n, s in wloops)
    l2 = tuple(LoopVar(n, s) for n, s in rloops)
    e1, e2 = parse_expr_text(write), parse_expr_text(read)
    n = math.prod(lv.size for lv in l1)
    assert values_over(e1, l1, n) == values_over(e2, l2, n)
    assert _pair(e1, l1, e2, l2)


def test_a_neighbour_or_a_transpose_does_not_match() -> None:
    l1 = (LoopVar("i", 33), LoopVar("j", 4))
    l2 = (LoopVar("a", 3), LoopVar("b", 11), LoopVar("j", 4))
    assert not _pair(parse_expr_text("4*i + j"), l1, parse_expr_text("44*a + 4*b + (j + 1) % 4"), l2)
    assert not _pair(parse_expr_text("4*i + j"), l1, parse_expr_text("a + 3*b + 33*j"), l2)
    m = match_read(
        _node("w", l1, parse_expr_text("4*i + j")),
        Load("t", parse_expr_text("4*b + j")),
        _node("r", l2, Const(0), parse_expr_text("4*b + j")),
        Space(132),
    )
    assert not m.ok and m.reason == "r reads t[p % 44] where w writes t[p] (p: the kernel's point)"


def test_roles_in_a_reduction_kernel() -> None:
    """A reduction's result is read once a row (by an epilogue, or broadcast by an inner node);
    an epilogue cannot read a value of the loop."""
    g = load_text(
        """
format: fuseopt-graph/1
name: roles
buffers:
  x:   {shape: [6, 8], dtype: float32, role: input}
  t:   {shape: [6, 8], dtype: float32}
  s:   {shape: [6], dtype: float32}
  u:   {shape: [6, 8], dtype: float32, role: output}
  e:   {shape: [6], dtype: float32, role: output}
  bad: {shape: [6], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[a, 2], [b, 3], [c, 8]], store: 't[24*a + 8*b + c]', value: 'x[24*a + 8*b + c] * 2'}
  - {name: n1, loops: [[i, 6]], reduce: [[r, 8]], store: 's[i]', value: 'sum(t[8*i + r])'}
  - {name: n2, loops: [[i, 6], [j, 8]], store: 'u[8*i + j]', value: 't[8*i + j] - s[i]'}
  - {name: n3, loops: [[a, 3], [b, 2]], store: 'e[2*a + b]', value: 's[2*a + b] + 1'}
  - {name: n4, loops: [[i, 6]], store: 'bad[i]', value: 't[8*i]'}
""",
        "roles.yaml",
    )
    space = Space(6, 8)
    node = {n.name: n for n in g.nodes if isinstance(n, ComputeNode)}

    def m(w: str, r: str) -> Any:
        ld = next(ld for ld in node[r].reads() if ld.buffer == node[w].output)
        return match_read(node[w], ld, node[r], space)

    assert m("n0", "n1").ok and not m("n0", "n1").after_loop  # in the loop
    assert m("n1", "n2").ok and m("n1", "n2").after_loop  # a row's result, broadcast
    assert m("n0", "n2").ok
    assert m("n1", "n3").ok  # an epilogue over a 3 x 2 split of the rows
    assert not m("n0", "n4").ok and "epilogue" in m("n0", "n4").reason


def test_index_form_text_and_indirect() -> None:
    d = {"i": Digit("p", 4, None), "j": Digit("p", 1, 4)}
    f = index_form(parse_expr_text("4*i + j + 3"), d, {"p": 32})
    assert f.text() == "p + 3"
    g = index_form(parse_expr_text("ids[i] + j"), d, {"p": 32})
    assert g.indirect and g != f


# -- planner, verifier and code generation agree ------------------------------------------------------
def _text(e: Expr) -> str:
    return to_text(e)


@st.composite
def split_graphs(draw: Any) -> dict[str, Any]:
    """A producer and consumers over different loop structures of one box, each spelling its
    accesses its own way (sometimes reading another element), a row reduction over a split of
    the rows and reduce dims, an epilogue and a broadcast reader of its result."""
    store_t = draw(layouts(max_extent=96, kinds=("dense", "permuted")))
    dims = store_t.dims
    dense = Layout(dims, tuple(math.prod(dims[i + 1 :]) for i in range(len(dims))), 0)
    l0 = draw(loop_structures(dims, "a"))
    l1 = draw(loop_structures(dims, "b"))
    buffers: dict[str, Any] = {
        "x": _buf(dims, dense, "input"),
        "t": _buf(dims, store_t, "intermediate"),
        "u": _buf(dims, dense, "output"),
    }
    nodes = [
        {
            "name": "n0",
            "loops": _loops(l0),
            "store": f"t[{_text(draw(exact_spelled(store_t, l0)))}]",
            "value": f"x[{_text(draw(exact_spelled(dense, l0)))}] * 2 + 1",
        },
        {
            "name": "n1",
            "loops": _loops(l1),
            "store": f"u[{_text(draw(exact_spelled(dense, l1)))}]",
            "value": f"t[{_text(_shift(draw(exact_spelled(store_t, l1)), l1, draw))}] - "
            f"x[{_text(draw(exact_spelled(dense, l1)))}]",
        },
    ]
    if len(dims) > 1 and draw(st.booleans()):
        j = draw(st.integers(1, len(dims) - 1))
        rows, cols = dims[:j], dims[j:]
        lr = draw(loop_structures(rows, "c"))
        rr = draw(loop_structures(cols, "r"))
        row_layout = Layout(rows, tuple(math.prod(rows[i + 1 :]) for i in range(len(rows))), 0)
        buffers["s"] = _buf(rows, row_layout, "intermediate")
        buffers["v"] = _buf(rows, row_layout, "output")
        buffers["w"] = _buf(dims, dense, "output")
        nodes.append(
            {
                "name": "n2",
                "loops": _loops(lr),
                "reduce": _loops(rr),
                "store": f"s[{_text(draw(exact_spelled(row_layout, lr)))}]",
                "value": f"sum(u[{_text(draw(exact_spelled(dense, lr + rr)))}])",
            }
        )
        le = draw(loop_structures(rows, "e"))
        nodes.append(
            {
                "name": "n3",
                "loops": _loops(le),
                "store": f"v[{_text(draw(exact_spelled(row_layout, le)))}]",
                "value": f"s[{_text(draw(exact_spelled(row_layout, le)))}] * 3",
            }
        )
        lb = draw(loop_structures(dims, "f"))
        bcast = Layout(dims, (*row_layout.strides, *([0] * len(cols))), 0)
        nodes.append(
            {
                "name": "n4",
                "loops": _loops(lb),
                "store": f"w[{_text(draw(exact_spelled(dense, lb)))}]",
                "value": f"u[{_text(draw(exact_spelled(dense, lb)))}] / (abs(s[{_text(draw(exact_spelled(bcast, lb)))}]) + 1)",
            }
        )
    return {"format": "fuseopt-graph/1", "name": "split", "buffers": buffers, "nodes": nodes}


def _shift(e: Expr, loops: tuple[LoopVar, ...], draw: Any) -> Expr:
    """Sometimes the element of another point: one loop variable v read as (v + 1) % size (an
    element the producer does write, so the graph reads nothing uninitialised)."""
    cands = [lv for lv in loops if lv.size > 1]
    if not cands or draw(st.integers(0, 3)):
        return e
    lv = draw(st.sampled_from(cands))
    moved = Binary("mod", Binary("add", Var(lv.name), Const(1)), Const(lv.size))
    return substitute_vars(e, {lv.name: moved})


def exact_spelled(layout: Layout, loops: tuple[LoopVar, ...]) -> st.SearchStrategy[Expr]:
    return spelled(layout, loops, exact=True)


def _buf(dims: tuple[int, ...], lay: Layout, role: str) -> dict[str, Any]:
    return {
        "shape": list(dims),
        "stride": list(lay.strides),
        "offset": lay.offset,
        "dtype": "float32",
        "role": role,
    }


def _loops(loops: tuple[LoopVar, ...]) -> list[list[Any]]:
    return [[lv.name, lv.size] for lv in loops]


@given(doc=split_graphs())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_split_loop_graphs_plan_verify_generate_and_match(doc: dict[str, Any]) -> None:
    g = load_text(json.dumps(doc), "split.json")
    for loop_order in (True, False):
        stage = plan(g, loop_order=loop_order)  # verified after every pass
        assert verify_check(stage.graph, stage.plan) == []
        check(stage.graph, stage.plan)


def test_point_values_are_row_major() -> None:
    loops = (LoopVar("a", 3), LoopVar("b", 4))
    assert [(point_values(loops, p)["a"], point_values(loops, p)["b"]) for p in (0, 5, 11)] == [
        (0, 0),
        (1, 1),
        (2, 3),
    ]
    assert evaluate(parse_expr_text("min(a, 1) + max(b, 2)"), {"a": 2, "b": 0}) == 3
