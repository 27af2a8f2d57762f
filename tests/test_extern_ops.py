"""Extension 1.1: extern nodes calling ATen operators on views of buffers.

Each graph is checked three ways: it validates; the reference interpreter equals torch called
directly on the same inputs; the generated module (TRITON_INTERPRET=1) equals the reference.
A hypothesis sweep draws views inside and outside their storage.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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
from fuseopt.ir.graph import Graph, LibraryNode
from fuseopt.ir.serialize import dump_yaml
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime import compare_with_reference

Doc = dict[str, Any]
T = torch.Tensor


def _graph(name: str, buffers: Doc, nodes: list[Doc]) -> Graph:
    doc = {"format": "fuseopt-graph/1", "name": name, "buffers": buffers, "nodes": nodes}
    plain = json.loads(json.dumps(doc))  # no shared lists (YAML anchors are refused)
    return load_text(yaml.safe_dump(plain, sort_keys=False), "g.yaml")  # YAML: -inf is a literal


def _buf(shape: list[int], role: str = "intermediate", dtype: str = "float32", **kw: Any) -> Doc:
    return {"shape": shape, "dtype": dtype, "role": role, **kw}


def _call(name: str, op: str, args: list[Any], outputs: list[Any], **kwargs: Any) -> Doc:
    d: Doc = {"name": name, "kind": "extern", "op": op, "args": args, "outputs": outputs}
    if kwargs:
        d["kwargs"] = kwargs
    return d


def _v(buffer: str, shape: list[int] | None = None, stride: list[int] | None = None, offset: int = 0) -> Doc:
    if shape is None:
        return {"buffer": buffer}
    return {"buffer": buffer, "shape": shape, "stride": stride, "offset": offset}


def _copy(src: str, dst: str, n: int, fn: str = "") -> Doc:
    """A pointwise node: dst[i] = fn(src[i]) over n points (so graphs have Triton kernels too)."""
    value = f"{fn}({src}[i0])" if fn else f"2 * {src}[i0]"
    return {"name": f"{dst}_n", "loops": [["i0", n]], "store": f"{dst}[i0]", "value": value}


def _check(g: Graph, direct: Callable[[dict[str, T]], dict[str, T]]) -> None:
    """Reference == torch on the logical inputs; generated module == reference."""
    inputs = make_inputs(g, seed=3)
    storages = run_graph(g, {k: v.clone() for k, v in inputs.items()})
    logical = {b.name: logical_view(g, b.name, inputs[b.name]) for b in g.inputs}
    for name, want in direct(logical).items():
        got = logical_view(g, name, storages[name])
        torch.testing.assert_close(got, want, msg=lambda m, name=name: f"{name}: {m}")
    fused = optimize(g)
    compare_with_reference(fused.graph, fused.plan, seed=3)
    assert load_text(dump_yaml(g), "g.yaml") == g  # the call round-trips through the format


def test_convolution_2d_groups_bias() -> None:
    g = _graph(
        "conv",
        {
            "x": _buf([2, 4, 5, 5], "input"),
            "w": _buf([6, 2, 3, 3], "input"),
            "b": _buf([6], "input"),
            "c": _buf([2, 6, 3, 3]),
            "out": _buf([2, 6, 3, 3], "output"),
        },
        [
            _call(
                "conv0",
                "aten.convolution.default",
                [_v("x"), _v("w"), _v("b"), [2, 2], [1, 1], [1, 1], False, [0, 0], 2],
                ["c"],
            ),
            _copy("c", "out", 108, "relu"),
        ],
    )
    node = g.node("conv0")
    assert isinstance(node, LibraryNode) and node.outputs == ("c",) and node.inputs == ("x", "w", "b")
    _check(g, lambda t: {"out": torch.relu(torch.nn.functional.conv2d(t["x"], t["w"], t["b"], 2, 1, 1, 2))})


def test_convolution_1d_channels_last_input_view() -> None:
    # x is stored [N, L, C] and read as [N, C, L] through a view of its storage.
    g = _graph(
        "conv1d",
        {"x": _buf([2, 7, 4], "input"), "w": _buf([4, 4, 3], "input"), "out": _buf([2, 4, 7], "output")},
        [
            _call(
                "conv0",
                "aten.convolution.default",
                [_v("x", [2, 4, 7], [28, 1, 4]), _v("w"), None, [1], [1], [1], False, [0], 1],
                ["out"],
            )
        ],
    )
    _check(g, lambda t: {"out": torch.nn.functional.conv1d(t["x"].permute(0, 2, 1), t["w"], None, 1, 1)})


def _qkv_graph() -> Graph:
    """One projection buffer p [2, 4, 24] read as q, k (transposed) and v views by three matmuls."""
    q = _v("p", [2, 4, 8], [96, 24, 1], 0)
    kt = _v("p", [2, 8, 4], [96, 1, 24], 8)
    v = _v("p", [2, 4, 8], [96, 24, 1], 16)
    return _graph(
        "qkv",
        {
            "x": _buf([2, 4, 24], "input"),
            "bias": _buf([2, 4, 4], "input"),
            "w": _buf([8, 5], "input"),
            "r": _buf([5], "input"),
            "p": _buf([2, 4, 24]),
            "s": _buf([2, 4, 4], "output"),
            "o": _buf([2, 4, 8], "output"),
            "m": _buf([8, 5], "output"),
        },
        [
            _copy("x", "p", 192),
            _call("scores", "aten.baddbmm.default", [_v("bias"), q, kt], ["s"], beta=0.5, alpha=0.25),
            _call("attn", "aten.bmm.default", [_v("s"), v], ["o"]),
            # addmm on a 2-D view of p: the v columns of every row, [8, 8] at stride 24.
            _call("proj", "aten.addmm.default", [_v("r"), _v("p", [8, 8], [24, 1], 16), _v("w")], ["m"]),
        ],
    )


def test_matmuls_on_views_of_one_buffer() -> None:
    g = _qkv_graph()

    def direct(t: dict[str, T]) -> dict[str, T]:
        p = 2 * t["x"]
        q, k, v = p[..., :8], p[..., 8:16], p[..., 16:]
        s = torch.baddbmm(t["bias"], q, k.transpose(1, 2), beta=0.5, alpha=0.25)
        m = torch.addmm(t["r"], p.reshape(8, 24)[:, 16:], t["w"])
        return {"s": s, "o": torch.bmm(s, v), "m": m}

    _check(g, direct)
    plan = optimize(g).plan
    # Externs never fuse: each is a kernel of its own.
    assert sum(k.kind == "extern" for k in plan.kernels) == 3


def test_sdpa_for_cpu_with_unused_logsumexp() -> None:
    # q, k and v: [B, H, L, D] views of a [B, L, 3*H*D] projection (H = 2, D = 4).
    views = [_v("p", [1, 2, 4, 4], [96, 4, 24, 1], k * 8) for k in range(3)]
    g = _graph(
        "sdpa",
        {"p": _buf([1, 4, 24], "input"), "o": _buf([1, 2, 4, 4], "output")},
        [
            _call(
                "sdpa",
                "aten._scaled_dot_product_flash_attention_for_cpu.default",
                [*views, 0.0, True],
                ["o", None],
                scale=0.5,
            )
        ],
    )

    def direct(t: dict[str, T]) -> dict[str, T]:
        q, k, v = (torch.as_strided(t["p"], (1, 2, 4, 4), (96, 4, 24, 1), j * 8) for j in range(3))
        return {"o": torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)}

    _check(g, direct)


def test_sdpa_with_dropout_is_random() -> None:
    with pytest.raises(InputError, match="dropout_p must be 0") as err:
        _graph(
            "sdpa",
            {"p": _buf([1, 2, 4, 8], "input"), "o": _buf([1, 2, 4, 8], "output")},
            [
                _call(
                    "a",
                    "aten.scaled_dot_product_attention.default",
                    [_v("p"), _v("p"), _v("p")],
                    ["o"],
                    dropout_p=0.1,
                )
            ],
        )
    assert err.value.diagnostics[0].pointer == "/nodes/0/kwargs/dropout_p"


@pytest.mark.parametrize("largest", [True, False])
def test_topk_two_outputs(largest: bool) -> None:
    g = _graph(
        "topk",
        {
            "x": _buf([3, 10], "input"),
            "vals": _buf([3, 4], "output"),
            "idx": _buf([3, 4], "output", "int64"),
        },
        [_call("tk", "aten.topk.default", [_v("x"), 4, -1, largest], ["vals", "idx"])],
    )
    assert g.node("tk").outputs == ("vals", "idx")

    def direct(t: dict[str, T]) -> dict[str, T]:
        v, i = torch.topk(t["x"], 4, -1, largest)
        return {"vals": v, "idx": i}

    _check(g, direct)


def test_sort_stable_kwargs_and_transposed_output_view() -> None:
    # The sorted values are written into a buffer stored transposed, through a matching view.
    g = _graph(
        "sort",
        {
            "x": _buf([4, 6], "input"),
            "vals": _buf([4, 6], "output", stride=[1, 4]),
            "idx": _buf([4, 6], "output", "int64"),
        },
        [
            _call(
                "srt",
                "aten.sort.stable",
                [_v("x", [4, 6], [6, 1])],
                [_v("vals", [4, 6], [1, 4]), "idx"],
                stable=True,
                dim=0,
                descending=True,
            )
        ],
    )

    def direct(t: dict[str, T]) -> dict[str, T]:
        v, i = torch.sort(t["x"], dim=0, descending=True, stable=True)
        return {"vals": v, "idx": i}

    _check(g, direct)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cumsum_dtype_enum(dtype: str) -> None:
    g = _graph(
        "cumsum",
        {"x": _buf([3, 5], "input"), "c": _buf([3, 5], "output", dtype)},
        [_call("cs", "aten.cumsum.default", [_v("x"), 1], ["c"], dtype=dtype)],
    )
    _check(g, lambda t: {"c": torch.cumsum(t["x"], 1, dtype=getattr(torch, dtype))})


def test_native_layer_norm_unused_outputs_and_gelu_string() -> None:
    g = _graph(
        "ln",
        {
            "x": _buf([4, 8], "input"),
            "w": _buf([8], "input"),
            "b": _buf([8], "input"),
            "y": _buf([4, 8]),
            "rstd": _buf([4, 1], "output"),
            "out": _buf([4, 8], "output"),
        },
        [
            _call(
                "ln",
                "aten.native_layer_norm.default",
                [_v("x"), [8], _v("w"), _v("b"), 1e-5],
                ["y", None, "rstd"],
            ),
            _call("act", "aten.gelu.default", [_v("y")], ["out"], approximate="tanh"),
        ],
    )

    def direct(t: dict[str, T]) -> dict[str, T]:
        y, _, rstd = torch.ops.aten.native_layer_norm.default(t["x"], [8], t["w"], t["b"], 1e-5)
        return {"rstd": rstd, "out": torch.nn.functional.gelu(y, approximate="tanh")}

    _check(g, direct)


def test_cat_tensor_list_and_float_literals() -> None:
    g = _graph(
        "cat",
        {
            "x": _buf([2, 3], "input"),
            "y": _buf([2, 3], "input"),
            "c": _buf([4, 3]),
            "out": _buf([4, 3], "output"),
        },
        [
            _call("cat", "aten.cat.default", [[_v("x"), _v("y")], 0], ["c"]),
            _call("clamp", "aten.clamp.default", [_v("c"), float("-inf"), 0.25], ["out"]),
        ],
    )
    _check(g, lambda t: {"out": torch.cat([t["x"], t["y"]]).clamp(max=0.25)})


def test_v1_and_call_nodes_plan_alike() -> None:
    """A v1 mm and the same product as an aten.mm.default call: same plan shape and bytes."""
    bufs = {"a": _buf([4, 6], "input"), "b": _buf([6, 5], "input"), "c": _buf([4, 5], "output")}
    v1 = _graph(
        "mm", bufs, [{"name": "mm0", "kind": "extern", "op": "mm", "inputs": ["a", "b"], "output": "c"}]
    )
    v11 = _graph("mm", bufs, [_call("mm0", "aten.mm.default", [_v("a"), _v("b")], ["c"])])
    p1, p2 = optimize(v1).plan, optimize(v11).plan
    assert [k.bytes for k in p1.kernels] == [k.bytes for k in p2.kernels] == [(24 + 30 + 20) * 4]
    torch.testing.assert_close(run_graph(v1)["c"], run_graph(v11)["c"])


def test_view_bytes_counted_per_view() -> None:
    """q and k of one buffer are read by one call: the bytes are those of the views, not 2x the
    buffer."""
    g = _graph(
        "views",
        {"p": _buf([4, 16], "input"), "s": _buf([4, 4], "output")},
        [_call("mm", "aten.mm.default", [_v("p", [4, 8], [16, 1], 0), _v("p", [8, 4], [1, 16], 8)], ["s"])],
    )
    (k,) = optimize(g).plan.kernels
    assert k.bytes == (32 + 32 + 16) * 4


def test_generated_call_is_formatted() -> None:
    import shutil
    import subprocess

    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    g = _qkv_graph()
    fused = optimize(g)
    src = emit_module(fused.graph, fused.plan)
    assert "torch.ops.aten.baddbmm.default(" in src
    fmt = subprocess.run(
        [ruff, "format", "--isolated", "--line-length", "110", "--diff", "-"],
        input=src,
        capture_output=True,
        text=True,
    )
    assert fmt.stdout == "", fmt.stdout


# -- views inside and outside their storage ------------------------------------------------------------


@st.composite
def _views(draw: st.DrawFn) -> tuple[int, list[int], list[int], int]:
    storage = draw(st.integers(1, 40))
    rank = draw(st.integers(0, 3))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    stride = draw(st.lists(st.integers(0, 12), min_size=rank, max_size=rank))
    offset = draw(st.integers(0, 45))
    return storage, shape, stride, offset


@settings(max_examples=60, deadline=None)
@given(_views(), st.sampled_from(["input", "intermediate"]))
def test_views_in_and_out_of_storage(case: tuple[int, list[int], list[int], int], role: str) -> None:
    storage, shape, stride, offset = case
    extent = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) + 1
    nodes: list[Doc] = []
    buffers = {"x": _buf([storage], "input")}
    src = "x"
    if role == "intermediate":
        buffers["t"] = _buf([storage])
        nodes.append(_copy("x", "t", storage))
        src = "t"
    buffers["out"] = _buf(shape, "output") if shape else _buf([], "output")
    nodes.append(_call("neg", "aten.neg.default", [_v(src, shape, stride, offset)], ["out"]))
    if extent > storage:
        with pytest.raises(InputError, match="outside") as err:
            _graph("view", buffers, nodes)
        assert err.value.diagnostics[0].pointer == f"/nodes/{len(nodes) - 1}/args/0"
        return
    g = _graph("view", buffers, nodes)
    inputs = make_inputs(g, seed=1)
    got = logical_view(g, "out", run_graph(g, {k: v.clone() for k, v in inputs.items()})["out"])
    base = inputs["x"] * (2 if role == "intermediate" else 1)
    torch.testing.assert_close(got, -torch.as_strided(base, shape, stride, offset))


def test_output_view_must_cover_its_buffer() -> None:
    bufs = {"x": _buf([4, 4], "input"), "o": _buf([4, 8], "output")}
    with pytest.raises(InputError, match="covers its buffer exactly") as err:
        _graph("half", bufs, [_call("neg", "aten.neg.default", [_v("x")], [_v("o", [4, 4], [8, 1], 0)])])
    assert err.value.diagnostics[0].pointer == "/nodes/0/outputs/0"


def test_view_of_written_buffer_must_read_its_elements() -> None:
    # t is [4, 4] stored with row padding (stride 6): positions 4, 5 of each row are never written.
    bufs = {
        "x": _buf([4, 4], "input"),
        "t": _buf([4, 4], stride=[6, 1]),
        "o": _buf([3, 6], "output"),
    }
    copy = {"name": "c", "loops": [["i0", 4], ["i1", 4]], "store": "t[6*i0 + i1]", "value": "x[4*i0 + i1]"}
    with pytest.raises(InputError, match="not an element of 't'"):
        _graph("pad", bufs, [copy, _call("neg", "aten.neg.default", [_v("t", [3, 6], [6, 1], 0)], ["o"])])
    ok = _graph(
        "pad",
        {**bufs, "o": _buf([4, 4], "output")},
        [copy, _call("neg", "aten.neg.default", [_v("t")], ["o"])],
    )
    assert ok.node("neg").inputs == ("t",)


@pytest.mark.parametrize("payload", ['"); import os  #', "\n\u2028'''", "\\x00\0"])
def test_string_argument_is_only_ever_a_literal(payload: str) -> None:
    """Whatever a string argument holds (validation refuses what the op does not know), code
    generation prints it as one string constant and nothing else changes."""
    import ast
    import dataclasses

    g = _graph(
        "s",
        {"x": _buf([4], "input"), "o": _buf([4], "output")},
        [_call("act", "aten.gelu.default", [_v("x")], ["o"], approximate="tanh")],
    )
    node = g.node("act")
    assert isinstance(node, LibraryNode) and node.call is not None
    hostile = dataclasses.replace(
        node, call=dataclasses.replace(node.call, kwargs=(("approximate", payload),))
    )
    h = g.replace(nodes=(hostile,))
    plan = optimize(g).plan
    src, bad = emit_module(g, plan), emit_module(h, plan)
    assert bad.isascii()
    consts = [n.value for n in ast.walk(ast.parse(bad)) if isinstance(n, ast.Constant)]
    assert payload in consts
    same = ast.dump(ast.parse(bad)).replace(repr(payload), "'tanh'")
    assert same == ast.dump(ast.parse(src))
