"""The loads' L2 eviction hints (fuseopt/codegen/eviction.py): the rule table, and looped
kernels of one, two and three r loops, each run against the reference interpreter."""

from __future__ import annotations

import itertools
import re

import pytest

from fuseopt.codegen import CodegenOptions
from fuseopt.codegen.eviction import eviction_hint, reads_again
from fuseopt.ir.parser import parse_expr_text
from tests.strategies import check, graph, plan_of

LOOPED = CodegenOptions(persistent_rnumel=0, max_xblock=4, max_r0_block=4, unroll_rnumel=0, split_programs=0)
# A row a program on one multiprocessor: 40 programs outnumber the 32 it keeps resident.
WAVES = CodegenOptions(
    persistent_rnumel=0, max_xblock=1, max_r0_block=4, unroll_rnumel=0, split_programs=0, multiprocessors=1
)

CASES = [  # (flags set, hint): the first rule that holds wins
    ({"tile_2d", "looped", "read_before", "streams"}, "evict_last"),
    ({"reused", "streams"}, "evict_last"),  # read at several points: kept, in any kernel
    ({"reused", "looped", "read_before"}, "evict_last"),
    ({"looped", "reread", "read_before"}, "evict_last"),  # read again later beats a last read
    ({"looped", "broadcast", "read_before", "streams"}, "evict_last"),
    ({"looped", "read_before", "streams"}, "evict_first"),
    ({"looped", "read_before"}, "evict_first"),
    ({"looped", "streams"}, "evict_first"),
    ({"looped"}, None),
    ({"streams"}, "evict_first"),
    ({"reread", "broadcast", "read_before"}, None),  # no r loop: the loop rules do not apply
    (set(), None),
]
FLAGS = ("tile_2d", "reused", "looped", "reread", "broadcast", "read_before", "streams")


@pytest.mark.parametrize(("flags", "hint"), CASES)
def test_rule_table(flags: set[str], hint: str | None) -> None:
    assert eviction_hint(**{f: f in flags for f in FLAGS}) == hint


def test_outside_an_r_loop_only_the_tile_reuse_and_streaming_rules_apply() -> None:
    """A persistent or pointwise tile (no r loop) reads each row once: no reread, weight or last
    read hint, whatever the other flags say."""
    for reread, broadcast, before in itertools.product((False, True), repeat=3):
        hint = eviction_hint(
            tile_2d=False,
            reused=False,
            looped=False,
            reread=reread,
            broadcast=broadcast,
            read_before=before,
            streams=False,
        )
        assert hint is None


@pytest.mark.parametrize(
    ("index", "sizes", "run", "again"),
    [
        ("4097*i + j", {"i": 8, "j": 4097}, {"i", "j"}, False),  # every point its own element
        ("i", {"i": 8, "j": 4097}, {"i", "j"}, True),  # a[i] of an outer product
        ("j", {"i": 8, "j": 4097}, {"i", "j"}, True),  # a bias along j
        ("r", {"i": 8, "r": 64}, {"i", "r"}, True),  # a norm's weight
        ("i", {"i": 8, "r": 64}, {"i", "r"}, True),  # a row's statistic inside the row
        ("j", {"i": 1, "j": 64}, {"i", "j"}, False),  # a size-1 loop repeats nothing
        ("j", {"i": 8, "j": 64}, {"j"}, False),  # a variable the kernel does not run
        ("2*j + i", {"i": 2, "j": 64}, {"i", "j"}, False),
    ],
)
def test_reads_again(index: str, sizes: dict[str, int], run: set[str], again: bool) -> None:
    """A load reads its elements at several points where its index leaves out a loop variable of
    more than one value that the kernel runs."""
    runs = {v: (object() if v in run else None) for v in sizes}
    assert reads_again(parse_expr_text(index), sizes, runs) is again


def test_a_pointwise_outer_product_keeps_both_vectors() -> None:
    """relu(a[i] * b[j] + a[i]): a 1D pointwise tile; each vector read at every point of a row or
    column carries evict_last, the output written with no hint; run against the reference."""
    g = graph(
        """
format: fuseopt-graph/1
name: outer
buffers:
  a: {shape: [12], dtype: float32, role: input}
  b: {shape: [17], dtype: float32, role: input}
  y: {shape: [12, 17], dtype: float32, role: output}
nodes:
  - {name: n0, loops: [[i, 12], [j, 17]], store: "y[17*i + j]", value: "relu(a[i] * b[j] + a[i])"}
"""
    )
    src = check(g, plan_of(g, [["n0"]]))
    loads = [ln for ln in src.splitlines() if "tl.load(" in ln]
    assert len(loads) == 2 and all('eviction_policy="evict_last"' in ln for ln in loads), loads


RMS = """
format: fuseopt-graph/1
name: rms_rows
buffers:
  x:  {shape: [40, 20], dtype: float32, role: input}
  w:  {shape: [20], dtype: float32, role: input}
  ss: {shape: [40], dtype: float32}
  y:  {shape: [40, 20], dtype: float32, role: output}
nodes:
  - {name: sq, loops: [[i, 40]], reduce: [[r, 20]], store: "ss[i]", value: "sum(x[20*i + r] * x[20*i + r])"}
  - {name: nm, loops: [[i, 40], [j, 20]], store: "y[20*i + j]", value: "x[20*i + j] * w[j] / (ss[i] + 1.0)"}
"""

# The mean, a mean absolute deviation reading x again, then x normalised by both: three r loops.
THREE = """
format: fuseopt-graph/1
name: three_loops
buffers:
  x:  {shape: [40, 20], dtype: float32, role: input}
  w:  {shape: [20], dtype: float32, role: input}
  m:  {shape: [40], dtype: float32}
  d:  {shape: [40], dtype: float32}
  y:  {shape: [40, 20], dtype: float32, role: output}
nodes:
  - {name: mn, loops: [[i, 40]], reduce: [[r, 20]], store: "m[i]", value: "sum(x[20*i + r] / 20.0)"}
  - {name: dv, loops: [[i, 40]], reduce: [[r, 20]], store: "d[i]", value: "sum(abs(x[20*i + r] - m[i]))"}
  - {name: nm, loops: [[i, 40], [j, 20]], store: "y[20*i + j]", value: "(x[20*i + j] - m[i]) * w[j] / (d[i] + 1.0)"}
"""


def _loops(src: str) -> list[str]:
    """The bodies of the kernel's r loops, in order."""
    (kernel,) = [k.split("\n\n\n")[0] for k in src.split("@triton.jit") if "def triton_red_" in k]
    parts = re.split(r"\n    for r0_offset in ", kernel)[1:]
    return [p.split("\n    tmp")[0].split("\n    _")[0] for p in parts]


def _hints(body: str, buffer: str) -> list[str | None]:
    out = []
    for m in re.finditer(rf"tl\.load\(\s*{buffer}_ptr(?:[^()]|\([^()]*\))*\)", body):
        hint = re.search(r'eviction_policy="(\w+)"', m.group(0))
        out.append(hint.group(1) if hint else None)
    return out


@pytest.mark.parametrize(("text", "loops"), [(RMS, 2), (THREE, 3)], ids=["two_loops", "three_loops"])
@pytest.mark.parametrize("waves", [True, False], ids=["waves", "one_wave"])
def test_a_row_read_in_several_r_loops_is_kept_until_its_last(text: str, loops: int, waves: bool) -> None:
    """x is read in every r loop: kept in the L2 (`evict_last`) in each loop a later one reads
    it again; in the last, first out (`evict_first`) where later programs wait for room (more
    programs than the multiprocessors keep resident), unhinted where every program is resident
    at once (one wave: no later program to make room for). The weight w, the same for every row,
    is kept. Each module runs against the reference."""
    g = graph(text)
    options = WAVES if waves else LOOPED
    src = check(g, plan_of(g, [[n.name for n in g.nodes]]), options)
    bodies = _loops(src)
    assert len(bodies) == loops
    for k, body in enumerate(bodies):
        want = ("evict_first" if waves else None) if k == loops - 1 else "evict_last"
        assert _hints(body, "x") and set(_hints(body, "x")) == {want}, (k, body)
    assert _hints(bodies[-1], "w") == ["evict_last"]
    if waves:  # 40 programs on one multiprocessor that keeps 32 at once
        (launch,) = [ln for ln in src.splitlines() if "triton_red_" in ln and "[(" in ln]
        assert int(launch.split("[(")[1].split(",")[0]) > 32


def test_one_loop_that_writes_points_hints_only_its_weight() -> None:
    """A looped kernel of one r loop that stores a point's value reads x once and not as a
    stream (it writes): no hint on x; w, the same for every row, is kept."""
    text = """
format: fuseopt-graph/1
name: one_loop
buffers:
  x:  {shape: [6, 20], dtype: float32, role: input}
  w:  {shape: [20], dtype: float32, role: input}
  s:  {shape: [6], dtype: float32, role: output}
  y:  {shape: [6, 20], dtype: float32, role: output}
nodes:
  - {name: sm, loops: [[i, 6]], reduce: [[r, 20]], store: "s[i]", value: "sum(x[20*i + r] * w[r])"}
  - {name: sc, loops: [[i, 6], [j, 20]], store: "y[20*i + j]", value: "x[20*i + j] * w[j]"}
"""
    g = graph(text)
    src = check(g, plan_of(g, [["sm", "sc"]]), LOOPED)
    (body,) = _loops(src)
    assert set(_hints(body, "x")) == {None}
    assert set(_hints(body, "w")) == {"evict_last"}
