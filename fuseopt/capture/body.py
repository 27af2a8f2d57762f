"""One Inductor loop body -> one FORMAT node: the body is run with an ops handler that builds trees.

`LoopBody(vars)` replays the body's FX graph against `V.ops`; `BodyHandler` is that handler. Each op
becomes a node of fuseopt's expression tree (`fuseopt.ir.expr`), by rule tables keyed by the op's
name; an op without a rule is an error naming it. Masked sub-blocks are run inside `masked(...)`,
index expressions go through `IndexPrinter`, and an indirect index is a symbol that prints as the
load it came from. Multi-output reductions (Welford's var_mean, online softmax) become one reduction
per output buffer; a later output reads an earlier one's buffer (see `_output`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import sympy

from fuseopt.capture.errors import CaptureError
from fuseopt.capture.index import IndexPrinter
from fuseopt.capture.indirect import IndexCompiler, Indirect, proved_in_range, wrapped
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Cast, Const, Expr, IndexValue, Load, Masked, Reduce, Unary, Var, Where

MAX_INT = 2**63 - 1
INDIRECT_PREFIX = "fuseopt_indirect_"

# Inductor op -> fuseopt unary op (`neg` and `not` are the operators `-` and `~`).
UNARY_OPS: dict[str, str] = {
    "neg": "neg",
    "logical_not": "not",
    "bitwise_not": "not",
    **{
        name: name
        for name in (
            "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "abs", "sin", "cos",
            "tan", "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "round", "trunc", "sign",
            "reciprocal", "isnan", "isinf",
        )
    },
}  # fmt: skip

# Inductor op -> fuseopt binary op. Inductor's `mod` is C's (sign of the dividend): fmod;
# `remainder` and `floordiv` are Python's: % and //.
BINARY_OPS: dict[str, str] = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "truediv": "truediv",
    "div_rn": "truediv",  # correctly rounded, as the format's `/` is (code generation: `rounded`)
    "floordiv": "floordiv",
    "remainder": "mod",
    "mod": "fmod",
    "fmod": "fmod",
    "maximum": "maximum",
    "minimum": "minimum",
    "pow": "pow",
    "atan2": "atan2",
    "lt": "lt",
    "le": "le",
    "gt": "gt",
    "ge": "ge",
    "eq": "eq",
    "ne": "ne",
    "and_": "and",
    "or_": "or",
    "logical_and": "and",
    "logical_or": "or",
    "logical_xor": "ne",  # of operands Inductor has converted to bool
    "bitwise_and": "and",
    "bitwise_or": "or",
}

REDUCTIONS: dict[str, str] = {
    "sum": "sum",
    "prod": "prod",
    "max": "max",
    "min": "min",
    "argmax": "argmax",
    "argmin": "argmin",
    "any": "any",
    # the value half of `max(dim)` / `min(dim)` whose index is unused: the extreme, NaN first,
    # as argmax/argmin choose it
    "argmax_value": "max",
    "argmin_value": "min",
}

# Reductions with several outputs, each stored by its own node: the number of outputs.
MULTI_OUTPUT_REDUCTIONS: dict[str, int] = {
    "welford_reduce": 3,
    "welford_combine": 3,
    "online_softmax_reduce": 2,
    "argmax_with_value": 2,  # `max(dim)`'s (values, indices)
    "argmin_with_value": 2,
}

# Inductor's random ops (`torch.rand_like`, dropout in training): FORMAT graphs are deterministic.
RANDOM_OPS = frozenset({"rand", "randn", "randint64", "load_seed", "seed", "inductor_random"})

# Ops that only check or annotate: they produce nothing a graph needs.
IGNORED_OPS = frozenset({"check_bounds", "device_assert_async"})


def dtype_of(torch_dtype: Any, *, node: str | None = None) -> DType:
    """The FORMAT dtype of a torch dtype, or an error naming it."""
    name = str(torch_dtype).removeprefix("torch.")
    try:
        return DType(name)
    except ValueError:
        raise CaptureError(
            f"dtype {name} is not in FORMAT v1 ({', '.join(d.value for d in DType)})", node=node
        ) from None


def constant(value: Any, dtype: DType | None, *, node: str) -> Const:
    """A literal of the given dtype's kind (a float dtype prints as a float literal)."""
    if dtype == DType.bool or isinstance(value, bool):
        return Const(bool(value))
    if (dtype is not None and dtype.is_float) or isinstance(value, float):
        return Const(float(value))
    v = int(value)
    if abs(v) > MAX_INT:
        raise CaptureError(f"integer constant {v} is outside FORMAT v1's range |v| < 2**63", node=node)
    return Const(v)


@dataclass(frozen=True)
class ReductionPart:
    """Output `index` of a multi-output reduction of `value` (what `getitem` on it returns).
    `parts`: a Welford combine's (mean, M2, weight) of each point (a split reduction's chunks, or
    masked points), `value` being the mean."""

    kind: str
    index: int
    value: Expr
    parts: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Store:
    buffer: str
    index: sympy.Expr
    value: Expr | ReductionPart


class BodyEnv(Protocol):
    """What a body's conversion needs from the graph around it (implemented by the converter)."""

    def load(self, name: str, index: sympy.Expr, ctx: NodeContext) -> Expr: ...

    def storage_size(self, buffer: str) -> int:
        """The storage size, in elements, of a buffer a load reads (by the name it has in the graph)."""
        ...

    def output_of(self, part: ReductionPart, index: int, store: Load, ctx: NodeContext) -> str:
        """The buffer of output `index` of the multi-output reduction `part` belongs to (made, at
        this node's loops and store index, where nothing writes it)."""
        ...

    def index_buffer(self, value: Expr, ctx: NodeContext) -> Load:
        """An integer value written at every point of the node's loops into a buffer of its own
        (by a node made before it), loaded at the point: an indirect index that has no exact
        form as index arithmetic."""
        ...


@dataclass
class NodeContext:
    """Per-node state of a conversion: loop symbols, indirect symbols, the store seen."""

    node: str
    loop_vars: dict[sympy.Symbol, str]
    var_ranges: dict[sympy.Symbol, int]
    rnumel: int
    indirect: dict[sympy.Symbol, Expr] = field(default_factory=dict)
    indirect_dims: dict[sympy.Symbol, Indirect] = field(default_factory=dict)
    stores: list[Store] = field(default_factory=list)
    masks: list[Expr] = field(default_factory=list)  # the conditions of the `masked` bodies being run

    def printer(self) -> IndexPrinter:
        return IndexPrinter(self.loop_vars, self.indirect, self.node)

    def index(self, e: Any) -> Expr:
        return self.printer()(e)


class BodyHandler:
    """An Inductor ops handler whose values are fuseopt expression trees."""

    def __init__(self, env: BodyEnv, ctx: NodeContext):
        self._env = env
        self._ctx = ctx

    # -- any op without a rule ------------------------------------------------------------------
    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in UNARY_OPS:
            op = UNARY_OPS[name]
            return lambda x: Unary(op, self._value(x))
        if name in BINARY_OPS:
            op2 = BINARY_OPS[name]
            return lambda a, b: Binary(op2, self._value(a), self._value(b))
        if name in IGNORED_OPS:
            return lambda *args, **kwargs: None
        node = self._ctx.node

        def unsupported(*args: Any, **kwargs: Any) -> Any:
            # Raised when the op is used, not when it is looked up (Inductor may probe handlers).
            if name in RANDOM_OPS:
                raise CaptureError(f"random op {name!r}: random ops are not captured", node=node)
            raise CaptureError(
                f"op {name!r} is not supported by capture (FORMAT v1 has no equivalent)", node=node
            )

        return unsupported

    def _value(self, x: Any) -> Expr:
        if isinstance(x, Expr):
            return x
        if isinstance(x, bool | int | float):
            return constant(x, None, node=self._ctx.node)
        if isinstance(x, ReductionPart):
            raise CaptureError(
                f"the result of {x.kind} is used before it is stored (fused reductions are not supported)",
                node=self._ctx.node,
            )
        raise CaptureError(f"unexpected value {type(x).__name__} in a loop body", node=self._ctx.node)

    # -- leaves ----------------------------------------------------------------------------------
    def load(self, name: str, index: sympy.Expr) -> Expr:
        return self._env.load(name, index, self._ctx)

    def constant(self, value: Any, dtype: Any) -> Expr:
        return constant(value, dtype_of(dtype, node=self._ctx.node), node=self._ctx.node)

    def index_expr(self, index: Any, dtype: Any) -> Expr:
        target = dtype_of(dtype, node=self._ctx.node)
        tree = self._ctx.index(index)
        if isinstance(tree, Const):
            return constant(tree.value, target, node=self._ctx.node)
        if isinstance(tree, Load):  # item()'s scalar (a float one too): its 0-d buffer's value
            return Cast(tree, target)
        value: Expr = tree if isinstance(tree, Var) else IndexValue(tree)
        return value if target == DType.int64 else Cast(value, target)

    value_expr = index_expr

    def indirect_indexing(self, x: Any, size: Any, check: bool = True, wrap_neg: bool = True) -> sympy.Symbol:
        # The symbol must not be named like Inductor's own (`indirect0`): LoopBody.replace_indirect
        # skips a replacement whose new symbol prints like the old one, leaving Inductor's symbol in
        # the index. The prefix cannot be one of Inductor's (SymT prefixes are short lowercase words).
        n = int(size)
        sizes = {name: self._ctx.var_ranges[sym] for sym, name in self._ctx.loop_vars.items()}
        value = self._value(x)
        try:
            index = IndexCompiler(self._ctx.node, sizes, self._env.storage_size)(value)
        except CaptureError:
            # No exact form as index arithmetic (a float of loaded data: grid_sample's
            # `floor(grid * 2.5 + 2.0)`): the value in a buffer of its own, and the index a load.
            index = self._env.index_buffer(value, self._ctx)
        if wrap_neg:
            index = wrapped(index, n)
        proved = proved_in_range(index, n, sizes, self._ctx.node)
        if proved is not None:
            index, check = proved, False
        sym = sympy.Symbol(f"{INDIRECT_PREFIX}{len(self._ctx.indirect)}", integer=True)
        self._ctx.indirect[sym] = index
        self._ctx.indirect_dims[sym] = Indirect(index, n, bool(check))
        return sym

    # -- structure -------------------------------------------------------------------------------
    def to_dtype(self, x: Any, dtype: Any, src_dtype: Any = None, use_compute_types: bool = True) -> Expr:
        return Cast(self._value(x), dtype_of(dtype, node=self._ctx.node))

    def identity(self, x: Any) -> Expr:
        return self._value(x)

    def square(self, x: Any) -> Expr:
        v = self._value(x)
        return Binary("mul", v, v)

    def truncdiv(self, a: Any, b: Any) -> Expr:
        """Integer division rounding toward zero: `a - fmod(a, b)` is a multiple of `b` (fmod
        takes a's sign), so its floor division by `b` is exact."""
        va, vb = self._value(a), self._value(b)
        return Binary("floordiv", Binary("sub", va, Binary("fmod", va, vb)), vb)

    def bitwise_xor(self, a: Any, b: Any) -> Expr:
        """`(a | b) & ~(a & b)`: exact bit by bit, on bools and on integers alike."""
        va, vb = self._value(a), self._value(b)
        return Binary("and", Binary("or", va, vb), Unary("not", Binary("and", va, vb)))

    def bitwise_left_shift(self, a: Any, b: Any) -> Expr:
        """`a * 2**b`: exact in wrapping integer arithmetic for every shift below the width (and 0
        past it, as `2**b` wraps to 0)."""
        return Binary("mul", self._value(a), Binary("pow", self._value(2), self._value(b)))

    def bitwise_right_shift(self, a: Any, b: Any) -> Expr:
        """`a // 2**(b // 2) // 2**(b - b // 2)`: floor division is an arithmetic shift, and two
        halves keep each power of two inside the width where the whole shift would not."""
        va, vb = self._value(a), self._value(b)
        low = Binary("floordiv", vb, self._value(2))
        two = self._value(2)
        return Binary(
            "floordiv",
            Binary("floordiv", va, Binary("pow", two, low)),
            Binary("pow", two, Binary("sub", vb, low)),
        )

    def atan(self, x: Any) -> Expr:
        return Binary("atan2", self._value(x), self._value(1.0))

    def where(self, cond: Any, a: Any, b: Any) -> Expr:
        return Where(self._value(cond), self._value(a), self._value(b))

    def masked(self, mask: Any, body: Callable[[], Any], other: Any) -> Expr:
        cond = self._value(mask)
        self._ctx.masks.append(cond)
        try:
            value = self._value(body())
        finally:
            self._ctx.masks.pop()
        return Masked(cond, value, self._value(other))

    def reduction(self, dtype: Any, src_dtype: Any, reduction_type: str, value: Any) -> Any:
        if reduction_type == "welford_combine":  # value: (mean, M2, weight) of each point
            parts = tuple(self._value(v) for v in value)
            return tuple(ReductionPart(reduction_type, i, parts[0], parts) for i in range(3))
        if reduction_type in MULTI_OUTPUT_REDUCTIONS:
            v = self._value(value)
            return tuple(
                ReductionPart(reduction_type, i, v) for i in range(MULTI_OUTPUT_REDUCTIONS[reduction_type])
            )
        op = REDUCTIONS.get(reduction_type)
        if op is None:
            raise CaptureError(
                f"reduction {reduction_type!r} is not supported (FORMAT v1: {', '.join(REDUCTIONS)}, "
                f"and Welford/online-softmax outputs)",
                node=self._ctx.node,
            )
        return Reduce(op, self._value(value))

    def store(self, name: str, index: Any, value: Any, mode: Any = None) -> None:
        if mode is not None:
            raise CaptureError(
                f"store mode {mode!r} (e.g. scatter's atomic_add) is not supported", node=self._ctx.node
            )
        if value is None:  # the result of an ignored op (an assert's): nothing to store
            return
        self._ctx.stores.append(Store(name, index, self._value(value)))

    def store_reduction(self, name: str, index: Any, value: Any) -> None:
        if not isinstance(value, ReductionPart):
            value = self._value(value)
        self._ctx.stores.append(Store(name, index, value))


def reduction_value(part: Expr | ReductionPart, store: Load, env: BodyEnv, ctx: NodeContext) -> Expr:
    """The top-level reduction a node stores: plain, or one output of a multi-output reduction.
    A later output reads an earlier one from its buffer at this node's store index (FORMAT v1 has
    one reduction a node): Welford's M2 the mean, a combine's mean the total weight, online
    softmax's sum the max."""
    if isinstance(part, Expr):
        return part
    n = float(ctx.rnumel)
    if part.kind == "welford_reduce":
        if part.index == 0:  # mean
            return Reduce("sum", Binary("truediv", part.value, Const(n)))
        if part.index == 2:  # weight: the number of elements reduced, counted over the value
            # (1.0 for every point, NaN included) as Inductor's node, which reads what the mean
            # and M2 read: the planner then sees the kernel the three share
            v = part.value
            return Reduce("sum", Where(Binary("eq", v, v), Const(1.0), Const(1.0)))
        return Reduce("sum", _squared(Binary("sub", part.value, _output(part, 0, store, env, ctx))))
    if part.kind == "welford_combine":  # Chan et al.'s parallel combination of (mean, M2, weight)
        mean, m2, weight = part.parts
        if part.index == 2:  # weight: the total
            return Reduce("sum", weight)
        if part.index == 0:  # mean: the weighted means over the total weight
            total = _output(part, 2, store, env, ctx)
            return Reduce("sum", Binary("truediv", Binary("mul", weight, mean), total))
        delta = Binary("sub", mean, _output(part, 0, store, env, ctx))
        return Reduce("sum", Binary("add", m2, Binary("mul", weight, _squared(delta))))
    if part.kind in ("argmax_with_value", "argmin_with_value"):  # (the extreme, its first index)
        extreme = part.kind.removesuffix("_with_value")
        return Reduce(extreme.removeprefix("arg") if part.index == 0 else extreme, part.value)
    # online softmax: (max, sum(exp(x - max)))
    if part.index == 0:
        return Reduce("max", part.value)
    return Reduce("sum", Unary("exp", Binary("sub", part.value, _output(part, 0, store, env, ctx))))


def _squared(e: Expr) -> Expr:
    return Binary("mul", e, e)


def _output(part: ReductionPart, index: int, store: Load, env: BodyEnv, ctx: NodeContext) -> Expr:
    """Output `index` of the same reduction at this point: a load of its buffer at this node's
    store index (the converter checks the outputs share a layout).

    Inductor computes the outputs of one multi-output reduction together; FORMAT v1 has one
    reduction per node, so the later outputs (Welford's M2, a combine's mean, online softmax's
    sum) read the earlier one (the mean, the total weight, the max) from its buffer."""
    return Load(env.output_of(part, index, store, ctx), store.index)


def run_body(body: Any, sizes: Sequence[Sequence[int]], env: BodyEnv, ctx: NodeContext) -> list[Store]:
    """Replay `body` (an Inductor LoopBody) on the symbols of `ctx` with a BodyHandler."""
    from torch._inductor.virtualized import V

    syms = list(ctx.loop_vars)
    iter_syms = syms[: len(sizes[0])]
    red_syms = syms[len(sizes[0]) :]
    handler: Any = BodyHandler(env, ctx)  # duck-typed: ops without a rule raise by name
    with V.set_ops_handler(handler):
        body(iter_syms, red_syms)
    return ctx.stores
