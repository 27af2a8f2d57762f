"""Programs that write their inputs in place: a KV cache updated with `index_copy_` or by
indexing, BatchNorm's running statistics in training mode, `x.add_(y)` then `x.mul_(2)`.

After functionalization Inductor copies each input's final value into it once, at the end; the
capture makes that copy a node of its own output buffer (`meta.capture.mutations` names the
input), in the input's layout, and a load of the input after it loads that buffer (FORMAT has
no aliasing; Inductor reads a cache it wrote in place). The reference's
outputs and the inputs' new values equal eager torch's, through generated code too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree

from fuseopt.capture import CaptureError, capture_program
from fuseopt.codegen import emit_module
from fuseopt.interp import run_graph
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import run_module

_GEN = torch.Generator().manual_seed(0)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_GEN)


def _index_copy(cache: torch.Tensor, k: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    cache.index_copy_(2, pos, k)
    return F.scaled_dot_product_attention(k, cache, cache)


def _slice_assign(cache: torch.Tensor, k: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    cache[:, :, pos] = k
    return cache.sum(-1)


def _batch_norm(x: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(x, mean, var, training=True, momentum=0.1)


def _twice(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x.add_(y)
    z = x * 3
    x.mul_(2)
    return z, x.sum()


def _half_cache(cache: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    cache.mul_(0.5).add_(k)
    return cache.float().softmax(-1)


PROGRAMS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, int]]] = {
    "index_copy": (_index_copy, (torch.zeros(1, 2, 8, 4), _randn(1, 2, 2, 4), torch.tensor([3, 6])), {"cache": 0}),
    "slice_assign": (_slice_assign, (_randn(2, 3, 8, 4), _randn(2, 3, 1, 4), torch.tensor([5])), {"cache": 0}),
    "batch_norm": (_batch_norm, (_randn(4, 3, 2, 2), _randn(3), _randn(3).abs()), {"mean": 1, "var": 2}),
    "twice": (_twice, (_randn(4, 5), _randn(4, 5)), {"x": 0}),
    "bf16_cache": (_half_cache, (_randn(3, 8).bfloat16(), _randn(3, 8).bfloat16()), {"cache": 0}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inputs_written_in_place_are_outputs(name: str) -> None:
    fn, args, written = PROGRAMS[name]
    eager = [a.clone() for a in args]
    with torch.no_grad():
        want = [t for t in pytree.tree_leaves(fn(*eager)) if isinstance(t, torch.Tensor)]
    cap = capture_program(fn, *[a.clone() for a in args])
    assert {m["input"] for m in cap.graph.meta["capture"]["mutations"]} == set(written)
    storages = run_graph(cap.graph, cap.input_storages())
    stage = optimize(cap.graph)
    generated = run_module(emit_module(stage.graph, stage.plan), cap.input_storages(), poison=True)
    tol = {"rtol": 2e-2, "atol": 1e-2} if args[0].dtype == torch.bfloat16 else {"rtol": 1e-4, "atol": 1e-5}
    for run in (storages, generated):
        got = cap.program_outputs(run)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, **tol)
        updated = cap.updated_inputs(run)
        for input_name, i in written.items():
            torch.testing.assert_close(updated[input_name], eager[i], **tol)


def test_two_writes_of_one_input_are_refused_by_name() -> None:
    """Functionalization leaves one copy an input; were there two, the second would be a second
    writer of the input's value."""
    from fuseopt.capture.convert import Converter

    conv = Converter(graph=type("G", (), {"graph_inputs": {"arg0_1": object()}})(), renames={"arg0_1": "x"})
    conv._written_in_place["arg0_1"] = "buf1"
    with pytest.raises(CaptureError, match="graph input x is written in place twice"):
        conv._mutation(object(), ["arg0_1"], "op2")


def test_a_slice_written_in_place_is_refused_by_name() -> None:
    """`cache[:, 2:5] = k`: Inductor writes the slice into the input and reads the input after."""

    def fn(cache: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        cache[:, 2:5] = k
        return cache.softmax(-1)

    with pytest.raises(CaptureError, match=r"writes \[3, 3\] of graph input cache \[3, 8\] in place"):
        capture_program(fn, _randn(3, 8), _randn(3, 3))
