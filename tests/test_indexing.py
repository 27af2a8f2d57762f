"""`codegen.indexing`: digits of axis indices, and adjacent digits merged in emitted indices."""

from __future__ import annotations

import pytest

from fuseopt.codegen.indexing import Digit, decompose, merged_terms
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.parser import parse_expr_text


def _terms(text: str, sizes: list[int], names: list[str]) -> list[tuple[object, int]]:
    extent = 1
    for s in sizes:
        extent *= s
    digits = dict(zip(names, decompose(sizes, "xindex", extent), strict=True))
    return merged_terms(linear_form(parse_expr_text(text)).coeffs, digits, {"xindex": extent})


@pytest.mark.parametrize(
    ("text", "sizes"),
    [
        ("1000 * i0 + i1", [1000, 1000]),
        ("333 * i0 + i1", [777, 333]),
        ("3136 * i0 + 56 * i1 + i2", [64, 56, 56]),
        ("i1 + 3136 * i0 + 56 * i2", [7, 56, 56]),
    ],
)
def test_a_row_major_index_merges_into_the_axis(text: str, sizes: list[int]) -> None:
    names = ["i0", "i1", "i2"][: len(sizes)]
    if text.startswith("i1 +"):  # the same sum written in another order, loops (i0, i2, i1)
        names = ["i0", "i2", "i1"]
    assert _terms(text, sizes, names) == [(Digit("xindex", 1, None), 1)]


def test_a_scaled_row_major_index_keeps_its_coefficient() -> None:
    """2 * (1000 * i0 + i1) is 2 * xindex."""
    assert _terms("2000 * i0 + 2 * i1", [1000, 1000], ["i0", "i1"]) == [(Digit("xindex", 1, None), 2)]


def test_a_partial_merge_keeps_the_other_terms_in_place() -> None:
    """56 * i1 + i2 merges (the inner 3136 points of the axis); the broadcast term b[i0] stays."""
    out = _terms("5 * i0 + 56 * i1 + i2", [64, 56, 56], ["i0", "i1", "i2"])
    assert sorted(out, key=repr) == sorted(
        [(Digit("xindex", 3136, None), 5), (Digit("xindex", 1, 3136), 1)], key=repr
    )


@pytest.mark.parametrize(
    "text",
    [
        "1000 * i1 + i0",  # a transposed read: not adjacent digits
        "999 * i0 + i1",  # a row stride that is not the row length
        "i1",
    ],
)
def test_no_merge_leaves_the_terms_as_they_were(text: str) -> None:
    coeffs = linear_form(parse_expr_text(text)).coeffs
    digits = dict(zip(["i0", "i1"], decompose([1000, 1000], "xindex", 10**6), strict=True))
    assert merged_terms(coeffs, digits, {"xindex": 10**6}) == list(coeffs)


def test_the_emitted_address_of_a_row_major_access_is_the_axis() -> None:
    """A pointwise kernel over (777, 333) reads and writes at `xindex`, the digits only for the
    broadcast bias: Triton then sees the address is contiguous and vectorises the access."""
    from fuseopt.codegen import emit_module
    from fuseopt.io.load import load_text
    from fuseopt.passes.pipeline import optimize

    graph = load_text(
        """
format: fuseopt-graph/1
name: rowmajor
buffers:
  x: {shape: [777, 333], dtype: float32, role: input}
  b: {shape: [333], dtype: float32, role: input}
  y: {shape: [777, 333], dtype: float32, role: output}
nodes:
- {name: n0, loops: [[i0, 777], [i1, 333]], store: 'y[333 * i0 + i1]', value: 'x[333 * i0 + i1] + b[i1]'}
""",
        "rowmajor.yaml",
    )
    stage = optimize(graph)
    src = emit_module(stage.graph, stage.plan)
    assert "tl.load(x_ptr + xindex," in src and "tl.store(y_ptr + xindex," in src
    assert "333 * x" not in src and "// 333" not in src
