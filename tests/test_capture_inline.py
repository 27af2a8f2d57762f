"""Slices of a concatenation that a library call reads, computed into the copy that assembles it
(`fuseopt.capture.inline`).

Inductor computes the slices straight into the concatenation; FORMAT has no aliasing, so the
capture copies them together for the call, and where a slice's writer is a pointwise node that
only the copy reads, the copy computes its value instead. The outputs equal torch's through the
reference and generated code; fuseopt's plan moves fewer bytes in no more kernels than with
the copies, and Inductor's kernel count is the same (the kernels Inductor ran still count); a
slice read elsewhere, kept, placed otherwise or reduced is copied as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from fuseopt.analysis.metrics import AccessTable
from fuseopt.capture import capture_program
from fuseopt.capture.inline import inline_slices
from fuseopt.capture.layout import Layout
from fuseopt.codegen import emit_module
from fuseopt.interp import run_graph
from fuseopt.ir.dtypes import DType
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.compare import check_outputs
from fuseopt.runtime.module import run_module

_GEN = torch.Generator().manual_seed(0)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_GEN)


def _mm_pieces(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.cat([x @ w, x @ w * 2], -1) @ v


def _reduction_piece(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.cat([x.softmax(-1), x.sum(-1, keepdim=True).expand(4, 8) * 0.1], -1) @ v


def _heads(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """ConvBERT's mixed heads: attention (a bmm) and a normalised branch, side by side."""
    return torch.cat([torch.bmm(x, w), F.layer_norm(x, (8,))], -1).transpose(1, 2) @ x


PROGRAMS: dict[str, tuple[Callable[..., Any], tuple[torch.Tensor, ...], int]] = {
    "mm_pieces": (_mm_pieces, (_randn(4, 8), _randn(8, 8), _randn(16, 3)), 1),
    "reduction_piece": (_reduction_piece, (_randn(4, 8), _randn(8, 8), _randn(16, 3)), 2),
    "heads": (_heads, (_randn(2, 4, 8), _randn(2, 8, 8)), 2),
}


def _plan(graph: Any) -> tuple[int, int]:
    stage = optimize(graph)
    table = AccessTable(stage.graph)
    return len(stage.plan.kernels), sum(table.kernel_bytes(list(k.nodes)) for k in stage.plan.kernels)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_slices_are_computed_into_the_copy(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fn, args, inlined = PROGRAMS[name]
    cap = capture_program(fn, *args)
    assert len(cap.graph.meta["capture"]["inlined_nodes"]) == inlined
    # the copy computes its slices where Inductor writes the concatenation: not in its reader's kernel
    copy = next(n for n in cap.graph.nodes if n.name.endswith(tuple(f"_{b.name}" for b in cap.graph.buffers)))
    reader = copy.name.split("_")[0]
    (group,) = [k for k in cap.graph.meta["inductor"]["kernels"] if copy.name in k]
    assert reader not in group
    for g, w in zip(
        cap.program_outputs(run_graph(cap.graph, cap.input_storages())), [fn(*args)], strict=True
    ):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    stage = optimize(cap.graph)
    inputs = cap.input_storages()
    expected = run_graph(stage.graph, {k: v.clone() for k, v in inputs.items()})
    got = run_module(
        emit_module(stage.graph, stage.plan), {k: v.clone() for k, v in inputs.items()}, poison=True
    )
    checks = check_outputs(stage.graph, got, expected, inputs=inputs)
    assert checks and all(c.ok for c in checks), checks

    import fuseopt.capture.driver as driver

    monkeypatch.setattr(driver, "inline_slices", lambda *a: {})
    copied = capture_program(fn, *args)
    assert copied.graph.meta["inductor"]["kernel_count"] == cap.graph.meta["inductor"]["kernel_count"]
    (k, b), (k0, b0) = _plan(cap.graph), _plan(copied.graph)
    assert k <= k0 and b < b0


def _doc(name: str, store: str, value: str, loops: list[list[Any]]) -> dict[str, Any]:
    return {"name": name, "loops": loops, "store": store, "value": value}


COPY = "where(x1 < 4, masked(x1 < 4, p[4 * x0 + x1], 0.0), masked(x1 >= 4, q[4 * x0 + x1 - 4], 0.0))"
LAYOUT = Layout((2, 4), (4, 1), 0, DType.float32)


def _copy_nodes(
    q_store: str = "q[4 * y0 + y1]", q_loops: list[list[Any]] | None = None
) -> list[dict[str, Any]]:
    return [
        _doc("P", "p[4 * y0 + y1]", "exp(a[4 * y0 + y1])", [["y0", 2], ["y1", 4]]),
        _doc("Q", q_store, "a[4 * y0 + y1] * 2.0", q_loops or [["y0", 2], ["y1", 4]]),
        _doc("C", "c[8 * x0 + x1]", COPY, [["x0", 2], ["x1", 8]]),
    ]


def test_a_writer_is_computed_at_the_copys_point_shifted_along_the_concatenated_dim() -> None:
    nodes = _copy_nodes()
    assert inline_slices(nodes, {"C": ("p", "q")}, {"p": LAYOUT, "q": LAYOUT}, set()) == {"C": ["P", "Q"]}
    (copy,) = nodes
    assert copy["value"] == (
        "where(x1 < 4, masked(x1 < 4, cast(exp(a[4 * x0 + x1]), float32), 0.0), "
        "masked(x1 >= 4, cast(a[4 * x0 + (x1 - 4)] * 2.0, float32), 0.0))"
    )


def test_a_slice_read_elsewhere_kept_or_placed_otherwise_is_copied() -> None:
    written = {"p": LAYOUT, "q": LAYOUT}
    nodes = _copy_nodes() + [_doc("R", "r[y0]", "q[y0] + 1.0", [["y0", 8]])]
    assert inline_slices(nodes, {"C": ("p", "q")}, written, set()) == {"C": ["P"]}  # q: R reads it too
    assert inline_slices(_copy_nodes(), {"C": ("p", "q")}, written, {"q"}) == {"C": ["P"]}  # q: an output
    transposed = _copy_nodes("q[y0 + 2 * y1]", [["y0", 2], ["y1", 4]])  # not the copy's placement
    assert inline_slices(transposed, {"C": ("p", "q")}, written, set()) == {"C": ["P"]}
    reduction = _copy_nodes()
    reduction[1]["reduce"] = [["r0", 3]]
    assert inline_slices(reduction, {"C": ("p", "q")}, written, set()) == {"C": ["P"]}
