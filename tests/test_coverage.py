"""Whole writes (fuseopt/ir/coverage.py): every non-input buffer is written whole, each element
exactly once, by its writer -- proven at validation, against a brute-force oracle."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.errors import InputError
from fuseopt.io.load import load_text
from fuseopt.ir.coverage import ENUMERATE_LIMIT, digits

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _graph(shape: list[int], stride: list[int], offset: int, loops: list[tuple[str, int]], store: str) -> str:
    return (
        "format: fuseopt-graph/1\nname: cov\nbuffers:\n"
        f"  out: {{shape: {shape}, stride: {stride}, offset: {offset}, dtype: float32, role: output}}\n"
        "nodes:\n"
        f"  - {{name: n0, loops: {[list(lv) for lv in loops]}, store: 'out[{store}]', value: '1.5'}}\n"
    )


def _errors(text: str) -> list[Any]:
    try:
        load_text(text, "cov.yaml")
    except InputError as err:
        return list(err.diagnostics)
    return []


# -- digits ---------------------------------------------------------------------------------------


def test_digits_drop_unit_dims_merge_chains_in_any_order() -> None:
    assert digits([(8, 4), (1, 8)]) == ((1, 32),)
    assert digits([(1, 8), (8, 1), (8, 4)]) == ((1, 32),)
    # (2, 2) and (4, 2) chain although (3, 2) sorts between them.
    assert digits([(4, 2), (3, 2), (2, 2)]) == ((2, 4), (3, 2))
    assert digits([(0, 3), (1, 2)]) == ((0, 3), (1, 2))
    assert digits([]) == ()


def test_equal_positions_with_different_digits_are_enumerated_not_rejected() -> None:
    # {0,2,4} + {0,3,6,9} == {0,2,...,10} + {0,3}: two digit structures of one set of positions.
    assert digits([(2, 3), (3, 4)]) != digits([(2, 6), (3, 2)])
    text = _graph([6, 2], [2, 3], 0, [("i0", 3), ("i1", 4)], "2*i0 + 3*i1")
    assert _errors(text) == []


# -- the property: validation agrees with brute force ---------------------------------------------


@st.composite
def cases(draw: Any) -> tuple[list[int], list[int], int, list[tuple[str, int]], str, list[int]]:
    """A buffer layout (dense, permuted, padded or arbitrary strides) and a store: the buffer's own
    index, or one over split, merged, permuted, reflected or wrong loops, affine or with // and %.
    Returns the case and the store's positions, in loop order, computed here in Python."""
    rank = draw(st.integers(0, 3))
    shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    if draw(st.booleans()):
        order = draw(st.permutations(range(rank)))
        stride = [0] * rank
        acc = 1
        for d in reversed(order):
            stride[d] = acc
            acc *= shape[d] + draw(st.sampled_from((0, 0, 1)))
    else:
        stride = [draw(st.integers(0, 7)) for _ in range(rank)]
    offset = draw(st.sampled_from((0, 0, 2)))
    numel = 1
    for n in shape:
        numel *= n
    form = draw(st.sampled_from(("own", "flat", "split", "random", "divmod")))
    if form == "own":  # one loop per dim, permuted, maybe reflected, maybe a size changed
        dims = draw(st.permutations(range(rank)))
        loops = [(f"i{k}", shape[d]) for k, d in enumerate(dims)]
        coeffs = [stride[d] for d in dims]
        base = offset
        if loops and draw(st.booleans()):
            k = draw(st.integers(0, len(loops) - 1))
            loops[k] = (loops[k][0], draw(st.integers(1, 5)))
        if loops and draw(st.booleans()):  # reflect one loop: n - 1 - i
            k = draw(st.integers(0, len(loops) - 1))
            base += coeffs[k] * (loops[k][1] - 1)
            coeffs[k] = -coeffs[k]
        terms = [f"{c}*{name}" for (name, _), c in zip(loops, coeffs, strict=True)]
        store = " + ".join([*terms, str(base)])

        def at(p: tuple[int, ...]) -> int:
            return base + sum(c * x for c, x in zip(coeffs, p, strict=True))

    elif form in ("flat", "divmod"):  # one loop over all elements, unflattened with // and %
        n = numel + draw(st.sampled_from((0, 0, 0, -1, 1)))
        n = max(n, 1)
        loops = [("i0", n)]
        radices = shape[:]
        terms = []
        parts: list[tuple[int, int, int]] = []  # (divisor, modulus, stride)
        div = 1
        for d in reversed(range(rank)):
            parts.append((div, radices[d], stride[d]))
            div *= radices[d]
        for dv, md, s in parts:
            terms.append(f"{s}*((i0 // {dv}) % {md})")
        store = " + ".join([*terms, str(offset)])

        def at(p: tuple[int, ...]) -> int:
            return offset + sum(s * ((p[0] // dv) % md) for dv, md, s in parts)

    elif form == "split":  # each dim's loop split in two (or kept), loops in random order
        loops, coeffs = [], []
        for d in range(rank):
            n = shape[d]
            inner = draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
            loops += [(f"a{d}", n // inner), (f"b{d}", inner)]
            coeffs += [stride[d] * inner, stride[d]]
        perm = draw(st.permutations(range(len(loops))))
        loops = [loops[k] for k in perm]
        coeffs = [coeffs[k] for k in perm]
        store = " + ".join(
            [*(f"{c}*{name}" for (name, _), c in zip(loops, coeffs, strict=True)), str(offset)]
        )

        def at(p: tuple[int, ...]) -> int:
            return offset + sum(c * x for c, x in zip(coeffs, p, strict=True))

    else:  # arbitrary affine
        k = draw(st.integers(0, 3))
        loops = [(f"i{j}", draw(st.integers(1, 4))) for j in range(k)]
        coeffs = [draw(st.integers(-6, 6)) for _ in range(k)]
        base = offset + sum(-c * (n - 1) for (_, n), c in zip(loops, coeffs, strict=True) if c < 0)
        store = " + ".join([*(f"{c}*{name}" for (name, _), c in zip(loops, coeffs, strict=True)), str(base)])

        def at(p: tuple[int, ...]) -> int:
            return base + sum(c * x for c, x in zip(coeffs, p, strict=True))

    points = [at(p) for p in itertools.product(*(range(n) for _, n in loops))]
    return shape, stride, offset, loops, store.replace("+ -", "- "), points


@SETTINGS
@given(cases())
def test_validation_accepts_exactly_the_bijective_stores(case: Any) -> None:
    shape, stride, offset, loops, store, points = case
    elements = [
        offset + sum(s * d for s, d in zip(stride, idx, strict=True))
        for idx in itertools.product(*(range(n) for n in shape))
    ]
    storage = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) + 1
    errors = _errors(_graph(shape, stride, offset, loops, store))
    codes = [e.code for e in errors]
    if len(set(elements)) != len(elements):  # the store is not checked against a bad layout
        assert codes[0] == "layout" and "coverage" not in codes, errors
        assert errors[0].pointer == "/buffers/out/stride"
        return
    if any(not 0 <= p < storage for p in points):
        assert codes == ["bounds"], errors
        return
    written = Counter(points)
    if written == Counter(elements):
        assert errors == [], (store, errors)
        return
    assert codes == ["coverage"], (store, errors)
    (err,) = errors
    assert err.pointer == "/nodes/0/store" and err.span is not None
    # The error names the first element (row-major) written other than once, or the stray write.
    stray = [p for p in points if p not in set(elements)]
    if stray:
        assert f"storage position {stray[0]} " in err.message, err.message
        return
    for idx, e in zip(itertools.product(*(range(n) for n in shape)), elements, strict=True):
        if written[e] != 1:
            assert f"element [{', '.join(map(str, idx))}]" in err.message, err.message
            assert ("never written" in err.message) == (written[e] == 0)
            assert written[e] < 2 or f"{written[e]} times" in err.message
            break


# -- beyond the enumeration limit -----------------------------------------------------------------

BIG = 1 << 23
assert BIG > ENUMERATE_LIMIT


@pytest.mark.parametrize(
    ("loops", "store", "wanted"),
    [
        # the buffer's own index, split and permuted: proven by digits, whatever the size
        ([("a", 2), ("b", BIG // 2)], "a + 2*b", None),
        ([("a", BIG // 8), ("b", 8)], "8*a + b", None),
        ([("a", 1 << 22), ("b", 2)], f"{(1 << 22) - 1} - a + {1 << 22}*b", None),
        # definite failures, found without enumerating
        ([("a", BIG - 1)], "a", "the store's loops cover 8388607 points but 'out' has 8388608 elements"),
        ([("a", BIG // 2), ("b", 2)], "a", "does not use loop 'b' (size 2)"),
        (
            [("a", 1 << 22), ("b", 2)],
            "a + 2*b",
            f"element [{BIG - 1}] (storage position {BIG - 1}) is never written",
        ),
        # not a bijection, but nothing cheap shows where: refused as unprovable
        ([("a", 2), ("b", 2), ("c", 1 << 21)], f"a + {(1 << 21) + 1}*b + 3*c", "cannot prove"),
        ([("a", BIG)], "2*(a // 2) + a % 2", "its index is not affine in the loops"),
    ],
)
def test_large_stores(loops: list[tuple[str, int]], store: str, wanted: str | None) -> None:
    errors = _errors(_graph([BIG], [1], 0, loops, store))
    if wanted is None:
        assert errors == []
        return
    (err,) = errors
    assert err.code == "coverage" and wanted in err.message, err.message
    if "cannot prove" in wanted:
        assert "write the store affinely with the buffer's own strides" in err.message
        assert "out[d0]" in err.message


def test_large_interleaved_layout_is_refused_small_one_enumerated() -> None:
    # Blocks of {0,2,...,10} + {0,3} every 16: injective, but the strides interleave.
    small = _graph([4, 6, 2], [16, 2, 3], 0, [("k", 4), ("i", 6), ("j", 2)], "16*k + 2*i + 3*j")
    assert _errors(small) == []
    k = ENUMERATE_LIMIT // 12 + 1
    big = _graph([k, 6, 2], [16, 2, 3], 0, [("k", k), ("i", 6), ("j", 2)], "16*k + 2*i + 3*j")
    (err,) = _errors(big)
    assert err.code == "layout" and "cannot prove that the layout of 'out'" in err.message


def test_extern_output_layout_and_reduction_store() -> None:
    head = (
        "format: fuseopt-graph/1\nname: lib\nbuffers:\n"
        "  a: {shape: [4, 8], dtype: float32, role: input}\n"
        "  b: {shape: [8, 4], dtype: float32, role: input}\n"
    )
    ok = head + (
        "  c: {shape: [4, 4], stride: [1, 5], dtype: float32}\n"
        "  out: {shape: [4], dtype: float32, role: output}\n"
        "nodes:\n"
        "  - {name: mm0, kind: extern, op: mm, inputs: [a, b], output: c}\n"
        "  - {name: n1, loops: [[i0, 4]], reduce: [[r0, 4]], store: 'out[i0]', value: 'sum(c[i0 + 5*r0])'}\n"
    )
    assert _errors(ok) == []
    (err,) = _errors(ok.replace("stride: [1, 5]", "stride: [2, 3]").replace("i0 + 5*r0", "2*i0 + 3*r0"))
    assert err.code == "layout" and err.pointer == "/buffers/c/stride"
    assert "elements [0, 2] and [3, 0] at one storage position (6)" in err.message
    (err,) = _errors(ok.replace("store: 'out[i0]'", "store: 'out[i0 // 2]'"))
    assert err.pointer == "/nodes/1/store"
    assert "element [0] of 'out' (storage position 0) 2 times, at i0=0 and i0=1" in err.message


def test_zero_d_and_unit_dims() -> None:
    assert _errors(_graph([], [], 3, [], "3")) == []
    assert _errors(_graph([1, 4, 1], [0, 1, 0], 0, [("i", 4)], "i")) == []
    (err,) = _errors(_graph([1, 4], [0, 1], 0, [("i", 4), ("j", 2)], "i"))
    assert "does not use loop 'j'" in err.message or "2 times" in err.message


# -- reads of written buffers ---------------------------------------------------------------------
def _reader(layout: str, value: str, loops: str = "[[i, 3]]") -> str:
    return (
        "format: fuseopt-graph/1\nname: reads\nbuffers:\n"
        "  x: {shape: [3], dtype: float32, role: input}\n"
        f"  t: {{shape: [3], {layout}, dtype: float32}}\n"
        "  out: {shape: [3], dtype: float32, role: output}\n"
        "nodes:\n"
        "  - {name: n0, loops: [[i, 3]], store: 't[STORE]', value: 'x[i] + 1'}\n"
        f"  - {{name: n1, loops: {loops}, store: 'out[i]', value: '{value}'}}\n"
    )


@pytest.mark.parametrize(
    ("layout", "store", "value", "gap"),
    [
        ("stride: [2]", "2*i", "t[2*(i % 2) + 1]", 1),  # between the elements
        ("stride: [2]", "2*i", "t[i]", 1),  # i = 1 lands between elements 0 and 1
        ("stride: [1], offset: 2", "i + 2", "t[i + 1]", 1),  # dense, but below the offset
        ("stride: [2]", "2*i", "t[2*i] + t[2*(i % 2) + 1] * 0", 1),  # a value that counts, even times 0
    ],
)
def test_a_load_of_storage_nothing_writes_is_refused_with_its_position(
    layout: str, store: str, value: str, gap: int
) -> None:
    (err,) = _errors(_reader(layout, value).replace("STORE", store))
    assert err.code == "coverage" and err.pointer == "/nodes/1/value"
    assert f"reads storage position {gap}, which is not an element of 't'" in err.message


@pytest.mark.parametrize(
    ("layout", "store", "value"),
    [
        ("stride: [2]", "2*i", "t[2*i]"),  # the elements, as laid out
        ("stride: [2]", "2*i", "t[4 - 2*i]"),  # reversed
        ("stride: [2]", "2*i", "masked(i < 0, t[2*(i % 2) + 1], 0.0)"),  # read only where wanted
        ("stride: [2]", "2*i", "where(i < 0, t[2*(i % 2) + 1], 0.0)"),  # a discarded branch
        ("stride: [1], offset: 2", "i + 2", "t[i + 2]"),
    ],
)
def test_loads_of_elements_or_discarded_values_are_accepted(layout: str, store: str, value: str) -> None:
    assert _errors(_reader(layout, value).replace("STORE", store)) == []


def test_a_reduction_reads_elements_over_its_reduce_loops_too() -> None:
    text = _reader("stride: [2]", "sum(t[2*r])", "[[i, 3]], reduce: [[r, 3]]").replace("STORE", "2*i")
    assert _errors(text) == []
    (err,) = _errors(text.replace("sum(t[2*r])", "sum(t[r + i])"))
    assert "reads storage position 1" in err.message


def test_a_loose_interval_below_the_offset_is_not_taken_for_a_gap() -> None:
    """`(i % 2) * (i % 2) - (i % 2)` is 0, but its interval is [-1, 1]: the index reaches 4 and 5
    only, never below the offset 4, though its interval reaches 3. The exact positions decide."""
    index = "minimum(i, 1) + 4 + ((i % 2) * (i % 2) - (i % 2))"
    assert _errors(_reader("stride: [1], offset: 4", f"t[{index}]").replace("STORE", "i + 4")) == []


def test_dense_means_every_position_from_the_offset_is_an_element() -> None:
    """`BufferInfo.dense`, the one spelling validation, the reference's gap check and the random
    inputs share: row-major or permuted, at an offset or not, is dense; a padded row, a stride
    that skips positions, is not."""
    from fuseopt.ir.dtypes import DType
    from fuseopt.ir.graph import BufferInfo

    def info(shape: tuple[int, ...], stride: tuple[int, ...], offset: int = 0) -> BufferInfo:
        return BufferInfo("b", shape, stride, offset, DType.float32, "intermediate")

    assert info((3, 4), (4, 1)).dense and info((3, 4), (1, 3)).dense and info((3, 4), (4, 1), 5).dense
    assert not info((3, 4), (5, 1)).dense and not info((3, 4), (8, 2)).dense and not info((4,), (2,), 1).dense
    assert info((1, 4), (100, 1)).dense  # a dimension of one element: its stride reaches nothing
