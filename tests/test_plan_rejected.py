"""Issue #23: the plan's refused pairs grouped by pair of kernels (`rejected`) and counted per
reason (`rejected_summary`), so a large graph's plan stays readable; `explain` still answers for
every node pair. The grouping loses no refused pair and depends on no list order."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from fuseopt.io.load import load_text
from fuseopt.passes.explain import explain
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import Stage, optimize
from fuseopt.plan import SUMMARY_EXAMPLES, Plan, kernel_rejections, rejected_summary
from tests.fixtures.graphgen import make_graph

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "plan.schema.json").read_text())


def _stage(seed: int, n: int, size: int) -> tuple[Stage, Options]:
    opts = Options(max_fusion_size=size)
    return optimize(load_text(json.dumps(make_graph(n, seed, rows=8, cols=16)), "g.json"), opts), opts


def _check_grouping(plan: Plan) -> None:
    where = {m: i for i, k in enumerate(plan.kernels) for m in k.nodes}
    names = [k.name for k in plan.kernels]
    cross = [r for r in plan.rejected if where[r.pair[0]] != where[r.pair[1]]]
    grouped = plan.kernel_rejections()
    # Every refused node pair between two kernels is counted once, under its kernels and reason.
    want: Counter[tuple[str, str, str]] = Counter()
    for r in cross:
        ia, ib = sorted((where[r.pair[0]], where[r.pair[1]]))
        want[(names[ia], names[ib], r.reason)] += 1
    got = Counter({(*g.kernels, code): n for g in grouped for code, n in g.reasons})
    assert got == want
    assert sum(g.pairs for g in grouped) == len(cross)
    keys = [(names.index(g.kernels[0]), names.index(g.kernels[1])) for g in grouped]
    assert keys == sorted(set(keys)) and all(a < b for a, b in keys)  # one entry per pair, kernel order
    for g in grouped:
        assert g.pairs == sum(n for _, n in g.reasons)
        counts = [n for _, n in g.reasons]
        assert counts == sorted(counts, reverse=True) and g.reason == g.reasons[0][0]
        mine = [r for r in cross if {names[where[r.pair[0]]], names[where[r.pair[1]]]} == set(g.kernels)]
        first = min((r for r in mine if r.reason == g.reason), key=lambda r: (r.pair, r.detail))
        assert (g.pair, g.detail) == (first.pair, first.detail)
    summary = rejected_summary(plan.kernels, plan.rejected)
    assert {reason: row["pairs"] for reason, row in summary.items()} == dict(Counter(r.reason for r in cross))
    for reason, row in summary.items():
        having = [g for g in grouped if reason in dict(g.reasons)]
        assert row["kernel_pairs"] == len(having)
        assert 1 <= len(row["examples"]) <= SUMMARY_EXAMPLES
        assert row["examples"][0]["kernels"] == list(having[0].kernels)
        for ex in row["examples"]:
            assert any(
                r.pair == tuple(ex["pair"]) and r.reason == reason and r.detail == ex["detail"] for r in cross
            )
    doc = plan.to_json()
    assert not list(Draft202012Validator(SCHEMA).iter_errors(doc))
    assert doc["rejected"] == [g.to_json() for g in grouped] and doc["rejected_summary"] == summary


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**20), n=st.integers(4, 40), size=st.sampled_from([2, 4, 64]))
def test_grouped_rejections_lose_nothing_and_ignore_list_order(seed: int, n: int, size: int) -> None:
    stage, _ = _stage(seed, n, size)
    plan = stage.plan
    _check_grouping(plan)
    shuffled = list(plan.rejected)
    random.Random(seed).shuffle(shuffled)
    assert kernel_rejections(plan.kernels, shuffled) == plan.kernel_rejections()
    assert rejected_summary(plan.kernels, shuffled) == rejected_summary(plan.kernels, plan.rejected)


def test_large_graph_plan_lists_kernel_pairs_not_node_pairs() -> None:
    """A 300-node graph refuses hundreds of node pairs; the JSON lists each pair of kernels once
    and at most one row per reason in the summary."""
    stage, _ = _stage(3, 300, 64)
    plan = stage.plan
    doc = plan.to_json()
    assert len(plan.rejected) > 2 * len(doc["rejected"]) > 0  # grouping shortens the list
    k = len(plan.kernels)
    assert len(doc["rejected"]) <= k * (k - 1) // 2
    assert len(doc["rejected_summary"]) == len({r.reason for r in plan.rejected})
    _check_grouping(plan)


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**20), n=st.integers(6, 30), size=st.sampled_from([2, 64]), pick=st.randoms())
def test_explain_answers_for_any_node_pair_listed_or_not(
    seed: int, n: int, size: int, pick: random.Random
) -> None:
    stage, opts = _stage(seed, n, size)
    plan = stage.plan
    names = sorted(m for k in plan.kernels for m in k.nodes)
    where = {m: k.name for k in plan.kernels for m in k.nodes}
    pairs = [tuple(pick.sample(names, 2)) for _ in range(5)]
    for g in plan.kernel_rejections():
        pairs.append(g.pair)
    for a, b in pairs:
        e = explain(stage, a, b, opts)
        assert e.fused == (where[a] == where[b])
        assert e.fused or e.reason, (a, b)
        assert (e.kernel_a, e.kernel_b) == (where[a], where[b])
