"""The expression language's tree: a small, frozen vocabulary that fits on one screen.

The same tree serves index expressions (integer-valued, over loop variables) and value expressions.
`span` locates a node in its source text and takes no part in equality, so two structurally equal
expressions compare (and hash) equal wherever they were written. `dtype` is filled in by the type
checker (`fuseopt.ir.typecheck`); the parser leaves it None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from fuseopt.errors import Span
from fuseopt.ir.dtypes import DType

_NOSPAN = Span(0, 0)

UNARY_FUNCS = (
    "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sin", "cos", "tan",
    "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "round", "trunc", "sign", "reciprocal",
    "isnan", "isinf",
)  # fmt: skip
BINARY_FUNCS = ("maximum", "minimum", "pow", "atan2", "fmod")
REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "any")
# Operators spelled with symbols, by the op name the tree uses.
ARITH_OPS = ("add", "sub", "mul", "truediv", "floordiv", "mod")
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
LOGIC_OPS = ("and", "or")
KEYWORDS = frozenset(
    {"masked", "index", "where", "cast", "min", "max", "inf", "nan", "true", "false"}
    | set(UNARY_FUNCS)
    | set(BINARY_FUNCS)
    | set(REDUCTIONS)
)


class _HashSlot:
    """Where a node keeps its hash (see `_hash_once`): a slot outside the dataclass fields, so
    that equality, repr, pickling and `dataclasses.replace` never see it."""

    __slots__ = ("_hash",)
    _hash: int


@dataclass(frozen=True, slots=True)
class Expr(_HashSlot):
    span: Span = field(default=_NOSPAN, compare=False, repr=False, kw_only=True)
    dtype: DType | None = field(default=None, kw_only=True)

    def children(self) -> tuple[Expr, ...]:
        return ()

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return self


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A literal. Literals are *weak* for type promotion (they take the other operand's dtype)."""

    value: int | float | bool


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A loop variable (of the node's `loops` or `reduce`)."""

    name: str


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """`buffer[index]`: a read of the buffer's flat storage (also the shape of a `store`)."""

    buffer: str
    index: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.index,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, index=children[0])


@dataclass(frozen=True, slots=True)
class Masked(Expr):
    """`masked(cond, body, other)`: body (and its loads) only where cond holds, else `other`."""

    cond: Expr
    body: Expr
    other: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.body, self.other)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, cond=children[0], body=children[1], other=children[2])


@dataclass(frozen=True, slots=True)
class IndexValue(Expr):
    """`index(expr)`: an index expression used as an int64 value (Inductor's ops.index_expr)."""

    index: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.index,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, index=children[0])


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    """`neg`, `not` (the `~` operator) or a unary function of UNARY_FUNCS."""

    op: str
    x: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.x,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, x=children[0])


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """An arithmetic/compare/logic operator or a binary function (BINARY_FUNCS).

    `min(a, b)`/`max(a, b)` parse to `minimum`/`maximum`.
    """

    op: str
    a: Expr
    b: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, a=children[0], b=children[1])


@dataclass(frozen=True, slots=True)
class Where(Expr):
    cond: Expr
    a: Expr
    b: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.a, self.b)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, cond=children[0], a=children[1], b=children[2])


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    x: Expr
    to: DType

    def children(self) -> tuple[Expr, ...]:
        return (self.x,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, x=children[0])


@dataclass(frozen=True, slots=True)
class Reduce(Expr):
    """A reduction over the node's whole `reduce` box (only at the top of a reduction's value)."""

    op: str
    x: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.x,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, x=children[0])


def _hash_once(structural: Callable[[Expr], int]) -> Callable[[Expr], int]:
    def __hash__(self: Expr) -> int:
        try:
            return self._hash
        except AttributeError:
            h = structural(self)
            object.__setattr__(self, "_hash", h)  # frozen: set past the dataclass's __setattr__
            return h

    return __hash__


# Trees are dictionary keys (interval, dependency and loop-order caches) and the generated
# __hash__ hashes the whole subtree on every call: each node computes it once (the same value, the
# hash of its compared fields) and keeps it. A new node (`replace`, unpickling) starts without.
for _cls in (Expr, Const, Var, Load, Masked, IndexValue, Unary, Binary, Where, Cast, Reduce):
    _cls.__hash__ = _hash_once(_cls.__hash__)  # type: ignore[method-assign, assignment]


def walk(e: Expr) -> Iterator[Expr]:
    """Pre-order traversal (iterative: trees are at most 1024 nodes but callers may nest)."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children()))


def tree_size(e: Expr, cap: int) -> int:
    """The nodes of `e` as `to_text` writes it, a subtree shared by several parents counted at each
    use, up to `cap + 1`: an expression built as a DAG (an unrolled argmax reuses its running best)
    can have exponentially many, which `to_text` would take as long to write."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in sizes:
            continue
        kids = node.children()
        if ready or not kids:
            sizes[id(node)] = min(cap + 1, 1 + sum(sizes[id(k)] for k in kids))
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(e)]


def transform(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Bottom-up rewrite: `fn` returns a replacement for a node (children already rewritten) or None."""
    kids = e.children()
    if kids:
        new_kids = tuple(transform(k, fn) for k in kids)
        if any(a is not b for a, b in zip(new_kids, kids, strict=True)):
            e = e.with_children(new_kids)
    out = fn(e)
    return e if out is None else out


def loads(e: Expr) -> list[Load]:
    """Every load, in `walk`'s order (loads inside indices too); `walk` inlined, as every node of
    a graph asks this once."""
    out: list[Load] = []
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Load):
            out.append(node)
            stack.append(node.index)
        else:
            kids = node.children()
            if kids:
                stack.extend(reversed(kids))
    return out


def free_vars(e: Expr) -> set[str]:
    return {n.name for n in walk(e) if isinstance(n, Var)}


def substitute_vars(e: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace loop variables by expressions (used to rename or re-factor loops)."""

    def fn(n: Expr) -> Expr | None:
        if isinstance(n, Var) and n.name in mapping:
            return mapping[n.name]
        return None

    return transform(e, fn)


_INFIX = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&", "or": "|",
}  # fmt: skip
_PREC = {
    "or": 1, "and": 2, "lt": 4, "le": 4, "gt": 4, "ge": 4, "eq": 4, "ne": 4,
    "add": 5, "sub": 5, "mul": 6, "truediv": 6, "floordiv": 6, "mod": 6,
}  # fmt: skip
INFIX_SYMBOL = _INFIX
PRECEDENCE = _PREC


def to_text(e: Expr) -> str:
    """Print an expression in the input language; `parse(to_text(e)) == e` for every tree."""
    return _fmt(e, 0)


def _fmt(e: Expr, parent_prec: int) -> str:
    if isinstance(e, Const):
        v = e.value
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            if v != v:
                return "nan"
            if v in (float("inf"), float("-inf")):
                s = "inf" if v > 0 else "-inf"
                return s if parent_prec < 7 or v > 0 else f"({s})"
            s = repr(v)
            return s if v >= 0 or parent_prec < 7 else f"({s})"
        return str(v) if v >= 0 or parent_prec < 7 else f"({v})"
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Load):
        return f"{e.buffer}[{_fmt(e.index, 0)}]"
    if isinstance(e, Masked):
        return f"masked({_fmt(e.cond, 0)}, {_fmt(e.body, 0)}, {_fmt(e.other, 0)})"
    if isinstance(e, IndexValue):
        return f"index({_fmt(e.index, 0)})"
    if isinstance(e, Where):
        return f"where({_fmt(e.cond, 0)}, {_fmt(e.a, 0)}, {_fmt(e.b, 0)})"
    if isinstance(e, Cast):
        return f"cast({_fmt(e.x, 0)}, {e.to.value})"
    if isinstance(e, Reduce):
        return f"{e.op}({_fmt(e.x, 0)})"
    if isinstance(e, Unary):
        if e.op == "neg":
            # `-3` would read back as the literal -3, not neg(3): parenthesise a literal operand.
            inner = _fmt(e.x, 7)
            s = "-" + (f"({inner})" if isinstance(e.x, Const) and not inner.startswith("(") else inner)
            return s if parent_prec < 7 else f"({s})"
        if e.op == "not":
            # Always parenthesise a compound operand: `~(a < b)` reads unambiguously.
            s = "~" + _fmt(e.x, 7)
            return s if parent_prec < 3 else f"({s})"
        return f"{e.op}({_fmt(e.x, 0)})"
    if isinstance(e, Binary):
        if e.op in _INFIX:
            p = _PREC[e.op]
            # Left-associative: only the right operand needs parentheses at equal precedence;
            # comparisons do not chain, so both sides do.
            if e.op in LOGIC_OPS:
                # Comparisons under & and | are parenthesised for readers used to Python's precedence.
                left, right = _fmt(e.a, max(p - 1, 4)), _fmt(e.b, 4)
            else:
                left = _fmt(e.a, p if e.op in COMPARE_OPS else p - 1)
                right = _fmt(e.b, p)
            s = f"{left} {_INFIX[e.op]} {right}"
            return s if p > parent_prec else f"({s})"
        return f"{e.op}({_fmt(e.a, 0)}, {_fmt(e.b, 0)})"
    raise TypeError(f"unknown expression node {type(e).__name__}")
