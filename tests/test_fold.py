"""fuseopt.ir.fold: min/max decided by loop ranges and polynomials that cancel, against brute
force evaluation at every point of the box."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from fuseopt.ir.expr import Binary, Const, Expr, Unary, Var
from fuseopt.ir.fold import fold_index, polynomial
from fuseopt.ir.parser import parse_expr_text

POOL_DIVISOR = (
    "-x1 + x1 * x2 - x1 * min(36, x2 + 2) - x2 * min(36, x1 + 2) + min(36, x1 + 2) * min(36, x2 + 2)"
    " + min(36, x1 + 2) - x2 + min(36, x2 + 2) + 1"
)


def ev(e: Expr, env: dict[str, int]) -> int:
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Unary):
        assert e.op == "neg"
        return -ev(e.x, env)
    assert isinstance(e, Binary), e
    a, b = ev(e.a, env), ev(e.b, env)
    ops = {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "floordiv": lambda: a // b,
        "mod": lambda: a % b,
        "minimum": lambda: min(a, b),
        "maximum": lambda: max(a, b),
    }
    return ops[e.op]()


def same_everywhere(a: Expr, b: Expr, ranges: dict[str, int]) -> bool:
    names = sorted(ranges)
    for point in itertools.product(*(range(ranges[n]) for n in names)):
        env = dict(zip(names, point, strict=True))
        if ev(a, env) != ev(b, env):
            return False
    return True


def parse(text: str) -> Expr:
    return parse_expr_text(text)


def test_captured_pool_divisor_is_nine() -> None:
    """avg_pool2d(3, stride 1, padding 1, count_include_pad) on 35x35: the divisor is 9 everywhere."""
    e = parse(POOL_DIVISOR)
    ranges = {"x1": 35, "x2": 35}
    folded = fold_index(e, ranges)
    assert isinstance(folded, Const) and folded.value == 9
    assert same_everywhere(e, folded, ranges)


def test_undecided_min_stays() -> None:
    e = parse(POOL_DIVISOR)
    ranges = {"x1": 40, "x2": 35}  # x1 + 2 reaches 41 > 36: that minimum is not decided
    folded = fold_index(e, ranges)
    assert not isinstance(folded, Const) and "min" in str(folded)
    assert same_everywhere(e, folded, ranges)


def test_polynomial_cancels_and_keeps_atoms_apart() -> None:
    assert polynomial(parse("(x + 1) * (x - 1) - x * x")) == {(): -1}
    p = polynomial(parse("x // 4 * 2 + x % 4 - x % 4"))
    assert p == {("x // 4",): 2}


LEAVES = st.one_of(st.sampled_from(["x", "y", "x // 3", "y % 4"]), st.integers(-4, 8).map(str))


@st.composite
def int_exprs(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(LEAVES)
    op = draw(st.sampled_from(["+", "-", "*", "min", "max"]))
    a, b = draw(int_exprs(depth - 1)), draw(int_exprs(depth - 1))
    return f"{op}({a}, {b})" if op in ("min", "max") else f"({a} {op} {b})"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(int_exprs(), st.integers(1, 7), st.integers(1, 7))
def test_fold_preserves_value_everywhere(text: str, nx: int, ny: int) -> None:
    e = parse(text)
    ranges = {"x": nx, "y": ny}
    assert same_everywhere(e, fold_index(e, ranges), ranges)
