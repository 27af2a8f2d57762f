"""The program's results read back from a capture (`fuseopt.capture.results`): a tensor returned
twice, an input returned as it is (or after an in-place write), views of inputs and of results,
a module's own parameter and running statistics, in tuples and dicts. Dynamo hands Inductor
each computed result once and returns inputs itself, so Inductor's graph outputs alone are not
the program's results; each result must equal eager torch's, in order."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree

from fuseopt.capture import capture_program
from fuseopt.interp import run_graph

_GEN = torch.Generator().manual_seed(0)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_GEN)


def _twice(x: torch.Tensor) -> Any:
    y = x.exp()
    return y, y, y.t()


def _inputs_between(x: torch.Tensor, w: torch.Tensor) -> Any:
    y = x @ w
    return {"x": x, "y": y, "again": y, "xt": x.t(), "row": x[1]}


def _no_ops(x: torch.Tensor) -> Any:
    """`x.contiguous()` is `x` itself in eager torch, and a graph output for Dynamo."""
    return x.contiguous(), x + 1, x.contiguous(), x.detach(), x.view(-1)


def _square(x: torch.Tensor) -> Any:
    """Square: a repeat or an input must not take the next graph output of the same shape."""
    y = x.exp()
    return x, y, y, y.t(), x.t()


def _written_then_returned(x: torch.Tensor, y: torch.Tensor) -> Any:
    x.add_(y)
    return x, x * 2, y


def _written_returned_alone(x: torch.Tensor) -> Any:
    """Inductor's one graph output is the input itself: its new value's buffer is the result."""
    x.add_(1)
    return x


def _written_returned_late(x: torch.Tensor, y: torch.Tensor) -> Any:
    y.mul_(2)
    return x.sum(), y, y.t(), x


class _Norm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> Any:
        return self.bn(x), self.bn.running_mean, self.bn.weight, x


PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[[], tuple[torch.Tensor, ...]]]] = {
    "twice": (_twice, lambda: (_randn(4, 5),)),
    "inputs_between": (_inputs_between, lambda: (_randn(4, 3), _randn(3, 6))),
    "written_then_returned": (_written_then_returned, lambda: (_randn(4, 5), _randn(4, 5))),
    "written_returned_alone": (_written_returned_alone, lambda: (_randn(4, 5),)),
    "written_returned_late": (_written_returned_late, lambda: (_randn(4, 5), _randn(4, 5))),
    "module_state": (_Norm().train(), lambda: (_randn(6, 3),)),
    "no_ops": (_no_ops, lambda: (_randn(4, 5),)),
    "square": (_square, lambda: (_randn(4, 4),)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_result_reads_back_as_eager_returns_it(name: str) -> None:
    fn, make = PROGRAMS[name]
    args = make()
    state = {k: v.clone() for k, v in fn.state_dict().items()} if isinstance(fn, torch.nn.Module) else {}
    with torch.no_grad():
        want = [
            t.clone()
            for t in pytree.tree_leaves(fn(*[a.clone() for a in args]))
            if isinstance(t, torch.Tensor)
        ]
    if isinstance(fn, torch.nn.Module):
        fn.load_state_dict(state)
    cap = capture_program(fn, *[a.clone() for a in args])
    if isinstance(fn, torch.nn.Module):  # the capture leaves the module's running statistics alone
        assert all(torch.equal(v, state[k]) for k, v in fn.state_dict().items())
    got = cap.program_outputs(run_graph(cap.graph, cap.input_storages()))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape and g.dtype == w.dtype, i
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, msg=lambda m, i=i: f"result {i}: {m}")
    specs = cap.graph.meta["capture"]["outputs"]
    assert len(specs) == len(want)


@functools.lru_cache(maxsize=4)
def _positions(n: int) -> torch.Tensor:
    return torch.arange(n, dtype=torch.float32)


def _cached(x: torch.Tensor) -> torch.Tensor:
    return x + _positions(x.shape[-1])


def test_a_tensor_the_program_caches_stays_real() -> None:
    """Telling the results apart runs the program once more: a tensor it caches (BEiT's relative
    position index is an `lru_cache`) must be a real one, or its next eager call fails."""
    _positions.cache_clear()
    x = _randn(3, 5)
    cap = capture_program(_cached, x)
    (got,) = cap.program_outputs(run_graph(cap.graph, cap.input_storages()))
    again = _cached(x)
    assert type(again) is torch.Tensor
    torch.testing.assert_close(got, again)
