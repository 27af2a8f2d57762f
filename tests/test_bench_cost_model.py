"""benchmarks/cost_model.py on the CPU: a measured pair rebuilt and estimated both ways, and the
swept 1D launches estimated (the figures are in benchmarks/results/cost-*.json)."""

from __future__ import annotations

import pytest

from benchmarks.cost_model import estimate_pair, pairs, sweeps


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
