"""Planning in two processes at the size cap (`passes.speculate`, `packing.stable_plan` with
`Options.jobs` > 1): the same plan, byte for byte, as one process, whichever plan is kept (the
packed line made here, or the natural plan sent by the child and replayed), and when the child
fails."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes import packing, speculate
from fuseopt.passes.explain import explain
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from tests.fixtures.graphgen import FAMILIES
from tests.sweeps import examples

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _plan_text(g: Graph, opts: Options) -> str:
    return json.dumps(optimize(g, opts, verify_each=True).plan.to_json(), indent=2)


def _forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Fork at any size; the list counts the children started."""
    started: list[int] = []
    real = speculate.Forked.start

    def start(work: Any) -> Any:
        child = real(work)
        started.append(child.pid if child is not None else -1)
        return child

    monkeypatch.setattr(packing, "PARALLEL_MIN_NODES", 0)
    monkeypatch.setattr(speculate.Forked, "start", staticmethod(start))
    return started


@settings(
    max_examples=examples(60, 12), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(
    family=st.sampled_from(sorted(FAMILIES)),
    seed=st.integers(0, 2**20),
    n=st.integers(6, 70),
    size=st.sampled_from([2, 3, 5, 8, 16]),
)
def test_two_processes_plan_byte_identical_to_one(
    family: str, seed: int, n: int, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = load_text(json.dumps(FAMILIES[family](n, seed, 8, 16)), "g.json")
    one = _plan_text(g, Options(max_fusion_size=size))
    with monkeypatch.context() as m:
        started = _forks(m)
        two = _plan_text(g, Options(max_fusion_size=size, jobs=2))
    assert two == one
    assert len(started) == (1 if packing.components(g)[0] > size else 0)


def test_the_natural_plan_kept_is_replayed_from_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four unlinked chains of 12 nodes at a cap of 8: the natural plan meets the kernel bound,
    so the child's plan is the one kept (sent, replayed here), with its explanations."""
    doc = _chains(4, 12)
    g = load_text(json.dumps(doc), "g.json")
    opts = Options(max_fusion_size=8)
    one = optimize(g, opts)
    replayed: list[int] = []
    real = packing._replay

    def replay(record: Any, into: Any) -> Any:
        replayed.append(len(record[0]))
        return real(record, into)

    with monkeypatch.context() as m:
        _forks(m)
        m.setattr(packing, "_replay", replay)
        two = optimize(g, Options(max_fusion_size=8, jobs=2))
    assert replayed == [len(one.plan.kernels)] == [8]
    assert json.dumps(two.plan.to_json()) == json.dumps(one.plan.to_json())
    for a, b in (("c0_1", "c0_2"), ("c0_7", "c0_8"), ("c1_0", "c2_0")):
        assert explain(two, a, b, opts) == explain(one, a, b, opts)


def test_a_failed_child_is_planned_again_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that raises sends nothing: the natural plan is made in this process instead."""
    g = load_text(json.dumps(FAMILIES["transposed"](60, 3, 8, 16)), "g.json")
    one = _plan_text(g, Options(max_fusion_size=8))
    parent = os.getpid()
    real = packing._natural_line

    def failing(natural: Any) -> Any:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return real(natural)

    with monkeypatch.context() as m:
        started = _forks(m)
        m.setattr(packing, "_natural_line", failing)
        two = _plan_text(g, Options(max_fusion_size=8, jobs=2))
    assert started and two == one


def test_forked_sends_the_summary_then_the_result_only_when_asked() -> None:
    child = speculate.Forked.start(lambda: ((os.getpid(), 7), lambda: list(range(100_000))))
    assert child is not None
    pid, seven = child.summary() or (0, 0)
    assert pid == child.pid and pid != os.getpid() and seven == 7
    assert child.result() == list(range(100_000))  # larger than a pipe's buffer
    assert child.pid == -1  # reaped

    unused = speculate.Forked.start(lambda: ("small", lambda: b"never sent"))
    assert unused is not None and unused.summary() == "small"
    pid = unused.pid
    unused.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # reaped by close()


def test_a_jobs_value_never_reaches_the_plan() -> None:
    assert "jobs" not in Options(jobs=4).to_json()
    assert Options(jobs=4) == Options()
    with pytest.raises(ValueError):
        Options(jobs=0)


def _chains(count: int, length: int) -> dict[str, Any]:
    buffers: dict[str, Any] = {}
    nodes = []
    for c in range(count):
        prev = f"x{c}"
        buffers[prev] = {"shape": [16], "dtype": "float32", "role": "input"}
        for i in range(length):
            out = f"c{c}_b{i}"
            buffers[out] = {"shape": [16], "dtype": "float32"}
            nodes.append(
                {
                    "name": f"c{c}_{i}",
                    "loops": [["i0", 16]],
                    "store": f"{out}[i0]",
                    "value": f"sin({prev}[i0])",
                }
            )
            prev = out
        buffers[prev]["role"] = "output"
    return {"format": "fuseopt-graph/1", "name": "chains", "buffers": buffers, "nodes": nodes}


def test_optimize_jobs_gives_the_same_files(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fuseopt optimize --jobs 2` on a capped graph of PARALLEL_MIN_NODES nodes forks a child and
    writes the bytes `--jobs 1` writes (plan.json and kernels.py)."""
    from click.testing import CliRunner

    from fuseopt.cli.main import cli

    n = packing.PARALLEL_MIN_NODES
    path = tmp_path / "g.json"
    path.write_text(json.dumps(FAMILIES["transposed"](n, 5, 8, 16)))
    started: list[int] = []
    real = speculate.Forked.start

    def start(work: Any) -> Any:
        started.append(1)
        return real(work)

    monkeypatch.setattr(speculate.Forked, "start", staticmethod(start))
    out = {}
    for jobs in (1, 2):
        args = ["optimize", str(path), "-o", str(tmp_path / f"o{jobs}"), "--jobs", str(jobs)]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
        out[jobs] = [(tmp_path / f"o{jobs}" / f).read_bytes() for f in ("plan.json", "kernels.py")]
        assert len(started) == jobs - 1  # a child for --jobs 2 only
    assert out[1] == out[2]


def test_the_unfused_plan_is_made_while_the_child_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's unfused plan (the graph's hash, the unfused metrics) is made in the parent
    between its packed line and the child's answer, once, and only when a child plans; the
    plan is the one a single process makes."""
    from fuseopt.passes import pipeline

    g = load_text(json.dumps(FAMILIES["transposed"](60, 3, 8, 16)), "g.json")
    made: list[tuple[int, bool]] = []
    real = pipeline.Baseline.plan

    def plan(self: Any) -> Any:
        made.append((os.getpid(), self._plan is None))
        return real(self)

    monkeypatch.setattr(pipeline.Baseline, "plan", plan)
    one = _plan_text(g, Options(max_fusion_size=8))
    at_build = list(made)
    made.clear()
    calls: list[str] = []
    real_summary = speculate.Forked.summary

    def summary(self: Any) -> Any:
        calls.append("summary" if made else "summary before the unfused plan")
        return real_summary(self)

    with monkeypatch.context() as m:
        started = _forks(m)
        m.setattr(speculate.Forked, "summary", summary)
        m.setattr(speculate.Forked, "ready", lambda self: False)  # the child still planning
        two = _plan_text(g, Options(max_fusion_size=8, jobs=2))
    assert two == one and started
    assert at_build[0] == (os.getpid(), True)  # one process: made when the plan is built
    assert made[0] == (os.getpid(), True) and calls[0] == "summary"  # two: before the child's answer
    assert all(not fresh for _, fresh in made[1:])  # made once


def test_the_rest_of_the_pipeline_runs_on_the_packed_line_while_the_child_plans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the child is still making the natural plan, this process runs the rest of the
    pipeline and the caller's `finish` on the packed line: kept, that stage is returned (finish
    ran once, before the child's answer was read); dropped (the natural plan kept), finish runs
    again on the stage returned. A child that has answered already is read at once, nothing
    run ahead. Either way the plan is the one a single process makes."""
    events: list[str] = []
    real_summary = speculate.Forked.summary

    def summary(self: Any) -> Any:
        events.append("summary")
        return real_summary(self)

    def finish(stage: Any) -> None:
        events.append(f"finish {id(stage)}")

    cases = [
        (load_text(json.dumps(FAMILIES["transposed"](60, 3, 8, 16)), "g.json"), False),  # packed kept
        (load_text(json.dumps(_chains(4, 12)), "g.json"), True),  # the natural plan kept
    ]
    for g, natural in cases:
        one = optimize(g, Options(max_fusion_size=8), verify_each=True)
        for answered in (False, True):
            events.clear()
            with monkeypatch.context() as m:
                started = _forks(m)
                m.setattr(speculate.Forked, "summary", summary)
                m.setattr(speculate.Forked, "ready", lambda self, answered=answered: answered)
                two = optimize(g, Options(max_fusion_size=8, jobs=2), verify_each=True, finish=finish)
            assert started and json.dumps(two.plan.to_json()) == json.dumps(one.plan.to_json())
            finishes = [e for e in events if e.startswith("finish")]
            assert finishes[-1] == f"finish {id(two)}"
            if answered:
                assert events[0] == "summary" and len(finishes) == 1
            else:
                assert events[0].startswith("finish") and events[1] == "summary"  # run ahead
                assert len(finishes) == (2 if natural else 1)


def test_ready_says_whether_the_summary_is_there_without_waiting() -> None:
    import time

    child = speculate.Forked.start(lambda: (time.sleep(0.3) or "late", lambda: None))
    assert child is not None
    assert not child.ready()  # still sleeping
    assert child.summary() == "late" and child.ready()
    child.close()
