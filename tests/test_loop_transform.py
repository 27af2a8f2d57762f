"""Loop transformations (`passes/loop_transform.py`): re-factoring maps proven bijections and checked
pointwise, and the index simplification rules."""

from __future__ import annotations

import random

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.errors import CheckFailed
from fuseopt.ir.expr import to_text
from fuseopt.ir.graph import LoopVar
from fuseopt.ir.parser import parse_expr_text
from fuseopt.passes.loop_transform import prove_refactor, refactor_map, simplify
from tests.sweeps import examples


def test_refactor_is_proven_a_bijection() -> None:
    old = (LoopVar("i0", 16), LoopVar("i1", 8192))
    new = (LoopVar("a", 1024), LoopVar("b", 128))
    mapping = refactor_map(old, new)
    assert mapping is not None
    assert to_text(mapping["i0"]) == "a // 64" and to_text(mapping["i1"]) == "128 * (a % 64) + b"
    prove_refactor(old, new, mapping)  # no exception: sympy proves the flat position is kept
    bad = dict(mapping, i1=parse_expr_text("b"))
    with pytest.raises(CheckFailed):
        prove_refactor(old, new, bad)
    # Boundaries that do not form a divisibility chain have no re-factoring.
    assert refactor_map((LoopVar("i", 6), LoopVar("j", 4)), (LoopVar("a", 4), LoopVar("b", 6))) is None


@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
)
@settings(max_examples=examples(60, quick=6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_refactor_maps_agree_with_enumeration(sizes: list[int], data: st.DataObject) -> None:
    """Every re-factoring map sends the row-major position to the same position (checked pointwise)."""
    import math

    total = math.prod(sizes)
    # A coarser factorization of the same box: merge a random run of adjacent loops.
    k = data.draw(st.integers(0, len(sizes) - 1))
    j = data.draw(st.integers(k, len(sizes) - 1))
    new_sizes = [*sizes[:k], math.prod(sizes[k : j + 1]), *sizes[j + 1 :]]
    old = tuple(LoopVar(f"o{i}", s) for i, s in enumerate(sizes))
    new = tuple(LoopVar(f"n{i}", s) for i, s in enumerate(new_sizes))
    mapping = refactor_map(old, new)
    assert mapping is not None
    prove_refactor(old, new, mapping)
    syms = {lv.name: sympy.Symbol(lv.name) for lv in new}
    for flat in range(0, total, max(1, total // 17)):
        digits, rest = {}, flat
        for lv in reversed(new):
            digits[lv.name], rest = rest % lv.size, rest // lv.size
        pos = 0
        for lv in old:
            value = _eval_index(mapping[lv.name], digits)
            assert 0 <= value < lv.size
            pos = pos * lv.size + value
        assert pos == flat
    del syms


def _eval_index(e: object, env: dict[str, int]) -> int:
    from fuseopt.ir.expr import Binary, Const, Var

    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[e.name]
    assert isinstance(e, Binary)
    a, b = _eval_index(e.a, env), _eval_index(e.b, env)
    ops = {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "floordiv": lambda: a // b,
        "mod": lambda: a % b,
    }
    return ops[e.op]()


@pytest.mark.parametrize(
    ("text", "ranges", "want"),
    [
        ("64*(q0 // 64) + (128*(q0 % 64) + q1) // 128", {"q0": 1024, "q1": 128}, "q0"),
        ("256*q0 + (32*q1 + q2) // 32", {"q0": 8, "q1": 256, "q2": 32}, "256 * q0 + q1"),
        ("(8*a + b) % 8", {"a": 10, "b": 8}, "b"),
        ("x % 235200 // 6720", {"x": 10**6}, "x // 6720 % 35"),
        ("x // 8 % 25 % 5", {"x": 1000}, "x // 8 % 5"),
    ],
)
def test_simplify_rules(text: str, ranges: dict[str, int], want: str) -> None:
    e = parse_expr_text(text)
    got = simplify(e, ranges)
    assert to_text(got) == want
    # And the rewrite is an identity over the box.
    rng = random.Random(0)
    for _ in range(200):
        env = {v: rng.randrange(n) for v, n in ranges.items()}
        assert _eval_index(got, env) == _eval_index(e, env)
