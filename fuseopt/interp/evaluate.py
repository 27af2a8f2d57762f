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
from fuseopt.interp.ops import (
    BINARY,
    EXACT_INDEX,
    INDEX_RANGE,
    INT64_MAX,
    INT64_MIN,
    INT_DIVISIONS,
    TORCH_DTYPE,
    UNARY,
    int_range,
    lookup,
)
from fuseopt.interp.plan import NodePlan, plan_for
from fuseopt.ir.bounds import index_magnitude
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
        self._overflow: dict[int, bool] = {}  # index (by id) -> may an intermediate leave int64
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
        """An index expression in exact int64, summed from its smallest terms to its largest.

        An index some intermediate of which may leave int64 (by its static bound, loads at their
        dtype's range) is computed as a tree instead, each operation that its operands' actual
        ranges do not keep in int64 checked lane by lane: an overflow is a located error, never a
        wrapped index."""
        if self._may_overflow(e):
            return self._exact(e, e, scope)[0]
        split = self.plan.sums.get(id(e))
        if split is None or len(split.terms) < 2:
            return self.operand(e, torch.int64, scope)
        parts = [self.value(t, scope) * k if k != 1 else self.value(t, scope) for t, k in split.terms]
        parts.sort(key=lambda t: t.numel())  # stable: ties keep the written order
        acc = parts[0] + split.const if split.const else parts[0]
        for p in parts[1:]:
            acc = acc + p
        return acc.to(torch.int64)

    def _may_overflow(self, e: Expr) -> bool:
        """Whether some intermediate of the index `e` can leave int64 (`bounds.index_magnitude`
        over the node's box, each load at its storage dtype's range); memoised per tree."""
        hit = self._overflow.get(id(e))
        if hit is None:
            m = index_magnitude(e, self.node.var_sizes, self._load_range)
            hit = self._overflow[id(e)] = m is None or m > INT64_MAX
        return hit

    def _load_range(self, ld: Load) -> tuple[int, int]:
        return int_range(self.storages[ld.buffer].dtype)

    def _exact(self, e: Expr, root: Expr, scope: _Scope) -> tuple[Tensor, int, int]:
        """`e` (a sub-tree of the index `root`) in int64, with bounds on its values: operands'
        actual ranges (a load's by its values) decide where an operation cannot overflow; the rest
        are checked lane by lane, where the scope's mask holds."""
        if isinstance(e, Const):
            return scalar(e.value, torch.int64), int(e.value), int(e.value)
        if isinstance(e, Var):
            d = self.box.names.index(e.name)
            return self.vars[e.name], self.box.starts[d], self.box.stops[d] - 1
        if isinstance(e, Load):
            t = self.value(e, scope).to(torch.int64)
            if t.numel() == 0:
                return t, 0, 0
            least, most = torch.aminmax(t)
            return t, int(least), int(most)
        if isinstance(e, IndexValue):
            return self._exact(e.index, root, scope)
        if isinstance(e, Unary) and e.op == "neg":
            x, lo, hi = self._exact(e.x, root, scope)
            if lo == INT64_MIN:
                self._overflowed(x == INT64_MIN, e, root, scope)
            return -x, -hi, -lo
        if isinstance(e, Binary) and e.op in EXACT_INDEX:
            a, alo, ahi = self._exact(e.a, root, scope)
            b, blo, bhi = self._exact(e.b, root, scope)
            lo, hi = INDEX_RANGE[e.op]((alo, ahi), (blo, bhi))
            if lo >= INT64_MIN and hi <= INT64_MAX:  # no lane can overflow: plain arithmetic
                return BINARY[e.op](a, b), lo, hi
            r, bad = EXACT_INDEX[e.op](a, b)
            if bad is not None:
                self._overflowed(bad, e, root, scope)
            # checked where the mask holds; a masked-off lane may hold any wrapped value
            wrapped = scope.mask is not None or bad is None
            return r, INT64_MIN if wrapped else lo, INT64_MAX if wrapped else hi
        raise self.error(f"no exact rule for {to_text(e)} in the index {to_text(root)}")

    def _overflowed(self, bad: Tensor, e: Expr, root: Expr, scope: _Scope) -> None:
        if scope.mask is not None:
            bad = bad & scope.mask
        if not bool(bad.any()):
            return
        raise self.error(
            f"the index {to_text(root)} overflows int64 in {to_text(e)} {self._point_of(bad)}; fuseopt "
            "computes indices exactly and does not wrap them",
            code="overflow",
        )

    def _point_of(self, bad: Tensor) -> str:
        """'at the point (i0=3, ...)': the first true element of `bad` (which broadcasts against
        the box)."""
        if self.box.names:
            first = torch.nonzero(bad.broadcast_to(self.box.shape))
            if len(first):
                return f"at the point ({self.box.describe(first[0].tolist())})"
        return "at every point"

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
        if plan.elements:
            self._check_elements(e, idx, scope.mask)
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
        if e.op in INT_DIVISIONS and not dtype.is_floating_point and not isinstance(e.b, Const):
            # Only lanes where the enclosing conditions hold divide (torch raises on a zero
            # divisor); a literal divisor is never zero (the type checker rejects one), and
            # rewriting it would change what masked-off lanes compute, indices included.
            if scope.mask is not None:
                b = torch.where(scope.mask, b, scalar(1, dtype))
            zero = b == 0
            if bool(zero.any()):
                raise self.error(
                    f"integer division by zero in {to_text(e)} {self._point_of(zero)} (torch raises "
                    "ZeroDivisionError; generated code gives an unspecified value)",
                    code="zero-division",
                )
        if e.op == "pow" and dtype == torch.bool:
            # pow(b, true) is b and pow(b, false) is 1 (torch's scalar-exponent shortcuts; the
            # type checker admits no other pow of bools).
            assert isinstance(e.b, Const)
            return a if e.b.value else torch.ones_like(a)
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

    def _check_elements(self, ld: Load, idx: Tensor, mask: Tensor | None) -> None:
        """`ld` reads only elements of its written buffer (no gap of its layout, which nothing
        writes: the reference would read 0 there, generated code what the allocator left)."""
        b = self.plan.gapped[ld.buffer]
        elements: Any = self.plan.element_masks.get(b.name)
        if elements is None or elements.device != idx.device:
            elements = torch.zeros(b.storage_size, dtype=torch.bool, device=idx.device)
            positions = torch.arange(b.storage_size, device=idx.device)
            elements[torch.as_strided(positions, b.shape, b.stride, b.offset).reshape(-1)] = True
            self.plan.element_masks[b.name] = elements
        bad = ~elements[idx]
        if mask is not None:
            bad = bad & mask
        if not bool(bad.any()):
            return
        shape = torch.broadcast_shapes(bad.shape, idx.shape)
        bad, idx = bad.broadcast_to(shape), idx.broadcast_to(shape)
        first = torch.nonzero(bad)[0].tolist() if bad.dim() else []
        where = (
            f"at the point ({self.box.describe(first)})"
            if len(first) == len(self.box.names)
            else "at every point"
        )
        raise self.error(
            f"{to_text(ld)} reads storage position {int(idx[tuple(first)])} of {ld.buffer!r} {where}, which "
            f"is not an element of it (shape {list(b.shape)}, stride {list(b.stride)}, offset {b.offset}): "
            "nothing writes it",
            code="gap",
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
