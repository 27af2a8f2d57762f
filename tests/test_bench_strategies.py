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


def test_wider_doubles_the_warps_of_row_tiles_at_the_most() -> None:
    """sum_f32 at full size: its persistent and looped tiles on 8 warps (the H200's most) get a
    16-warp twin each; nothing else does."""
    from benchmarks.strategies import capture, wider
    from fuseopt.codegen.choice import candidates
    from fuseopt.codegen.options import CodegenOptions
    from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
    from fuseopt.passes.pipeline import optimize

    stage = optimize(capture("suite", "sum_f32"))
    (launch,) = [
        la for la in build_schedule(stage.graph, stage.plan).launches if isinstance(la, ComputeLaunch)
    ]
    o = CodegenOptions()
    eight = [t for t, _ in candidates(stage.graph, launch, o) if t.config.num_warps == 8]
    twins = [t for t, _ in wider(stage.graph, launch, o)]
    assert len(twins) == len(eight) > 0
    assert [(t.strategy, t.config.blocks, 16) for t in eight] == [
        (t.strategy, t.config.blocks, t.config.num_warps) for t in twins
    ]


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs TRITON_INTERPRET=1")
def test_a_tuned_constant_at_each_value_is_a_module_checked(tmp_path: os.PathLike[str]) -> None:
    """--constant: max_f16_odd (13 x 33 here: rows that start inside a vector, which
    persistent_rnumel governs) with rows held whole up to 16 or 64 points: looped and persistent
    modules, each checked; 4096 generates the same module as 64 and shares its row."""
    out = os.path.join(str(tmp_path), "constant.json")
    doc = run(["max_f16_odd"], small=True, jobs=1, out=out, constant=("persistent_rnumel", [16, 64]))
    rows = doc["variants"]
    assert doc["constant"] == {"name": "persistent_rnumel", "target_value": 4096}
    assert [r["values"] for r in rows] == [[4096, 64], [16]] and [r["chosen"] for r in rows] == [True, False]
    assert all(r["ok"] for r in rows), [r.get("error") for r in rows if not r["ok"]]
    with open(out, encoding="utf-8") as f:
        assert json.load(f) == doc


def test_constant_names_and_values_are_checked() -> None:
    from benchmarks.strategies import parse_constant

    assert parse_constant("split_min_r_blocks=1,2,8") == ("split_min_r_blocks", [1, 2, 8])
    for bad in ["split_min_r_blocks", "no_such_constant=1", "max_warps=a,b", "max_warps="]:
        with pytest.raises(ValueError, match="--constant"):
            parse_constant(bad)


def test_held_out_workloads_only_where_named() -> None:
    from benchmarks.strategies import workloads
    from tests.fixtures.suite import HELDOUT

    everything = workloads([])
    assert not {n for _, n in everything} & set(HELDOUT) and len(everything) >= 37
    assert workloads(["colsum_f16", "sum_f32"]) == [("suite", "sum_f32"), ("suite", "colsum_f16")]
