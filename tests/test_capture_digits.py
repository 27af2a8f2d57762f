"""`fuseopt.capture.digits`: digits of index values folded and merged, exactly."""

from __future__ import annotations

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._sympy.functions import FloorDiv, ModularIndexing

from fuseopt.capture.digits import merge_radix, simplified_digit


def _sym(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


_RADICES = st.lists(st.sampled_from([2, 3, 4, 8, 16, 30]), min_size=1, max_size=4)


@settings(max_examples=100, deadline=None)
@given(_RADICES, st.integers(-40, 40), st.integers(1, 40), st.integers(0, 50), st.integers(0, 50))
def test_digits_of_one_value_merge_back(radices: list[int], c: int, k: int, x: int, y: int) -> None:
    """`a` written in mixed radix (its digits `(a // d) % m` and a top `a // D`, each taken again
    `% (a multiple of m)` or shifted by a multiple, as Inductor's views of views leave it) sums
    back to `a`; every other sum keeps its value at every point."""
    x0, x1 = _sym("x0"), _sym("x1")
    a = k * x0 + 3 * x1 + c
    terms, unit = [], 1
    for r in radices:
        # the same digit of a + unit * r (sympy keeps it apart) modulo a multiple of r
        terms.append(unit * ModularIndexing(ModularIndexing(a + unit * r, 1, unit * r * 2), unit, r))
        unit *= r
    top = FloorDiv(a, unit)
    whole = sympy.Add(*terms, unit * top)
    assert sympy.expand(merge_radix(whole) - a) == 0
    dropped = sympy.Add(*terms[1:], unit * top, 5)  # the lowest digit missing: values kept
    point = {x0: x, x1: y}
    assert int(merge_radix(dropped).subs(point)) == int(dropped.subs(point))


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([1, 2, 3, 4, 8]),
    st.sampled_from([2, 3, 4, 8, 12, 32]),
    st.sampled_from([1, 2, 3, 4, 8]),
    st.sampled_from([None, 2, 3, 4, 8]),
    st.integers(-100, 100),
)
def test_digits_of_digits_keep_their_value(d0: int, m0: int, d: int, m: int | None, v: int) -> None:
    """`((v // d0) % m0 // d) % m` folded, against its value, negative values included."""
    inner = ModularIndexing(_sym("x") - 100, d0, m0)
    outer = FloorDiv(inner, d) if m is None else ModularIndexing(inner, d, m)
    point = {_sym("x"): v + 100}
    assert int(simplified_digit(outer).subs(point)) == int(outer.subs(point))
