"""Check generated code against the reference interpreter on the same random inputs.

Outputs are compared on their logical views (gaps of strided storages are nobody's business) with
`torch.testing.assert_close` default tolerances for the precision the value was computed in, NaN
equal to NaN, widened only where the computation itself leaves room (floating sums: the order of
summation; torch library calls: the BLAS) -- see `value_tolerances`. An element outside them is
still a match where the reference itself is that far from the exact value and generated code is
about as close to it (`fuseopt.runtime.float64`: the graph run in float64). The generated run
starts from poisoned buffers, so an unwritten element fails. A mismatch raises `CheckFailed`
naming the buffer and its worst element (index, got, expected).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from fuseopt.errors import CheckFailed, Diagnostic
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Cast, Const, Expr, IndexValue, Load, Reduce, walk
from fuseopt.ir.graph import BufferInfo, ComputeNode, Graph, LibraryNode
from fuseopt.plan import Plan
from fuseopt.runtime.float64 import as_close_as_the_reference, multiplier, run_float64
from fuseopt.runtime.module import run_module


@dataclass(frozen=True)
class Mismatch:
    """How one output differs: its worst element, its first (in logical row-major order), how
    many differ, and the tolerance they were held to (None, None: exact, an integer or bool);
    `float64`: where the float64 run decided too, the multiplier those elements exceed (each is
    farther from the float64 value than that many times the reference's distance)."""

    buffer: str
    index: tuple[int, ...]
    got: float | int | bool
    expected: float | int | bool
    count: int
    total: int
    first: tuple[int, ...] = ()
    first_got: float | int | bool = 0
    first_expected: float | int | bool = 0
    rtol: float | None = None
    atol: float | None = None
    float64: float | None = None

    def tolerance(self) -> str:
        if self.rtol is None or self.atol is None:
            return "exact"
        text = f"rtol {self.rtol:.3g}, atol {self.atol:.3g}"
        if self.float64 is not None:
            text += f"; and farther from a float64 run than {self.float64:g}x the reference"
        return text

    def message(self) -> str:
        return (
            f"buffer {self.buffer!r}: generated code differs from the interpreter in {self.count} of "
            f"{self.total} elements ({self.tolerance()}); first at index {list(self.first)}: got "
            f"{self.first_got!r}, expected {self.first_expected!r}; worst at index {list(self.index)}: "
            f"got {self.got!r}, expected {self.expected!r}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "buffer": self.buffer,
            "count": self.count,
            "total": self.total,
            "first": {
                "index": list(self.first),
                "got": _number(self.first_got),
                "expected": _number(self.first_expected),
            },
            "worst": {
                "index": list(self.index),
                "got": _number(self.got),
                "expected": _number(self.expected),
            },
            "rtol": self.rtol,
            "atol": self.atol,
            "float64": self.float64,
        }


def _number(v: float | int | bool) -> float | int | bool | str:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # nan, inf, -inf: keep the JSON valid
    return v


@dataclass(frozen=True)
class OutputCheck:
    """One output buffer of a generated run against the reference: `mismatch` is None on a match;
    `missing` when the generated module did not return it."""

    buffer: str
    rtol: float | None
    atol: float | None
    mismatch: Mismatch | None = None
    missing: bool = False
    float64: int = 0  # elements outside the tolerance that the float64 run decided were a match

    @property
    def ok(self) -> bool:
        return self.mismatch is None and not self.missing

    def message(self) -> str:
        if self.missing:
            return f"buffer {self.buffer!r}: the generated module did not return it"
        return "" if self.mismatch is None else self.mismatch.message()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "buffer": self.buffer,
            "verdict": "match" if self.ok else "mismatch",
            "rtol": self.rtol,
            "atol": self.atol,
            "float64_matched": self.float64,
        }
        if self.missing:
            out["missing"] = True
        if self.mismatch is not None:
            out["mismatch"] = self.mismatch.to_json()
        return out


def logical_view(storage: torch.Tensor, b: BufferInfo) -> torch.Tensor:
    return torch.as_strided(storage, b.shape, b.stride, b.offset)


def compare_buffer(
    b: BufferInfo,
    got: torch.Tensor,
    expected: torch.Tensor,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    exact: torch.Tensor | None = None,
) -> Mismatch | None:
    """None if the logical views agree (assert_close defaults unless both tolerances are given),
    or, given `exact` (the float64 run's storage), where every element that does not is as close
    to the float64 value as the reference is (`float64.as_close_as_the_reference`)."""
    g = logical_view(got.detach().cpu(), b)
    e = logical_view(expected.detach().cpu(), b)
    try:
        torch.testing.assert_close(g, e, equal_nan=True, rtol=rtol, atol=atol)
        return None
    except AssertionError:
        pass
    if e.dtype.is_floating_point:
        gf, ef = g.double(), e.double()
        rtol, atol = (rtol, atol) if rtol is not None and atol is not None else _tolerances(e.dtype)
        excess = (gf - ef).abs() - (atol + rtol * ef.abs())
        nan_bad = gf.isnan() != ef.isnan()
        inf_bad = (gf.isinf() | ef.isinf()) & (gf != ef) & ~(gf.isnan() & ef.isnan())
        excess = torch.where(nan_bad | inf_bad, torch.full_like(excess, float("inf")), excess)
        excess = torch.where(gf.isnan() & ef.isnan(), torch.full_like(excess, -1.0), excess)
        bad = excess > 0
        if exact is not None:
            bad &= ~as_close_as_the_reference(g, e, logical_view(exact.detach().cpu(), b), rtol, atol)
            if not bad.any():
                return None
            excess = torch.where(bad, excess, torch.full_like(excess, -1.0))
    else:
        bad = g != e
        excess = bad.double() if e.dtype == torch.bool else (g.double() - e.double()).abs() * bad
    flat = int(torch.argmax(excess.reshape(-1)).item()) if excess.numel() else 0
    first = int(torch.argmax(bad.reshape(-1).to(torch.uint8)).item()) if bad.numel() else 0
    gs, es = g.reshape(-1), e.reshape(-1)
    integral = not e.dtype.is_floating_point
    if not integral and (rtol is None or atol is None):
        rtol, atol = _tolerances(e.dtype)
    return Mismatch(
        b.name,
        _unravel(flat, b.shape),
        gs[flat].item() if g.numel() else 0,
        es[flat].item() if e.numel() else 0,
        int(bad.sum().item()),
        e.numel(),
        first=_unravel(first, b.shape),
        first_got=gs[first].item() if g.numel() else 0,
        first_expected=es[first].item() if e.numel() else 0,
        rtol=None if integral else rtol,
        atol=None if integral else atol,
        float64=None if exact is None or integral else multiplier(e.dtype),
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(shape))) if shape else ()


def _tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """assert_close's defaults (rtol, atol) per float dtype."""
    return {
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
    }[dtype]


def compare_with_reference(
    graph: Graph,
    plan: Plan,
    seed: int = 0,
    *,
    source: str | None = None,
    device: str | torch.device | None = None,
    autotune: bool = False,
    rtol: float | None = None,
    atol: float | None = None,
) -> dict[str, torch.Tensor]:
    """Run generated code (for `plan`, or `source`) and the interpreter on the same inputs.

    Returns the generated outputs; raises `CheckFailed` listing every mismatching output buffer
    (in buffer order). `device` defaults to CUDA when available, else CPU (TRITON_INTERPRET=1).
    `rtol`/`atol` (both or neither) replace the per-output tolerances of `value_tolerances`.
    """
    from fuseopt.codegen import emit_module
    from fuseopt.interp import make_inputs, run_graph

    inputs = make_inputs(graph, seed=seed)
    expected = run_graph(graph, {k: v.clone() for k, v in inputs.items()}, seed=seed)
    src = source if source is not None else emit_module(graph, plan, autotune=autotune)
    dev = torch.device(device) if device is not None else _default_device()
    got = run_module(src, {k: v.clone().to(dev) for k, v in inputs.items()}, poison=True)
    checks = check_outputs(graph, got, expected, rtol=rtol, atol=atol, inputs=inputs)
    problems = [
        Diagnostic(c.message(), code="check" if c.missing else "mismatch") for c in checks if not c.ok
    ]
    if problems:
        raise CheckFailed(problems)
    return got


def check_outputs(
    graph: Graph,
    got: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    inputs: Mapping[str, torch.Tensor] | None = None,
) -> list[OutputCheck]:
    """Each output buffer's storages from a generated run (`got`) against the reference's
    (`expected`), in buffer order, under `value_tolerances` (or `rtol`/`atol`, both or neither).
    Given the run's `inputs`, a float output that differs is compared with the graph run in
    float64 on them too (run once, on the first such output; `fuseopt.runtime.float64`)."""
    exact = functools.cache(lambda: run_float64(graph, inputs)) if inputs is not None else None
    out = []
    for b in graph.outputs:
        tol = (rtol, atol) if rtol is not None and atol is not None else value_tolerances(graph, b)
        shown_tol = tol if tol != (None, None) or not b.dtype.is_float else _tolerances(_TORCH[b.dtype])
        if b.name not in got:
            out.append(OutputCheck(b.name, shown_tol[0], shown_tol[1], missing=True))
            continue
        m = compare_buffer(b, got[b.name], expected[b.name], rtol=tol[0], atol=tol[1])
        wide = exact() if m is not None and b.dtype.is_float and exact is not None else None
        if m is None or wide is None:
            out.append(OutputCheck(b.name, shown_tol[0], shown_tol[1], m))
            continue
        decided = compare_buffer(
            b, got[b.name], expected[b.name], rtol=tol[0], atol=tol[1], exact=wide[b.name]
        )
        matched = m.count - (0 if decided is None else decided.count)
        out.append(OutputCheck(b.name, shown_tol[0], shown_tol[1], decided, float64=matched))
    return out


def value_tolerances(graph: Graph, b: BufferInfo) -> tuple[float | None, float | None]:
    """Tolerances for one output, from how its value was computed (inputs are exact):

    - assert_close's defaults for the coarsest float precision its value went through (a float32
      sum kept in float64 buffers carries float32 rounding, whoever computed it; a float32 value
      computed from a float16 buffer carries float16 rounding, which a 1-ulp difference upstream
      shows);
    - for a 16-bit float, times the roundings to it on the longest path to the value: the defaults
      (float16 1e-3, about one ulp) cover one, and a value rounded again after a 1-ulp difference
      (a cast of `x * sigmoid(x)` to float16 flipped by the device's exp, then multiplied in
      float16) differs by more;
    - times sqrt(rnumel) downstream of a floating sum/prod over rnumel terms (summation order is
      the generator's choice, and a cancelling sum magnifies the difference relative to itself);
    - looser ones where the value depends on a torch library call (mm/bmm/addmm), whose BLAS
      differs between devices (cuBLAS vs CPU: ~2e-5 at K=256).
    """
    if not b.dtype.is_float:
        return None, None
    acc = _accuracy(graph).get(b.name)
    dtype = _coarser(b.dtype, acc[0] if acc else None)
    if b.name in _downstream_of_library(graph):
        rtol, atol = _LIBRARY_TOLERANCES[dtype]
    else:
        rtol, atol = _tolerances(_TORCH[dtype])
    terms = acc[1] if acc else 1
    roundings = acc[2] if acc else 1
    if dtype in _HALF and roundings > 1:
        rtol, atol = rtol * roundings, atol * roundings
    if terms > 2:
        # Two summation orders differ by ~sqrt(n) ulps of the terms' magnitude; relative to a sum
        # that cancels (randn terms: |sum| ~ sqrt(n) |x|) that is far more than log2(n) ulps of
        # the result. Measured on the H200: an 8192-term float32 row sum differs from the CPU's by
        # 1.4e-4 (eager, torch.compile and fuseopt alike).
        scale = math.sqrt(terms)
        rtol, atol = rtol * scale, atol * scale
    if (rtol, atol) == _tolerances(_TORCH[b.dtype]):
        return None, None
    return rtol, atol


_RANK = {DType.bfloat16: 0, DType.float16: 1, DType.float32: 2, DType.float64: 3}


def _coarser(a: DType, b: DType | None) -> DType:
    return a if b is None or _RANK[a] <= _RANK[b] else b


_HALF = (DType.float16, DType.bfloat16)


def _accuracy(graph: Graph) -> dict[str, tuple[DType | None, int, int]]:
    """Buffer -> (the coarsest float dtype any arithmetic upstream of it ran in, or any buffer
    upstream kept it in; the most terms of a floating sum/prod upstream of it; the most roundings
    to a 16-bit float on a path to it)."""
    out: dict[str, tuple[DType | None, int, int]] = {}
    for node in graph.nodes:
        worst: DType | None = None
        terms = 1
        before = 0
        for r in node.read_buffers():
            if r in out:
                d, t, k = out[r]
                worst = d if worst is None else _coarser(worst, d)
                terms = max(terms, t)
                before = max(before, k)
        roundings = before
        if isinstance(node, ComputeNode):
            for e in walk(node.value):
                if isinstance(e, Load | Const | IndexValue | Cast) or e.dtype is None or not e.dtype.is_float:
                    continue
                worst = e.dtype if worst is None else _coarser(worst, e.dtype)
                if isinstance(e, Reduce) and e.op in ("sum", "prod"):
                    terms = max(terms, node.rnumel)
            stored = graph.buffer(node.output).dtype
            if stored.is_float:  # a value kept in a buffer carries the buffer's rounding downstream
                worst = stored if worst is None else _coarser(worst, stored)
            store = node.value.dtype not in _HALF and stored in _HALF
            roundings += _half_roundings(node.value, {}) + store
        for o in node.outputs:
            out[o] = (worst, terms, roundings)
    return out


def _half_roundings(e: Expr, memo: dict[int, int]) -> int:
    """The most results rounded to a 16-bit float on one path from a leaf of `e` to its root
    (arithmetic in it and casts to it; loads, literals and index values round nothing here).
    Memoised by identity: a captured value shares its sub-expressions."""
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    below = max((_half_roundings(c, memo) for c in e.children()), default=0)
    out = below if isinstance(e, Load | Const | IndexValue) else below + (e.dtype in _HALF)
    memo[id(e)] = out
    return out


def _downstream_of_library(graph: Graph) -> set[str]:
    tainted: set[str] = set()
    for node in graph.nodes:
        if isinstance(node, LibraryNode) or any(r in tainted for r in node.read_buffers()):
            tainted.update(node.outputs)
    return tainted


_LIBRARY_TOLERANCES: dict[DType, tuple[float, float]] = {
    DType.float64: (1e-7, 1e-7),
    DType.float32: (1e-4, 1e-4),
    DType.float16: (2e-3, 1e-3),
    DType.bfloat16: (2e-2, 1e-2),
}
_TORCH = {
    DType.float16: torch.float16,
    DType.bfloat16: torch.bfloat16,
    DType.float32: torch.float32,
    DType.float64: torch.float64,
}


def _default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
