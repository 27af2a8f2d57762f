"""Indirect indices (`ops.indirect_indexing`) as FORMAT index expressions, with Inductor's semantics.

Inductor turns a loaded or computed integer `v` into an index of a dim of size `n`: with `wrap_neg`
a negative `v` is `v + n` (`where(v < 0, v + n, v)`), and with `check` the index must lie in `[0, n)`
(a device assert on a GPU). FORMAT index expressions have `+ - * // % min max`, loop variables and
loads of integer buffers, nothing else, so the conversion is exact integer arithmetic:

- a comparison is exact arithmetic of the difference `d = a - b`, which appears once: `sign(d)` is
  `min(max(d, -1), 1)`, `[a < b]` is `-min(max(d, -1), 0)`, `[a != b]` is `(sign(d) + 2) % 2`;
  `&` is `*`, `~c` is `1 - c`; `where(c, a, b)` is `b + c*(a - b)`, or `c*a + (1 - c)*b` where `b`
  is the longer (a chain of wheres nested in `b` then grows linearly, not doubling at each level);
  `masked(c, body, other)` is the where, each load of the body clamped into its buffer's storage
  (it may lie outside where `c` fails: a token tensor shifted right reads position -1); operations
  of literals are folded;
- the wrap is `v - n*min(max(v, -1), 0)` (that is `v + n*[v < 0]`);
- the check: an index outside `[0, n)` must not read another element silently. Where the dim is the
  outermost of the access (the index is `c*w + rest` with `rest` in `[0, c)` and `c*n` the whole
  storage) any such index already falls outside the buffer, which the interpreter reports by node;
  otherwise the converter adds `S*(w // n)` (S: the buffer's storage size), zero inside `[0, n)` and
  out of the storage outside it (`fuseopt.capture.convert`).

A float computed from one integer expression `u` of the loop variables (every integer expression it
reads is `u`, `±u + k`, or a function of those: DeBERTa-v2's buckets read `x1 - x2` and `|x2 - x1|`)
and cast to an integer (nearest-neighbour upsampling: `cast(cast(x1, float32) * 0.6, int64)`; T5's
relative-position buckets: a log of `|x1 - x2|`) is evaluated by the reference interpreter at every
value `u` can take (its interval over the loop box) and replaced by the integer form
`(p*u + r) // q` with the smallest `q` that gives the same index at every point, else by
`v0 + sum of c*[u >= k]` over its steps (at most `MAX_STEPS`): exact by construction for this loop
box (values `u` never takes, and casts of non-finite or out-of-range floats, which have no defined
integer value, are free points). Anything else (floats of loads, of several expressions, too many
steps) is refused by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fuseopt.capture.errors import CaptureError
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import (
    Binary,
    Cast,
    Const,
    Expr,
    IndexValue,
    Load,
    Masked,
    Unary,
    Var,
    Where,
    to_text,
    transform,
    walk,
)
from fuseopt.ir.fold import INT_OPS

HUGE = 2**62  # a float cast to an integer this large is no index (an overflow, log(0))
MAX_DENOMINATOR = 1024
MAX_POINTS = 1 << 16  # values of the argument evaluated for a fit
MAX_STEPS = 32  # steps of a curve written as a sum of steps

_ARITH = {"add": "add", "sub": "sub", "mul": "mul", "minimum": "minimum", "maximum": "maximum"}
_COMPARE = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})


@dataclass(frozen=True)
class Indirect:
    """One indirect index: its value as an index expression (wrapped), the dim size, whether checked."""

    index: Expr
    size: int
    check: bool


def _bin(op: str, a: Expr, b: Expr) -> Expr:
    """`a op b`, folded where both are integer literals."""
    if isinstance(a, Const) and isinstance(b, Const) and type(a.value) is int and type(b.value) is int:
        return Const(INT_OPS[op](a.value, b.value))
    return Binary(op, a, b)


def _sub(a: Expr, b: Expr) -> Expr:
    if isinstance(b, Const) and b.value == 0:
        return a
    if a == Const(1) and isinstance(b, Binary) and b.op == "sub" and b.a == Const(1):
        return b.b  # 1 - (1 - c): the negation of a negated condition
    if isinstance(b, Const) and type(b.value) is int and b.value < 0 and not isinstance(a, Const):
        return Binary("add", a, Const(-b.value))
    return _bin("sub", a, b)


def _add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    return _bin("add", a, b)


def _mul(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and a.value == 1:
        return b
    if isinstance(b, Const) and b.value == 1:
        return a
    if isinstance(a, Const) and a.value == 0 or isinstance(b, Const) and b.value == 0:
        return Const(0)
    return _bin("mul", a, b)


def sign(d: Expr) -> Expr:
    """-1, 0 or 1: min(max(d, -1), 1); min(d, 1) where d cannot be negative."""
    return _bin("minimum", d if nonnegative(d) else _bin("maximum", d, Const(-1)), Const(1))


def less_than(a: Expr, b: Expr) -> Expr:
    """[a < b] as 0/1: -min(max(a - b, -1), 0)."""
    return _neg(_bin("minimum", _bin("maximum", _sub(a, b), Const(-1)), Const(0)))


def differs(a: Expr, b: Expr) -> Expr:
    """[a != b] as 0/1: (sign(a - b) + 2) % 2; sign(a - b) where a - b cannot be negative."""
    d = _sub(a, b)
    return sign(d) if nonnegative(d) else _bin("mod", _bin("add", sign(d), Const(2)), Const(2))


def select(c: Expr, a: Expr, b: Expr) -> Expr:
    """where(c, a, b) for a 0/1 `c`: `b + c*(a - b)`, or `c*a + (1 - c)*b` where `b` is the longer."""
    if isinstance(c, Const):
        return a if c.value else b
    if len(to_text(b)) > len(to_text(c)):
        return _add(_mul(c, a), _mul(_sub(Const(1), c), b))
    return _add(b, _mul(c, _sub(a, b)))


def _neg(a: Expr) -> Expr:
    return Const(-a.value) if isinstance(a, Const) and type(a.value) is int else Unary("neg", a)


def wrapped(v: Expr, size: int) -> Expr:
    """where(v < 0, v + size, v): v - size*min(max(v, -1), 0); v itself where it cannot be negative."""
    if nonnegative(v):
        return v
    if isinstance(v, Const):
        return Const(v.value + size if int(v.value) < 0 else v.value)
    return Binary("sub", v, _mul(Const(size), _bin("minimum", _bin("maximum", v, Const(-1)), Const(0))))


def _abs(x: Expr) -> Expr:
    return _bin("maximum", x, _neg(x))


_UNARY = {"neg": _neg, "sign": sign, "abs": _abs}  # sign: DeBERTa's relative positions


class IndexCompiler:
    """An integer value tree (the argument of `indirect_indexing`) -> an index expression tree."""

    def __init__(self, node: str, loop_sizes: Mapping[str, int], storage: Callable[[str], int] | None = None):
        self.node = node
        self.loop_sizes = loop_sizes
        self.storage = storage  # a buffer's storage size, for the loads of a masked value

    def __call__(self, e: Expr) -> Expr:
        return self._int(e)

    def _error(self, e: Expr, why: str) -> CaptureError:
        return CaptureError(
            f"indirect index {to_text(e)} {why} (FORMAT index expressions are integer arithmetic of "
            "loop variables and loads of integer buffers)",
            node=self.node,
        )

    def _int(self, e: Expr) -> Expr:
        if isinstance(e, Load | Var):
            return e
        if isinstance(e, Const):
            if isinstance(e.value, bool):
                return Const(int(e.value))
            if isinstance(e.value, int):
                return e
            raise self._error(e, "is a float literal")
        if isinstance(e, IndexValue):
            return e.index
        if isinstance(e, Cast):
            if e.to.is_int and _is_float(e.x):
                return self._fitted(e)
            if e.to.is_int:
                return self._int(e.x)
            if e.to.value == "bool":
                return self._bool(e.x)
            raise self._error(e, f"casts to {e.to.value}")
        if isinstance(e, Unary) and e.op in _UNARY:
            return _UNARY[e.op](self._int(e.x))
        if isinstance(e, Binary):
            if e.op in _ARITH:
                return _bin(_ARITH[e.op], self._int(e.a), self._int(e.b))
            if (
                e.op in ("floordiv", "mod")
                and isinstance(e.b, Const)
                and type(e.b.value) is int
                and e.b.value > 0
            ):
                return Binary(e.op, self._int(e.a), e.b)
            if e.op in _COMPARE or e.op in ("and", "or"):
                return self._bool(e)
        if isinstance(e, Where):
            return select(self._bool(e.cond), self._int(e.a), self._int(e.b))
        if isinstance(e, Masked):
            # The body's loads read only where the condition holds, where their indices are in
            # range; clamped into the storage, they read some element elsewhere, and the product
            # by the 0/1 condition discards it.
            c = self._bool(e.cond)
            body = transform(self._int(e.body), lambda x: self._clamped(x, e))
            other = e.other
            if isinstance(other, Const) and type(other.value) is float and other.value.is_integer():
                other = Const(int(other.value))  # Inductor's fill value of an integer masked load
            return select(c, body, self._int(other))
        raise self._error(e, "uses an operation that has no exact integer form")

    def _clamped(self, x: Expr, masked: Expr) -> Expr | None:
        """A load of a masked value with its index clamped into the buffer's storage."""
        if not isinstance(x, Load):
            return None
        if self.storage is None:
            raise self._error(masked, "loads under a condition from a buffer of unknown size")
        last = Const(self.storage(x.buffer) - 1)
        return x.with_children((Binary("maximum", Binary("minimum", x.index, last), Const(0)),))

    def _fitted(self, e: Cast) -> Expr:
        """A float function of one integer expression `u` of the loop variables, cast to an
        integer: evaluated at every value `u` can take, then written as `(p*u + r) // q` or, for a
        curve (T5's log-spaced buckets), as a sum of steps `c*[u >= k]` (see the module)."""
        if any(isinstance(v, Load) for v in walk(e)):
            raise self._error(e, "computes with floats from loads")
        u = self._argument(e)
        reachable = self._values_of(u, e)
        lo, hi = min(reachable), max(reachable)
        if hi - lo + 1 > MAX_POINTS:
            raise self._error(e, f"takes {hi - lo + 1} values (at most {MAX_POINTS} are fitted)")
        probe = Var("t")
        f = _replace(e, u, Binary("add", probe, Const(lo)) if lo else probe)
        if not _only(f, "t"):
            raise self._error(e, "computes with floats of several integer expressions")
        values = evaluate_over(f, "t", hi - lo + 1)
        # Free points: values u never takes, and casts of a float out of int64's range (log(0) =
        # -inf: undefined in C and Triton, INT64_MIN on torch's CPU; T5 computes it in the branch
        # of a `where` it does not take). Each gets its neighbour's value: no step there.
        free = [lo + k not in reachable or abs(v) >= HUGE for k, v in enumerate(values)]
        if all(free):
            raise self._error(e, f"overflows int64 at every value of {to_text(u)}")
        first = free.index(False)
        for k in range(len(values)):
            if free[k]:
                values[k] = values[k - 1] if k > first else values[first]
        fit = fit_floor(values)
        if fit is not None:
            p, r, q = fit
            r -= p * lo  # in terms of u = t + lo
            x: Expr = _add(_mul(Const(p), u) if p else Const(0), Const(r))
            return x if q == 1 else Binary("floordiv", x, Const(q))
        steps = [
            (lo + k, values[k] - values[k - 1]) for k in range(1, len(values)) if values[k] != values[k - 1]
        ]
        if len(steps) > MAX_STEPS:
            raise self._error(
                e, f"has no form (p*u + r) // q with q <= {MAX_DENOMINATOR} nor {MAX_STEPS} steps"
            )
        out: Expr = Const(values[0])
        for k, jump in steps:  # [u >= k] = [k - 1 < u]
            out = _add(out, _mul(Const(jump), less_than(Const(k - 1), u)))
        return out

    def _values_of(self, u: Expr, e: Expr) -> set[int]:
        """Every value `u` takes over the box of its loop variables (evaluated, at most MAX_POINTS
        points), else over its interval."""
        names = sorted({v.name for v in walk(u) if isinstance(v, Var)})
        points = 1
        for n in names:
            points *= self.loop_sizes.get(n, MAX_POINTS + 1)
        if points <= MAX_POINTS:
            return set(evaluate_box(u, [(n, self.loop_sizes[n]) for n in names]))
        lo, hi = interval(u, self.loop_sizes)
        if hi - lo + 1 > MAX_POINTS:
            raise self._error(e, f"takes {hi - lo + 1} values (at most {MAX_POINTS} are fitted)")
        return set(range(lo, hi + 1))

    def _argument(self, e: Expr) -> Expr:
        """The one integer expression of loop variables that the float expression `e` is a
        function of: among the operands of its integer-to-float casts (or `index(...)`) containing
        a loop variable, the first that every other one is a function of (DeBERTa's buckets read
        `d` and `|d|`, `d = x1 - x2`); refused when there is none."""
        found: list[Expr] = []

        def visit(x: Expr) -> None:
            if isinstance(x, IndexValue) or (isinstance(x, Cast) and not _is_float(x.x)):
                inner = x.index if isinstance(x, IndexValue) else self._int(x.x)
                if any(isinstance(v, Var) for v in walk(inner)):
                    found.append(inner)
                return
            if isinstance(x, Var):
                found.append(x)
                return
            for c in x.children():
                visit(c)

        visit(e)
        distinct = list(dict.fromkeys(found))
        probe = Var("t")
        for u in distinct:
            if all(_only(_replace(other, u, probe), probe.name) for other in distinct):
                return u
        raise self._error(e, "computes with floats of several integer expressions")

    def _bool(self, e: Expr) -> Expr:
        """A condition as 0/1."""
        if isinstance(e, Const):
            return Const(int(bool(e.value)))
        if isinstance(e, Binary):
            if e.op in ("lt", "gt", "le", "ge"):
                a, b = self._int(e.a), self._int(e.b)
                if e.op in ("gt", "ge"):
                    a, b = b, a  # a > b is b < a
                if e.op in ("le", "ge"):
                    b = _add(b, Const(1))  # a <= b is a < b + 1
                return less_than(a, b)
            if e.op in ("eq", "ne"):
                ne = differs(self._int(e.a), self._int(e.b))
                return ne if e.op == "ne" else _sub(Const(1), ne)
            if e.op == "and":
                return _mul(self._bool(e.a), self._bool(e.b))
            if e.op == "or":
                return _bin("maximum", self._bool(e.a), self._bool(e.b))
        if isinstance(e, Unary) and e.op == "not":
            return _sub(Const(1), self._bool(e.x))
        if isinstance(e, Cast) and e.to.value == "bool":
            x = e.x
            if isinstance(x, Binary) and (x.op in _COMPARE or x.op in ("and", "or")):
                return self._bool(x)
            return differs(self._int(x), Const(0))  # an integer as a condition: v != 0
        raise self._error(e, "is a condition that has no exact integer form")


def _is_float(e: Expr) -> bool:
    """Whether the value is computed in floats (a float cast or literal under integer ops)."""
    return any(
        (isinstance(v, Cast) and v.to.is_float) or (isinstance(v, Const) and type(v.value) is float)
        for v in walk(e)
    )


def nonnegative(e: Expr) -> bool:
    """Provably >= 0 for every value of the loop variables (loads are not: their values are data)."""
    if isinstance(e, Var):
        return True
    if isinstance(e, Const):
        return type(e.value) is int and e.value >= 0
    if isinstance(e, Binary) and e.op in ("add", "mul", "floordiv", "minimum", "maximum"):
        both = nonnegative(e.a) and nonnegative(e.b)
        return both or (e.op == "maximum" and (nonnegative(e.a) or nonnegative(e.b)))
    return isinstance(e, Binary) and e.op == "mod"  # by a positive literal: non-negative


def evaluate_over(e: Expr, var: str, size: int) -> list[int]:
    """`e` at var = 0 .. size-1, as the reference interpreter computes it (a one-node graph)."""
    return evaluate_box(e, [(var, size)])


def evaluate_box(e: Expr, loops: list[tuple[str, int]]) -> list[int]:
    """`e` at every point of the loops' box (row-major), as the reference interpreter computes it."""
    import json

    from fuseopt.interp import run_graph
    from fuseopt.io.load import load_text

    total, terms = 1, []
    for name, size in reversed(loops):
        terms.append(f"{total} * {name}" if total > 1 else name)
        total *= size
    flat = " + ".join(reversed(terms)) or "0"
    doc = {
        "format": "fuseopt-graph/1",
        "name": "indirect_fit",
        "buffers": {"out": {"shape": [max(total, 1)], "dtype": DType.int64.value, "role": "output"}},
        "nodes": [
            {"name": "n0", "loops": [list(lp) for lp in loops], "store": f"out[{flat}]", "value": to_text(e)}
        ],
    }
    out = run_graph(load_text(json.dumps(doc), "<indirect index>"), {})["out"]
    return [int(v) for v in out.tolist()]


def fit_floor(values: list[int]) -> tuple[int, int, int] | None:
    """(p, r, q) with (p*x + r) // q == values[x] for every x, smallest q (then r closest to 0)."""
    n = len(values)
    if n == 1:
        return (0, values[0], 1)
    lo_slope = values[-1] - values[0] - 1
    hi_slope = values[-1] - values[0] + 1
    for q in range(1, MAX_DENOMINATOR + 1):
        # p*(n-1) lies within q*(g(n-1) - g(0) -+ 1): a window of a few candidates.
        for p in range((q * lo_slope) // (n - 1), -((-q * hi_slope) // (n - 1)) + 1):
            r_lo = max(q * v - p * x for x, v in enumerate(values))
            r_hi = min(q * (v + 1) - p * x for x, v in enumerate(values))  # exclusive
            if r_lo < r_hi:
                r = 0 if r_lo <= 0 < r_hi else (r_lo if r_lo > 0 else r_hi - 1)
                return (p, r, q)
    return None


def proved_in_range(index: Expr, size: int, sizes: Mapping[str, int], node: str) -> Expr | None:
    """An indirect index of loop variables only (no loads; T5's relative-position buckets) is
    evaluated at every point of its variables' box: all in `[0, size)` gives `min(max(index, 0),
    size - 1)`, the same value everywhere and statically in range (validation bounds indices by
    intervals, which the step forms above would not meet); a value outside is the bounds assert
    Inductor would fail at run time, refused here. None when the index reads data or the box has
    more than MAX_POINTS points."""
    if any(isinstance(v, Load) for v in walk(index)):
        return None
    names = sorted({v.name for v in walk(index) if isinstance(v, Var)})
    points = 1
    for n in names:
        points *= sizes.get(n, MAX_POINTS + 1)
    if points > MAX_POINTS:
        return None
    values = evaluate_box(index, [(n, sizes[n]) for n in names])
    bad = [v for v in values if not 0 <= v < size]
    if bad:
        raise CaptureError(
            f"indirect index {to_text(index)} takes the value {bad[0]}, outside [0, {size}): Inductor's "
            "bounds assert fails for every input",
            node=node,
        )
    lo, hi = _safe_interval(index, sizes)
    if lo >= 0 and hi < size:
        return index
    return Binary("minimum", Binary("maximum", index, Const(0)), Const(size - 1))


def _safe_interval(e: Expr, sizes: Mapping[str, int]) -> tuple[int, int]:
    try:
        return interval(e, sizes)
    except CaptureError:
        return (-1, -1)


def _only(e: Expr, var: str) -> bool:
    """Whether `var` is the only loop variable of `e`."""
    return all(v.name == var for v in walk(e) if isinstance(v, Var))


def _replace(e: Expr, old: Expr, new: Expr) -> Expr:
    """`e` with every subtree equal to `old` (and every `index(old)` / int cast of it) as `new`, and
    every integer subtree whose linear form is `±old + k` as `±new + k` (`-x1 + x2` is `-(x1 - x2)`)."""
    form = linear_form(old)
    negated = {a: -k for a, k in form.coeffs}

    def rep(x: Expr) -> Expr:
        if x == old:
            return new
        if isinstance(x, IndexValue) and x.index == old:
            return IndexValue(new)
        if isinstance(x, Binary | Unary) and x.op in ("add", "sub", "neg") and form.coeffs:
            f = linear_form(x)
            for sign_, coeffs in ((1, dict(form.coeffs)), (-1, negated)):
                if dict(f.coeffs) == coeffs:
                    k = f.const - sign_ * form.const
                    return _add(new if sign_ == 1 else _neg(new), Const(k))
        kids = x.children()
        return x.with_children(tuple(rep(c) for c in kids)) if kids else x

    return rep(e)


def interval(e: Expr, sizes: Mapping[str, int]) -> tuple[int, int]:
    """Bounds of an integer index expression over the loop box (interval arithmetic)."""
    if isinstance(e, Const):
        return int(e.value), int(e.value)
    if isinstance(e, Var):
        return 0, sizes[e.name] - 1
    if isinstance(e, Unary) and e.op == "neg":
        lo, hi = interval(e.x, sizes)
        return -hi, -lo
    if isinstance(e, Binary):
        (a, b), (c, d) = interval(e.a, sizes), interval(e.b, sizes)
        if e.op == "add":
            return a + c, b + d
        if e.op == "sub":
            return a - d, b - c
        if e.op == "mul":
            corners = (a * c, a * d, b * c, b * d)
            return min(corners), max(corners)
        if e.op == "minimum":
            return min(a, c), min(b, d)
        if e.op == "maximum":
            return max(a, c), max(b, d)
        if e.op == "floordiv" and c == d and c > 0:
            return a // c, b // c
        if e.op == "mod" and c == d and c > 0:
            return 0, c - 1
    raise CaptureError(f"cannot bound the index expression {to_text(e)}")
