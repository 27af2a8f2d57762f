"""Extension 1.1 literals: non-finite floats (the strings "inf", "-inf", "nan" where the schema takes a
float or a Scalar) and argument-precise error pointers.

JSON has no literal for infinities or NaN (and the loader refuses `Infinity`/`NaN` tokens), so a
graph with `clamp(min=-inf)` must still be writable as JSON and read back equal; YAML may say `.inf`
or the same strings. A string stays a string where the schema takes one.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fuseopt.codegen import emit_module
from fuseopt.errors import InputError
from fuseopt.interp import make_inputs, run_graph
from fuseopt.interp.run import logical_view
from fuseopt.io.load import load_text
from fuseopt.ir import aten_ops
from fuseopt.ir.graph import Graph, LibraryNode, View
from fuseopt.ir.serialize import dump_json, dump_yaml, graph_sha256
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime import compare_with_reference

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN lanes

Doc = dict[str, Any]
NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
# A non-finite value in JSON: as the format's string; Python's json would write `Infinity`.
_BAD_TOKEN = re.compile(r"(?<![\"\w])-?(Infinity|NaN)(?![\"\w])")

# op, its float/Scalar parameter (name, position), the other arguments before and after it, the
# expected result from torch on the logical input `x` (and `m`), and the result's shape.
OPS: dict[str, tuple[str, str, int, list[Any], Any]] = {
    # Scalar? min
    "clamp": ("aten.clamp.default", "min", 1, [{"buffer": "x"}], lambda t, v: torch.clamp(t["x"], min=v)),
    # float? posinf (a `float`, not a Scalar); nan and neginf stay their defaults
    "nan_to_num": (
        "aten.nan_to_num.default",
        "posinf",
        2,
        [{"buffer": "x"}, None],
        lambda t, v: torch.ops.aten.nan_to_num.default(t["x"], None, v),
    ),
    # Scalar value
    "masked_fill": (
        "aten.masked_fill.Scalar",
        "value",
        2,
        [{"buffer": "x"}, {"buffer": "m"}],
        lambda t, v: t["x"].masked_fill(t["m"], v),
    ),
}


def _graph_doc(which: str, value: Any, as_kwarg: bool) -> Doc:
    op, param, pos, before, _ = OPS[which]
    call: Doc = {"name": "c", "kind": "extern", "op": op, "args": list(before), "outputs": ["out"]}
    if as_kwarg:
        call["kwargs"] = {param: value}
    else:
        assert len(before) == pos
        call["args"].append(value)
    buffers: Doc = {
        "x": {"shape": [3, 4], "dtype": "float32", "role": "input"},
        "y": {"shape": [3, 4], "dtype": "float32"},
        "out": {"shape": [3, 4], "dtype": "float32", "role": "output"},
    }
    if which == "masked_fill":
        buffers["m"] = {"shape": [3, 4], "dtype": "bool", "role": "input"}
    # log of normal inputs: NaN for negatives, so nan_to_num and clamp see non-finite lanes too
    nodes = [
        {"name": "lg", "loops": [["i0", 3], ["i1", 4]], "store": "y[4*i0 + i1]", "value": "log(x[4*i0 + i1])"}
    ]
    call = json.loads(json.dumps(call).replace('{"buffer": "x"}', '{"buffer": "y"}'))
    return {"format": "fuseopt-graph/1", "name": which, "buffers": buffers, "nodes": [*nodes, call]}


def _as_json(doc: Doc) -> str:
    """JSON text with each non-finite float written as the format's string."""

    def plain(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, list):
            return [plain(v) for v in x]
        return x

    return json.dumps(plain(doc), indent=1, allow_nan=False)


def _load(doc: Doc, fmt: str) -> Graph:
    if fmt == "json":
        return load_text(_as_json(doc), "g.json")
    return load_text(yaml.safe_dump(doc, sort_keys=False), "g.yaml")  # `.inf`, `-.inf`, `.nan`


def _bound_value(g: Graph) -> Any:
    node = next(n for n in g.nodes if isinstance(n, LibraryNode))
    assert node.call is not None
    values = [*node.call.args, *(v for _, v in node.call.kwargs)]
    return next(v for v in values if isinstance(v, float))


def _same_float(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _direct(g: Graph, which: str, value: float) -> None:
    """The reference interpreter equals torch called directly."""
    inputs = make_inputs(g, seed=5)
    storages = run_graph(g, {k: v.clone() for k, v in inputs.items()})
    t = {b.name: logical_view(g, b.name, inputs[b.name]) for b in g.inputs}
    t["x"] = torch.log(t["x"])
    want = OPS[which][4](t, value)
    torch.testing.assert_close(logical_view(g, "out", storages["out"]), want, equal_nan=True)


FLOATS = st.one_of(
    st.sampled_from(sorted(NONFINITE)).map(NONFINITE.__getitem__),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32),
)


@settings(max_examples=25, deadline=None)
@given(
    which=st.sampled_from(sorted(OPS)),
    value=FLOATS,
    as_kwarg=st.booleans(),
    fmt=st.sampled_from(["json", "yaml"]),
)
def test_non_finite_arguments_round_trip_and_run(which: str, value: float, as_kwarg: bool, fmt: str) -> None:
    g = _load(_graph_doc(which, value, as_kwarg), fmt)
    got = _bound_value(g)
    assert type(got) is float and _same_float(got, value)  # a real float, never the string
    text = dump_json(g)
    assert not _BAD_TOKEN.search(text), text  # strict JSON: no Infinity/NaN token
    if not math.isfinite(value):
        assert json.dumps(aten_ops_text(value)) in text
    for again in (load_text(text, "g.json"), load_text(dump_yaml(g), "g.yaml")):
        assert again == g  # one NaN object: equal graphs compare equal
        assert dump_json(again) == text
    other = _load(_graph_doc(which, value, as_kwarg), "yaml" if fmt == "json" else "json")
    assert other == g and graph_sha256(other) == graph_sha256(g)  # hash independent of the format
    _direct(g, which, value)


def aten_ops_text(value: float) -> str:
    return next(k for k, v in NONFINITE.items() if _same_float(v, value))


@pytest.mark.parametrize("spelling", sorted(NONFINITE))
def test_generated_module_gets_real_non_finite_floats(spelling: str) -> None:
    """The generated call() spells the value `float("...")` and equals the reference."""
    doc = _graph_doc("clamp", spelling, as_kwarg=False)
    doc["nodes"].append(
        {
            "name": "full",
            "kind": "extern",
            "op": "aten.full.default",
            "args": [[2, 3], spelling],
            "kwargs": {"dtype": "float32"},
            "outputs": ["f"],
        }
    )
    doc["buffers"]["f"] = {"shape": [2, 3], "dtype": "float32", "role": "output"}
    g = load_text(json.dumps(doc), "g.json")
    fused = optimize(g)
    src = emit_module(fused.graph, fused.plan)
    for op in ("clamp", "full"):  # a float in the call, never the string
        (line,) = [ln for ln in src.splitlines() if f"torch.ops.aten.{op}.default(" in ln]
        assert f'float("{spelling}")' in line and f"'{spelling}'" not in line, line
    compare_with_reference(fused.graph, fused.plan, seed=3)
    out = run_graph(g, make_inputs(g, seed=3))["f"]
    want = NONFINITE[spelling]
    assert out.numel() == 6 and all(_same_float(float(x), want) for x in out.flatten())
    _direct(g, "clamp", want)


def test_float_list_and_optional_parameters_take_the_strings() -> None:
    """float[], float? and Scalar? parameters take the strings; str, str? and int do not convert."""
    schema = torch._C.parse_schema(
        "fuseopt_test::op(float[] f, float? g, Scalar? s, str t, str? u, int k) -> Tensor"
    )
    operator = aten_ops.Operator("aten.fuseopt_test.default", None, schema)
    args, _ = aten_ops.bind(operator, [("inf", 1.5, "nan"), "-inf", "nan", "inf", "nan", 2], {})
    f, g, s, t, u, k = args
    assert isinstance(f, tuple) and f[0] == math.inf and f[1] == 1.5 and math.isnan(f[2])
    assert g == -math.inf and isinstance(s, float) and math.isnan(s)
    assert (t, u, k) == ("inf", "nan", 2)  # strings stay strings where the schema takes a str
    with pytest.raises(aten_ops.CallProblem) as exc:
        aten_ops.bind(operator, [(1.0,), None, None, "a", None, "inf"], {})
    assert exc.value.where == "args/5" and "not the string 'inf'" in exc.value.message


@pytest.mark.parametrize(
    "spelling", ["Infinity", "-Infinity", "NaN", "INF", "+inf", " inf", "infinity", "1e999"]
)
def test_other_spellings_are_refused_at_the_argument(spelling: str) -> None:
    doc = _graph_doc("clamp", 0.0, as_kwarg=True)
    doc["nodes"][1]["kwargs"]["min"] = spelling
    with pytest.raises(InputError) as exc:
        load_text(json.dumps(doc), "g.json")
    (d,) = exc.value.diagnostics
    assert d.pointer == "/nodes/1/kwargs/min"
    assert f"not the string {spelling!r}" in d.message and "'inf', '-inf', 'nan'" in d.message


@pytest.mark.parametrize("spelling", sorted(NONFINITE))
def test_a_string_parameter_keeps_the_string(spelling: str) -> None:
    """gelu's `approximate` is a str: "nan" reaches torch as the string (which refuses it), located
    at the node with torch's message first."""
    op = aten_ops.resolve_op("aten.gelu.default")
    view = View("x", (2, 2), (2, 1), 0)
    _, kwargs = aten_ops.bind(op, [view], {"approximate": spelling})
    assert kwargs == (("approximate", spelling),)
    doc = {
        "format": "fuseopt-graph/1",
        "name": "g",
        "buffers": {
            "x": {"shape": [2, 2], "dtype": "float32", "role": "input"},
            "out": {"shape": [2, 2], "dtype": "float32", "role": "output"},
        },
        "nodes": [
            {
                "name": "c",
                "kind": "extern",
                "op": "aten.gelu.default",
                "args": [{"buffer": "x"}],
                "kwargs": {"approximate": spelling},
                "outputs": ["out"],
            }
        ],
    }
    with pytest.raises(InputError) as exc:
        load_text(json.dumps(doc), "g.json")
    (d,) = exc.value.diagnostics
    assert d.pointer == "/nodes/0" and d.message.startswith(
        "approximate argument must be either none or tanh"
    )


# -- pointers into lists ------------------------------------------------------------------------

BAD_ITEMS: list[tuple[Any, str, str]] = [
    (3, "", "not int 3"),
    ("x", "", "not the string 'x'"),
    (None, "", "not null"),
    ({"buffer": "y", "shape": [2, 3]}, "", "gives both shape and stride"),
    ({"buffer": "y", "shape": [2, 3], "stride": [3, "a"]}, "/stride/1", "valid integer"),
    ({"buffer": "nope"}, "/buffer", "unknown buffer 'nope'"),
    ({"buffer": "y", "shape": [2, 3], "stride": [3, 1], "offset": 1}, "", "outside 'y''s storage"),
    ({"buffer": "y", "bogus": 1}, "/bogus", "not a tensor view"),
]


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 4), data=st.data())
def test_bad_item_of_a_tensor_list_is_located_at_the_item(n: int, data: st.DataObject) -> None:
    bad, suffix, words = data.draw(st.sampled_from(BAD_ITEMS))
    j = data.draw(st.integers(0, n))
    items: list[Any] = [{"buffer": "y"} for _ in range(n)]
    items.insert(j, bad)
    doc = {
        "format": "fuseopt-graph/1",
        "name": "cat",
        "buffers": {
            "y": {"shape": [2, 3], "dtype": "float32", "role": "input"},
            "out": {"shape": [2 * (n + 1), 3], "dtype": "float32", "role": "output"},
        },
        "nodes": [
            {"name": "c", "kind": "extern", "op": "aten.cat.default", "args": [items, 0], "outputs": ["out"]}
        ],
    }
    with pytest.raises(InputError) as exc:
        load_text(json.dumps(doc), "g.json")
    (d,) = exc.value.diagnostics
    assert d.pointer == f"/nodes/0/args/0/{j}{suffix}" and words in d.message, (d.pointer, d.message)
    assert d.line is not None  # the pointer resolves to a place in the text


@pytest.mark.parametrize("where", ["args", "kwargs"])
def test_bad_item_of_an_int_list_is_located_at_the_item(where: str) -> None:
    dims: list[Any] = [0, 1.5]
    call: Doc = {
        "name": "s",
        "kind": "extern",
        "op": "aten.sum.dim_IntList",
        "args": [{"buffer": "x"}],
        "outputs": ["out"],
    }
    if where == "args":
        call["args"].append(dims)
    else:
        call["kwargs"] = {"dim": dims}
    doc = {
        "format": "fuseopt-graph/1",
        "name": "s",
        "buffers": {
            "x": {"shape": [2, 3], "dtype": "float32", "role": "input"},
            "out": {"shape": [], "dtype": "float32", "role": "output"},
        },
        "nodes": [call],
    }
    with pytest.raises(InputError) as exc:
        load_text(json.dumps(doc), "g.json")
    (d,) = exc.value.diagnostics
    want = "/nodes/0/args/1/1" if where == "args" else "/nodes/0/kwargs/dim/1"
    assert d.pointer == want and "not float 1.5 (item 1)" in d.message, (d.pointer, d.message)
