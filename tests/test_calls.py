"""Library calls in the generated wrapper (fuseopt/codegen/calls.py): results become their output
buffers' storage (`_take_results`), taken as they are where laid out as the buffer, else copied."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs, run_graph
from fuseopt.runtime.compare import check_outputs
from fuseopt.runtime.module import load_module, run_module
from tests.strategies import graph, unfused_plan

MM = """
format: fuseopt-graph/1
name: mm
buffers:
  a:   {shape: [4, 8], dtype: float32, role: input}
  b:   {shape: [8, 6], dtype: float32, role: input}
  c:   {shape: [4, 6], LAYOUT dtype: float32}
  out: {shape: [4, 6], dtype: float32, role: output}
nodes:
  - {name: mm0, kind: extern, op: mm, inputs: [a, b], output: c}
  - {name: n1, loops: [[i, 4], [j, 6]], store: "out[6*i + j]", value: "c[READ] * 2"}
"""


def _module() -> Any:
    g = graph(MM.replace("LAYOUT ", "").replace("READ", "6*i + j"))
    return load_module(emit_module(g, unfused_plan(g)))


def _spec(t: torch.Tensor, offset: int = 0) -> tuple[int, tuple[int, ...], tuple[int, ...], int, torch.dtype]:
    return (t.numel() + offset, tuple(t.shape), tuple(t.stride()), offset, t.dtype)


def test_a_fresh_result_laid_out_as_its_buffer_is_taken_without_a_copy() -> None:
    m = _module()
    r = torch.randn(4, 6)
    (flat,) = m._take_results(r, [_spec(r)], "op", [])
    assert flat.shape == (24,) and flat.data_ptr() == r.data_ptr() and torch.equal(flat, r.reshape(-1))


def test_strides_of_single_element_dims_do_not_matter() -> None:
    m = _module()
    r = torch.randn(3, 1, 5).as_strided((3, 1, 5), (5, 99, 1))
    (flat,) = m._take_results(r, [(15, (3, 1, 5), (5, 5, 1), 0, torch.float32)], "op", [])
    assert flat.data_ptr() == r.data_ptr()


@pytest.mark.parametrize(
    "case", ["transposed", "a view into more storage", "an alias of what it read", "offset in the buffer"]
)
def test_a_result_not_laid_out_as_its_buffer_is_copied_through_the_layout(case: str) -> None:
    m = _module()
    base = torch.randn(6, 4)
    read: list[torch.Tensor] = []
    spec = (24, (4, 6), (6, 1), 0, torch.float32)
    if case == "transposed":
        r = base.t()  # strides (1, 4)
    elif case == "a view into more storage":
        r = torch.randn(5, 6)[:4]
    elif case == "an alias of what it read":
        r = base.reshape(4, 6)
        read = [base]
    else:
        r = base.reshape(4, 6)
        spec = (26, (4, 6), (6, 1), 2, torch.float32)
    (flat,) = m._take_results(r, [spec], "op", read)
    size, shape, stride, offset, _ = spec
    assert flat.shape == (size,) and flat.data_ptr() != r.data_ptr()
    assert torch.equal(flat.as_strided(shape, stride, offset), r)


def test_two_results_sharing_storage_get_storages_of_their_own() -> None:
    m = _module()
    r = torch.randn(2, 3)
    first, second = m._take_results((r, r), [_spec(r), _spec(r)], "op", [])
    assert first.data_ptr() == r.data_ptr() and second.data_ptr() != r.data_ptr()
    assert torch.equal(second, r.reshape(-1))


def test_unused_results_are_skipped_and_a_wrong_result_is_named() -> None:
    m = _module()
    r = torch.randn(2, 3)
    (flat,) = m._take_results((r, torch.zeros(1)), [_spec(r), None], "op", [])
    assert flat.data_ptr() == r.data_ptr()
    with pytest.raises(RuntimeError, match=r"op: result 0 is \[2, 3\] torch.float32, expected \[3, 2\]"):
        m._take_results(r, [(6, (3, 2), (2, 1), 0, torch.float32)], "op", [])
    with pytest.raises(RuntimeError, match="op returned 2 results, expected 1"):
        m._take_results((r, r), [_spec(r)], "op", [])


@pytest.mark.parametrize(
    ("layout", "read"),
    [
        ("", "6*i + j"),  # row-major: the matmul's result is taken
        ("stride: [1, 4], ", "i + 4*j"),  # column-major: copied through the layout
        ("stride: [7, 1], offset: 1, ", "7*i + j + 1"),  # a padded buffer: copied
    ],
)
def test_an_extern_result_in_any_layout_matches_the_reference(layout: str, read: str) -> None:
    g = graph(MM.replace("LAYOUT ", layout).replace("READ", read))
    src = emit_module(g, unfused_plan(g))
    assert "_take_results(" in src and ".copy_(torch.mm" not in src
    inputs = make_inputs(g, seed=0)
    got = run_module(src, {k: v.clone() for k, v in inputs.items()}, poison=True)
    assert all(c.ok for c in check_outputs(g, got, run_graph(g, inputs)))
