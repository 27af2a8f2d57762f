"""Tensors of no elements in a captured program (FORMAT has no buffer of zero elements).

An empty KV cache concatenated with the new keys, a parameter with a dim of 0 (YOLOS with one
layer has `mid_position_embeddings` of shape [0, 1, 21, 32]), a sum over an empty dim, an empty
slice returned next to a real result: none of these computes anything FORMAT must hold. The
capture drops what has no elements, a load of it is the literal 0 (every such load is out of
range, so a correct program never makes one), and an output of no elements is rebuilt without a
buffer. What would need a zero-element buffer (a library call reading one) is refused by name.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree

from fuseopt.bench.model import bind_capture
from fuseopt.capture import CaptureError, capture_program
from fuseopt.codegen import emit_module
from fuseopt.interp import run_graph
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import check_outputs
from fuseopt.runtime.module import run_module

_GEN = torch.Generator().manual_seed(0)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_GEN).to(dtype)


class EmptyParameter(torch.nn.Module):
    """A parameter with a dim of 0, computed on and indexed in a loop that runs no times, and a
    sum over its empty dim (the identity, 0, broadcast into a real result)."""

    def __init__(self) -> None:
        super().__init__()
        self.mid = torch.nn.Parameter(torch.randn(0, 3, 8, generator=_GEN))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scaled = self.mid * 2 + 1
        for i in range(scaled.shape[0]):
            x = x + scaled[i]
        return torch.relu(x) + scaled.sum(0)


def _kv_cache(past: torch.Tensor, k: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    keys = torch.cat([past, k], dim=2)
    return torch.softmax(q @ keys.transpose(-1, -2) * 0.5, dim=-1)


def _empty_and_full(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.sum(0), (x[2:2] * 3).exp()


def _matches(fn: Any, args: tuple[Any, ...], **tolerances: float) -> Any:
    """Capture `fn(*args)`; its outputs through the reference and through generated code equal
    eager torch; every buffer has elements."""
    cap = capture_program(fn, *args)
    assert all(0 not in b.shape for b in cap.graph.buffers)
    with torch.no_grad():
        want = [t for t in pytree.tree_leaves(fn(*args)) if isinstance(t, torch.Tensor)]
    got = cap.program_outputs(run_graph(cap.graph, cap.input_storages()))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        torch.testing.assert_close(g, w, **tolerances)
    stage = optimize(cap.graph)
    inputs = cap.input_storages()
    expected = run_graph(stage.graph, {k: v.clone() for k, v in inputs.items()})
    module = emit_module(stage.graph, stage.plan)
    checks = check_outputs(
        stage.graph, run_module(module, {k: v.clone() for k, v in inputs.items()}), expected
    )
    assert checks and all(c.ok for c in checks), checks
    return cap


def test_empty_kv_cache_is_no_buffer() -> None:
    cap = _matches(_kv_cache, (torch.zeros(2, 4, 0, 8), _randn(2, 4, 3, 8), _randn(2, 4, 3, 8)))
    assert "past" not in {b.name for b in cap.graph.buffers}
    assert cap.graph.meta["capture"]["call"]["args"] == [None, "k", "q"]


@pytest.mark.parametrize(
    ("dim", "position", "dtype"),
    [(0, 0, torch.float32), (1, 1, torch.float16), (2, 2, torch.bfloat16), (1, 0, torch.float32)],
)
def test_empty_slices_of_a_concatenation_are_dropped(dim: int, position: int, dtype: torch.dtype) -> None:
    """An empty argument first, between or last, along each dim, in each float dtype; between
    pieces computed by pointwise nodes and between library results (Inductor's ConcatKernel)."""
    shape = [3, 4, 5]
    empty = list(shape)
    empty[dim] = 0

    def fn(a: torch.Tensor, b: torch.Tensor, e: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        pointwise = [a, b * 2]
        pointwise.insert(position, e)
        products = [a @ w, b @ w]
        products.insert(position, e @ w if dim < 2 else a @ w[:, :0])
        return torch.cat(pointwise, dim).exp(), torch.cat(products, dim).sin()

    args = (_randn(*shape, dtype=dtype), _randn(*shape, dtype=dtype), torch.zeros(empty, dtype=dtype))
    _matches(fn, (*args, _randn(5, 5, dtype=dtype)), rtol=5e-2, atol=5e-2)


def test_a_parameter_of_no_elements_is_no_input() -> None:
    module = EmptyParameter()
    cap = _matches(module, (_randn(4, 3, 8),))
    assert [b.name for b in cap.graph.inputs] == ["x"]
    assert cap.graph.meta["capture"]["call"].get("parameters", {}) == {}


def test_an_output_of_no_elements_has_no_buffer() -> None:
    x = _randn(6, 8)
    cap = _matches(_empty_and_full, (x,))
    outputs = cap.graph.meta["capture"]["outputs"]
    assert [o["buffer"] for o in outputs][1] is None and outputs[1]["shape"] == [0, 8]
    json.dumps(outputs)
    # `fuseopt bench` checks the program's results against the graph's, the empty one included
    bound = bind_capture(cap.graph, _empty_and_full, (x,), cap)
    expected = run_graph(cap.graph, cap.input_storages())
    bound.check(list(_empty_and_full(x)), expected)
    with pytest.raises(Exception, match="output 0"):
        bound.check([x.sum(0) + 1, x[2:2]], expected)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, w: (a @ w[:, :0], a.exp()),  # one result
        lambda a, w: (torch.sort(a[:, :0], stable=True).values, a.exp() @ w),  # values and indices
        lambda a, w: (torch.max(a[:0], 1).values, a * 2),  # a reduction (a no-op for Inductor)
    ],
    ids=["mm", "sort", "max"],
)
def test_a_call_whose_results_have_no_elements_is_dropped(fn: Any) -> None:
    cap = _matches(fn, (_randn(6, 5), _randn(5, 5)))
    assert cap.graph.meta["capture"]["outputs"][0]["buffer"] is None


def test_a_library_call_reading_no_elements_is_refused_by_name() -> None:
    """`x[:, :0] @ w` has a result of 6 x 8 zeros: the call would read a view of no elements."""
    with pytest.raises(CaptureError, match=r"reads x through a view of shape \[6, 0\], with no elements"):
        capture_program(lambda x, w: x[:, :0] @ w + 1, _randn(6, 8), _randn(0, 8))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x[:0] + 1,  # no elements
        lambda x: (x, x.t(), x[1:]),  # the input and views of it: nothing computed
    ],
)
def test_a_program_that_computes_nothing_is_refused_saying_why(fn: Any) -> None:
    with pytest.raises(CaptureError, match="every result is an input, a view of one, a constant or a tensor"):
        capture_program(fn, _randn(6, 8))
