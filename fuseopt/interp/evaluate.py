"""Vectorised evaluation of one compute node's expressions over a chunk of its loop box.

Each loop variable is an int64 `arange` shaped to broadcast along its own dim of the box (loops,
then reduce), so an expression evaluates to a tensor that broadcasts against the box and is only as
large as the variables it uses. Values are held in their *compute* dtype: fp16/bf16 as float32
(rounded only by `cast` and on store), every other dtype as itself. Operand dtypes follow the typed
tree (torch promotion, literals weak), so torch never promotes behind our back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from fuseopt.interp.errors import InterpError
from fuseopt.interp.ops import BINARY, INT_DIVISIONS, TORCH_DTYPE, UNARY, lookup
from fuseopt.interp.plan import NodePlan, plan_for
from fuseopt.ir.dtypes import DType, compute_dtype, promote
from fuseopt.ir.expr import (
    Binary,
    Cast,
    Const,
    Expr,
    IndexValue,
    Load,
    Masked,
    Reduce,
    Unary,
    Var,
    Where,
    to_text,
    walk,
)
from fuseopt.ir.graph import ComputeNode
from fuseopt.ir.typecheck import BINARY_RESULT, UNARY_RESULT

Tensor = torch.Tensor


def compute_torch_dtype(d: DType | None) -> torch.dtype:
    """The torch dtype a value of typed dtype `d` is held in while computing."""
    assert d is not None, "the interpreter runs typed trees only (fuseopt.ir.typecheck)"
    return TORCH_DTYPE[compute_dtype(d)]


def scalar(value: int | float | bool, dtype: torch.dtype) -> Tensor:
    """A literal as a 0-d tensor of `dtype`, converted as torch converts a Python scalar operand
    (ints wrap into narrow int dtypes, floats round once from double)."""
    if isinstance(value, bool):
        return torch.tensor(value).to(dtype)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64).to(dtype)
    return torch.tensor(value, dtype=torch.float64).to(dtype)


# -- weak operands (Python-scalar-like), mirroring fuseopt.ir.typecheck -------------------------
_WEAK: dict[type[Expr], Callable[[Any], bool]] = {
    Const: lambda e: True,
    Masked: lambda e: is_weak(e.body),
    Where: lambda e: is_weak(e.a) and is_weak(e.b),
    Unary: lambda e: UNARY_RESULT[e.op] == "same" and is_weak(e.x),
    Binary: lambda e: BINARY_RESULT[e.op] == "promote" and is_weak(e.a) and is_weak(e.b),
}


def is_weak(e: Expr) -> bool:
    rule = _WEAK.get(type(e))
    return rule is not None and rule(e)


@dataclass(frozen=True)
class Box:
    """A chunk of a node's iteration space: per dim (loops, then reduce) a name and [start, stop)."""

    names: tuple[str, ...]
    starts: tuple[int, ...]
    stops: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(b - a for a, b in zip(self.starts, self.stops, strict=True))

    def variables(self, device: torch.device | None = None) -> dict[str, Tensor]:
        """Each variable as an int64 arange along its own dim, size 1 along the others."""
        out: dict[str, Tensor] = {}
        nd = len(self.names)
        for d, (name, a, b) in enumerate(zip(self.names, self.starts, self.stops, strict=True)):
            view = [1] * nd
            view[d] = b - a
            out[name] = torch.arange(a, b, dtype=torch.int64, device=device).reshape(view)
        return out

    def describe(self, pos: list[int]) -> str:
        return ", ".join(f"{n}={a + p}" for n, a, p in zip(self.names, self.starts, pos, strict=True))


@dataclass(frozen=True)
class _Scope:
    """Where an expression is evaluated: under a mask (the conjunction of enclosing conditions)."""

    mask: Tensor | None
    key: int


class Evaluator:
    """Evaluates the expressions of one node over one chunk (`box`).

    Sub-expressions that occur more than once in the node (`NodePlan.shared`) are computed once per
    scope; nothing else is kept, so peak memory stays at a few box-sized temporaries.
    """

    def __init__(
        self,
        node: ComputeNode,
        pointer: str,
        storages: Mapping[str, Tensor],
        box: Box,
        plan: NodePlan,
    ):
        self.node = node
        self.pointer = pointer
        self.storages = storages
        self.box = box
        self.plan = plan
        self.vars = box.variables(storages[node.output].device)
        self._cache: dict[tuple[Expr, int], Tensor] = {}
        self._scopes = 0
        self.root = _Scope(None, 0)

    # -- entry points ------------------------------------------------------------------------
    def value(self, e: Expr, scope: _Scope | None = None) -> Tensor:
        """`e` in its compute dtype, broadcastable against the box."""
        scope = scope or self.root
        rule = _RULES.get(type(e))
        if rule is None:
            raise self.error(f"the reference interpreter has no rule for {type(e).__name__} nodes")
        if e not in self.plan.shared:
            return rule(self, e, scope)
        key = (e, scope.key)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = rule(self, e, scope)
        return hit

    def operand(self, e: Expr, dtype: torch.dtype, scope: _Scope) -> Tensor:
        """`e` converted to `dtype`; a literal is made directly in `dtype` (weak, like torch)."""
        if isinstance(e, Const):
            return scalar(e.value, dtype)
        return self.value(e, scope).to(dtype)

    def error(self, message: str, code: str = "runtime") -> InterpError:
        return InterpError(message, node=self.node.name, pointer=self.pointer, code=code)

    def call(self, fn: Callable[..., Tensor], e: Expr, *args: Tensor) -> Tensor:
        try:
            return fn(*args)
        except RuntimeError as exc:
            raise self.error(f"torch rejected {to_text(e)}: {exc}") from None

    # -- rules -------------------------------------------------------------------------------
    def _const(self, e: Const, scope: _Scope) -> Tensor:
        return scalar(e.value, compute_torch_dtype(e.dtype))

    def _var(self, e: Var, scope: _Scope) -> Tensor:
        return self.vars[e.name]

    def index(self, e: Expr, scope: _Scope) -> Tensor:
        """An index expression (int64), summed from its smallest terms to its largest."""
        split = self.plan.sums.get(id(e))
        if split is None or len(split.terms) < 2:
            return self.operand(e, torch.int64, scope)
        parts = [self.value(t, scope) * k if k != 1 else self.value(t, scope) for t, k in split.terms]
        parts.sort(key=lambda t: t.numel())  # stable: ties keep the written order
        acc = parts[0] + split.const if split.const else parts[0]
        for p in parts[1:]:
            acc = acc + p
        return acc.to(torch.int64)

    def _index(self, e: IndexValue, scope: _Scope) -> Tensor:
        return self.index(e.index, scope)

    def _load(self, e: Load, scope: _Scope) -> Tensor:
        storage = self.storages[e.buffer]
        idx = self.index(e.index, scope)
        plan = plan_for(self.plan.loads, e)
        size = storage.numel()
        if plan.check:
            self._check_bounds(e, idx, size, scope.mask)
        if plan.redirect and scope.mask is not None:
            idx = torch.where(scope.mask, idx, 0)
        return storage[idx].to(compute_torch_dtype(e.dtype))

    def _masked(self, e: Masked, scope: _Scope) -> Tensor:
        cond = self.value(e.cond, scope)
        self._scopes += 1
        inner = _Scope(cond if scope.mask is None else scope.mask & cond, self._scopes)
        dtype = compute_torch_dtype(e.dtype)
        body = self.operand(e.body, dtype, inner)
        other = self.operand(e.other, dtype, scope)
        return torch.where(cond, body, other)

    def _where(self, e: Where, scope: _Scope) -> Tensor:
        cond = self.value(e.cond, scope)
        dtype = compute_torch_dtype(e.dtype)
        return torch.where(cond, self.operand(e.a, dtype, scope), self.operand(e.b, dtype, scope))

    def _cast(self, e: Cast, scope: _Scope) -> Tensor:
        # Round to the target dtype, then hold it in its compute dtype (fp16/bf16 -> float32).
        x = self.value(e.x, scope)
        return self.call(lambda t: t.to(TORCH_DTYPE[e.to]).to(compute_torch_dtype(e.to)), e, x)

    def _unary(self, e: Unary, scope: _Scope) -> Tensor:
        fn = lookup(UNARY, e.op, "unary", node=self.node.name, pointer=self.pointer)
        # Predicates (isnan, isinf) see their operand as it is; the others compute in the result dtype.
        dtype_of = e.x.dtype if UNARY_RESULT[e.op] == "bool" else e.dtype
        return self.call(fn, e, self.operand(e.x, compute_torch_dtype(dtype_of), scope))

    def _binary(self, e: Binary, scope: _Scope) -> Tensor:
        fn = lookup(BINARY, e.op, "binary", node=self.node.name, pointer=self.pointer)
        if BINARY_RESULT[e.op] == "bool":  # comparisons run in the operands' promoted dtype
            assert e.a.dtype is not None and e.b.dtype is not None
            op_dtype = promote(e.a.dtype, e.b.dtype, a_weak=is_weak(e.a), b_weak=is_weak(e.b))
        else:
            assert e.dtype is not None
            op_dtype = e.dtype
        dtype = compute_torch_dtype(op_dtype)
        a = self.operand(e.a, dtype, scope)
        b = self.operand(e.b, dtype, scope)
        if e.op in INT_DIVISIONS and scope.mask is not None and not dtype.is_floating_point:
            b = torch.where(scope.mask, b, scalar(1, dtype))
        return self.call(fn, e, a, b)

    def _reduce(self, e: Reduce, scope: _Scope) -> Tensor:
        raise self.error("a reduction is evaluated by its node, not inside an expression")

    # -- run-time bounds ---------------------------------------------------------------------
    def _check_bounds(self, ld: Load, idx: Tensor, size: int, mask: Tensor | None) -> None:
        if mask is None:
            if idx.numel() == 0:
                return
            lo, hi = torch.aminmax(idx)
            if int(lo) >= 0 and int(hi) < size:
                return
            bad = (idx < 0) | (idx >= size)
        else:
            bad = ((idx < 0) | (idx >= size)) & mask
            if not bool(bad.any()):
                return
        shape = torch.broadcast_shapes(bad.shape, idx.shape)
        bad, idx = bad.broadcast_to(shape), idx.broadcast_to(shape)
        first = torch.nonzero(bad)[0].tolist() if bad.dim() else []
        value = int(idx[tuple(first)])
        where = (
            f"at the point ({self.box.describe(first)})"
            if len(first) == len(self.box.names)
            else "at every point"
        )
        indirect = any(isinstance(n, Load) for n in walk(ld.index))
        kind = "indirect load" if indirect else "masked load" if mask is not None else "load"
        cond = " where its mask holds" if mask is not None else ""
        raise self.error(
            f"{kind} {to_text(ld)} reads index {value} of {ld.buffer!r}{cond}, outside its storage of "
            f"{size} elements (valid: [0, {size - 1}]) {where}",
            code="out-of-bounds",
        )


_RULES: dict[type[Expr], Callable[[Evaluator, Any, _Scope], Tensor]] = {
    Const: Evaluator._const,
    Var: Evaluator._var,
    IndexValue: Evaluator._index,
    Load: Evaluator._load,
    Masked: Evaluator._masked,
    Where: Evaluator._where,
    Cast: Evaluator._cast,
    Unary: Evaluator._unary,
    Binary: Evaluator._binary,
    Reduce: Evaluator._reduce,
}
