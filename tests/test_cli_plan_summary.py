"""Plan text for large graphs: a summary past FULL_ROWS rows, every table with --full; words for
people (plurals, first differences of long orders, clipped lines)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import fuseopt.report.plan_text as plan_text
from fuseopt.cli.main import _register, cli
from fuseopt.report.words import clip, order_difference, plural
from tests.fixtures.graphgen import make_graph


@pytest.mark.slow
@pytest.mark.parametrize(("n", "seed"), [(40, 0), (64, 1)])
def test_summary_past_the_size_and_full_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, seed: int
) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(make_graph(n, seed)))
    _register()
    run = CliRunner().invoke
    full = run(cli, ["optimize", str(path)]).output  # small: every table by default
    plan = json.loads(run(cli, ["optimize", str(path), "--format", "json"]).output)
    monkeypatch.setattr(plan_text, "FULL_ROWS", 5)
    summary = run(cli, ["optimize", str(path)]).output
    assert run(cli, ["optimize", str(path), "--full"]).output == full
    assert run(cli, ["optimize", str(path), "--summary"]).output == summary
    assert len(summary.splitlines()) < len(full.splitlines())
    assert "--full prints every table" in summary and "decisions (in order)" not in summary
    kernels = plan["kernels"]
    shown_kernels = set(re.findall(r"│ (k\d+) ", summary))
    assert len(shown_kernels) == min(len(kernels), plan_text.SUMMARY_KERNELS)
    biggest = sorted(kernels, key=lambda k: -k["bytes"])[: plan_text.SUMMARY_KERNELS]
    assert {k["name"] for k in biggest if k["bytes"] > biggest[-1]["bytes"]} <= shown_kernels
    if plan["decisions"]:
        assert f"decisions: {plural(len(plan['decisions']), 'fusion')}" in summary
    for reason in {r["reason"] for r in plan["rejected"]}:
        assert reason in summary
    assert all(k["name"] in full for k in kernels)


@given(st.integers(0, 1000))
def test_plural(n: int) -> None:
    word = plural(n, "kernel")
    assert word == ("1 kernel" if n == 1 else f"{n} kernels")
    assert plural(n, "fresh process").endswith("process" if n == 1 else "processes")


@given(st.permutations(list(range(30))))
def test_order_difference_names_the_first_difference(order: list[int]) -> None:
    ref = [f"n{i}" for i in range(30)]
    variant = [f"n{i}" for i in order]
    text = order_difference(ref, variant)
    first = next((i for i in range(30) if ref[i] != variant[i]), None)
    if first is None:
        assert "the graph's order" in text
    else:
        assert f"position {first}: {variant[first]} (the graph has {ref[first]})" in text
    assert len(text) < 100  # one short line, whatever the length of the order


def test_clip() -> None:
    assert clip("x" * 10) == "x" * 10
    long = clip("y" * 5000)
    assert long.startswith("y" * 300) and "4,700 more characters" in long and len(long) < 400
