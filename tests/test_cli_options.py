"""Planning options a graph records in `meta` are honoured, and shown, by every command that plans;
the command line wins. Checked on the JIT/AOT seed sample and on generated chains whose kernel
count is the recorded max_fusion_size's consequence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.cli.main import _register, cli

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "jit_aot.yaml"


def _cli(*args: str) -> Result:
    _register()
    return CliRunner().invoke(cli, list(args))


def _chain(tmp: Path, n: int, meta: str) -> Path:
    """n pointwise nodes in a chain over 64 floats: fuses into ceil(n / max_fusion_size) kernels."""
    bufs = ["  x: {shape: [64], dtype: float32, role: input}"]
    nodes = []
    for i in range(n):
        role = ", role: output" if i == n - 1 else ""
        bufs.append(f"  b{i}: {{shape: [64], dtype: float32{role}}}")
        src = "x" if i == 0 else f"b{i - 1}"
        nodes.append(f"  - {{name: n{i}, loops: [[i0, 64]], store: 'b{i}[i0]', value: '{src}[i0] + 1'}}")
    p = tmp / f"chain{n}.yaml"
    p.write_text(
        "format: fuseopt-graph/1\nname: chain\n"
        + (f"meta: {meta}\n" if meta else "")
        + "buffers:\n"
        + "\n".join(bufs)
        + "\nnodes:\n"
        + "\n".join(nodes)
        + "\n"
    )
    return p


def _planned_options(path: Path, *flags: str) -> dict[str, dict[str, object]]:
    """The options each planning command reports planning `path` with."""
    out = {}
    opt = json.loads(_cli("optimize", str(path), "--format", "json", *flags).output)
    out["optimize"] = opt["options"]
    ex = json.loads(_cli("explain", str(path), "n0", "n1", "--format", "json", *flags).output)
    out["explain"] = ex["options"]
    diff = _cli("diff-jit-aot", str(path), "--format", "json", *flags)
    out["diff-jit-aot"] = json.loads(diff.output)["options"]
    det = _cli(
        "check-determinism", str(path), "--permutations", "2", "--processes", "0", "--format", "json", *flags
    )
    out["check-determinism"] = json.loads(det.output)["options"]
    run = _cli("run", str(path), "--backend", "triton", "--format", "json", *flags)
    out["run"] = json.loads(run.output)["options"]
    return out


KEYS = ("scoring", "max_fusion_size", "loop_order")


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(3, 6),
    size=st.integers(1, 3),
    scoring=st.sampled_from(["stable", "inductor"]),
    loop_order=st.booleans(),
)
def test_every_planning_command_plans_with_the_recorded_options(
    tmp_path: Path, n: int, size: int, scoring: str, loop_order: bool
) -> None:
    meta = f"{{max_fusion_size: {size}, scoring: {scoring}, loop_order: {str(loop_order).lower()}}}"
    path = _chain(tmp_path, n, meta)
    want = {"scoring": scoring, "max_fusion_size": size, "loop_order": loop_order}
    for command, opts in _planned_options(path).items():
        assert {k: opts[k] for k in KEYS} == want, command
    plan = json.loads(_cli("optimize", str(path), "--format", "json").output)
    assert plan["metrics"]["kernels"] == -(-n // size)
    text = _cli("optimize", str(path)).output
    assert f"max fusion size {size} (from the graph's meta)" in text


def test_the_command_line_wins(tmp_path: Path) -> None:
    path = _chain(tmp_path, 4, "{max_fusion_size: 1, scoring: inductor, loop_order: false}")
    flags = ("--max-fusion-size", "3", "--scoring", "stable", "--loop-order")
    want = {"scoring": "stable", "max_fusion_size": 3, "loop_order": True}
    for command, opts in _planned_options(path, *flags).items():
        assert {k: opts[k] for k in KEYS} == want, command
    assert "max fusion size 3 (command line)" in _cli("optimize", str(path), *flags).output


def test_the_seed_sample_diverges_as_the_readme_says() -> None:
    """samples/jit_aot.yaml records max_fusion_size 2: with Inductor's scoring the JIT and AOT
    passes diverge, reduce finds it, and ci fails it; stable scoring or a larger size does not."""
    res = _cli("diff-jit-aot", str(SAMPLE), "--scoring", "inductor")
    assert res.exit_code == 1 and "divergent" in res.output, res.output
    assert "max fusion size 2 (from the graph's meta)" in res.output
    assert _cli("diff-jit-aot", str(SAMPLE)).exit_code == 0
    assert (
        _cli("diff-jit-aot", str(SAMPLE), "--scoring", "inductor", "--max-fusion-size", "64").exit_code == 0
    )
    ci = _cli("ci", str(SAMPLE), "--jobs", "1", "--scoring", "inductor", "--checks", "validate,optimize,diff")
    assert ci.exit_code == 1 and "jit-aot-divergence" in ci.output


def test_reduce_honours_and_records_the_options(tmp_path: Path) -> None:
    small = tmp_path / "small.yaml"
    res = _cli("reduce", str(SAMPLE), "--until", "diverges", "-o", str(small), "--scoring", "inductor")
    assert res.exit_code == 0, res.output
    assert "max_fusion_size: 2" in small.read_text() and "scoring: inductor" in small.read_text()
    assert _cli("diff-jit-aot", str(small)).exit_code == 1  # the repro needs no flags


@pytest.mark.parametrize(
    ("meta", "pointer"),
    [
        ("{max_fusion_size: 0}", "/meta/max_fusion_size"),
        ("{max_fusion_size: '2'}", "/meta/max_fusion_size"),
        ("{max_fusion_size: true}", "/meta/max_fusion_size"),
        ("{scoring: fast}", "/meta/scoring"),
        ("{loop_order: 1}", "/meta/loop_order"),
    ],
)
def test_a_bad_recorded_option_is_a_located_error(tmp_path: Path, meta: str, pointer: str) -> None:
    path = _chain(tmp_path, 3, meta)
    for args in (["validate", str(path)], ["optimize", str(path)]):
        res = _cli(*args)
        assert res.exit_code == 2 and pointer in res.stderr and "planning option" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
