"""Fusion scores (`passes/scoring.py`): Inductor's terms and proximity, and the stable score's
bytes saved, checked against kernel bytes."""

from __future__ import annotations

import json

import pytest

from fuseopt.analysis.metrics import AccessTable
from fuseopt.io.load import load_text
from tests.planning import ROOT, load, plan


def test_inductor_score_terms_and_proximity() -> None:
    st = plan(load(f"{ROOT}/samples/jit_aot.yaml"), scoring="inductor", max_fusion_size=2)
    first = st.plan.decisions[0]
    assert list(first.score) == ["template", "node_type", "memory", "buffer_overlap", "proximity"]
    # Three pointwise readers of x with equal memory scores: proximity decides (buf0, buf2 at -2).
    assert first.pair == ("buf0", "buf2") and first.score["proximity"] == -2


@pytest.mark.parametrize("seed", range(5))
def test_saved_bytes_equals_kernel_bytes_difference(seed: int) -> None:
    import random

    from tests.fixtures.graphgen import make_graph

    g = load_text(json.dumps(make_graph(120, seed=seed, rows=4, cols=8)), "g.json")
    table = AccessTable(g)
    names = [n.name for n in g.nodes]
    rng = random.Random(seed)
    for _ in range(300):
        a = rng.sample(names, rng.randint(1, 6))
        b = [x for x in rng.sample(names, rng.randint(1, 6)) if x not in a]
        if b:
            assert table.saved_bytes(a, b) == table.kernel_bytes(a) + table.kernel_bytes(
                b
            ) - table.kernel_bytes(a + b)
