"""benchmarks/strategies.py --small (the CPU path): every strategy and launch candidate of a
workload generated, run under the interpreter and checked against the reference."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.strategies import FORMAT, run


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs TRITON_INTERPRET=1")
def test_every_variant_is_checked_and_estimated(tmp_path: os.PathLike[str]) -> None:
    out = os.path.join(str(tmp_path), "strategies.json")
    doc = run(["sum_f32", "avg_s2_cl_bf16"], small=True, jobs=1, out=out)
    with open(out, encoding="utf-8") as f:
        assert json.load(f) == doc
    assert doc["format"] == FORMAT and doc["copy_gbps"] is None
    rows = doc["variants"]
    assert {r["workload"] for r in rows} == {"sum_f32", "avg_s2_cl_bf16"}
    assert all(r["ok"] for r in rows), [r.get("error") for r in rows if not r["ok"]]
    for name in ("sum_f32", "avg_s2_cl_bf16"):
        mine = [r for r in rows if r["workload"] == name]
        assert mine[0]["launch"] is None and sum(r["chosen"] for r in mine) >= 2  # the module, and its tiling
        assert all(r["estimated_us"] > 0 for r in mine[1:])
    assert {r.get("strategy") for r in rows if r["workload"] == "sum_f32"} >= {"PersistentRow", "LoopedRow"}
    assert any(r.get("num_warps") == 16 for r in rows if r["workload"] == "sum_f32")  # `wider`'s, checked too
