"""benchmarks/cost_model.py on the CPU: a measured pair rebuilt and estimated both ways, the swept
1D launches estimated, and every variant of the committed strategies file estimated again against
its measured time (the figures are in benchmarks/results/cost-*.json)."""

from __future__ import annotations

import os

import pytest

from benchmarks.cost_model import RESULTS, estimate_pair, pairs, strategies_check, sweeps


@pytest.mark.slow  # captures full-size workloads
def test_a_pair_and_the_sweeps_are_estimated() -> None:
    by = {p.name: p for p in pairs()}
    assert len(by) == 19
    row = estimate_pair(by["rowsum_128x200000_f32"])
    split, looped = row["variants"]
    assert (split["name"], looped["name"]) == ("split", "looped")
    assert split["measured_us"] < looped["measured_us"] and split["estimated_us"] < looped["estimated_us"]
    assert row["measured_differ"] and row["chosen"] == "split" and row["chosen_is_faster"] is True
    assert [k["strategy"] for k in split["kernels"]] == ["SplitPartial"]
    found = sweeps()
    assert [s["workload"] for s in found] == ["avg_s1_f32", "avg_s2_f16", "chain_f32_odd", "outer_f32"]
    assert all(len(s["launches"]) >= 16 and -1 <= s["rank_correlation"] <= 1 for s in found)


@pytest.mark.slow  # captures the suite and the six at full size
def test_the_model_takes_the_fastest_strategy_where_the_h200_run_tells_them_apart() -> None:
    """Of the launches of the suite and the six where the strategies' measured times differ by
    more than 5%, the model (as it is now) takes the fastest in every one. A change to the model
    or to a strategy's launch that breaks this shows here, on the CPU."""
    found = strategies_check(os.path.join(RESULTS, "strategies-2026-12-05-h200.json"))
    assert found["launches"] == 37 and found["strategies_differ"] >= 25
    missed = [r["workload"] for r in found["rows"] if r["differ"] and r["chosen"] != r["fastest"]]
    assert found["chosen_is_fastest"] == found["strategies_differ"], missed
    assert all(-1 <= r["rank_correlation"] <= 1 and r["best_us"] <= r["model_pick_us"] for r in found["rows"])
