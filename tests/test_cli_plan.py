"""`fuseopt optimize` and `fuseopt explain` from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from fuseopt.aot.determinism import fuseopt_command
from fuseopt.cli.main import _register, cli
from tests.planning import ROOT
from tests.sweeps import FULL

APBT = os.path.join(ROOT, "samples", "apbt.yaml")
_register()


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def test_optimize_json_is_the_plan_and_byte_identical_across_processes(tmp_path: object) -> None:
    code, out = run("optimize", APBT, "--format", "json")
    assert code == 0
    plan = json.loads(out)
    assert plan["format"] == "fuseopt-plan/2" and plan["metrics"]["kernels"] == 1
    for key in ("graph", "graph_sha256", "kernels", "reorders", "decisions", "rejected", "metrics"):
        assert key in plan
    outs = set()
    for seed in ("0", "1", "123") if FULL else ("123",):  # each a fresh process that imports torch
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run(
            fuseopt_command("optimize", APBT, "--format", "json"),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        outs.add(proc.stdout)
    assert outs == {out}


def test_optimize_writes_plan_json(tmp_path: os.PathLike[str]) -> None:
    out_dir = os.path.join(str(tmp_path), "out")
    code, text = run("optimize", APBT, "-o", out_dir, "--emit", "none")
    assert code == 0
    assert "k0" in text and "n0 n1 n2" in text  # the rich table lists the kernel and its nodes
    with open(os.path.join(out_dir, "plan.json"), encoding="utf-8") as f:
        assert json.load(f)["metrics"]["bytes"] == 25165824


def test_optimize_imports_neither_torch_nor_the_emitter_it_does_not_use(tmp_path: os.PathLike[str]) -> None:
    """torch alone took a second to import: `fuseopt optimize --emit none` never needs it, nor the
    code generator, nor numpy, nor sympy (only a loop re-factoring proof needs it); kernels for a graph without library calls do not need torch."""
    out = os.path.join(str(tmp_path), "out")
    code = f"""
import sys
from fuseopt.cli.main import main

def optimize(*args):
    sys.argv = ["fuseopt", "optimize", {APBT!r}, "-o", {out!r}, *args]
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code

optimize("--format", "json", "--emit", "none")
heavy = {{"torch", "triton", "numpy", "sympy", "fuseopt.codegen.tiling", "fuseopt.report.html"}} & set(sys.modules)
assert not heavy, heavy
optimize()
assert "torch" not in sys.modules and "fuseopt.codegen.kernel" in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, cwd=ROOT)


def test_group_help_lists_every_command_without_importing_one() -> None:
    """`fuseopt --help` lists each command with its short help (`commands.SUMMARIES`, which each
    command also takes as `short_help`) and imports no command module (torch took seconds)."""
    import click

    from fuseopt.cli.commands import COMMANDS, SUMMARIES

    assert set(SUMMARIES) == set(COMMANDS)
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None and command.short_help == SUMMARIES[name]
    code = """
import sys
from fuseopt.cli.main import main
sys.argv = ["fuseopt", "--help"]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
loaded = {m for m in sys.modules if m.startswith("fuseopt.cli.") and m.endswith("_cmd")} | ({"torch"} & set(sys.modules))
assert not loaded, loaded
"""
    proc = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    for name, summary in SUMMARIES.items():
        assert name in proc.stdout and summary.split()[0] in proc.stdout


def test_optimize_generates_for_the_given_multiprocessors(tmp_path: os.PathLike[str]) -> None:
    from tests.fixtures.workloads import FULL, WORKLOADS

    doc, _ = WORKLOADS["tsum"](**FULL["tsum"])
    path = os.path.join(str(tmp_path), "tsum.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    grids = {}
    for sms in ("132", "64"):
        out_dir = os.path.join(str(tmp_path), sms)
        code, text = run("optimize", path, "-o", out_dir, "--multiprocessors", sms)
        assert code == 0, text
        with open(os.path.join(out_dir, "kernels.py"), encoding="utf-8") as f:
            grids[sms] = f.read().split("triton_red_fused_mul_add_sum_0[")[-1].split("]")[0]
    assert grids == {"132": "(128, 16)", "64": "(128, 8)"}
    code, text = run("optimize", path, "--multiprocessors", "0")
    assert code == 2 and "--multiprocessors" in text


def test_optimize_takes_the_strategy_it_is_given(tmp_path: os.PathLike[str]) -> None:
    """Column sums over 16384 rows: the cost model splits them (two kernels); --strategy
    looped_row gives one looped kernel; a name that is not a strategy is a usage error."""
    path = os.path.join(ROOT, "tests", "golden", "kernels", "col_sum_split.json")
    kernels = {}
    for strategy in (None, "looped_row"):
        out_dir = os.path.join(str(tmp_path), str(strategy))
        code, text = run("optimize", path, "-o", out_dir, *(("--strategy", strategy) if strategy else ()))
        assert code == 0, text
        with open(os.path.join(out_dir, "kernels.py"), encoding="utf-8") as f:
            kernels[strategy] = f.read().count("@triton.jit\ndef triton_")
    assert kernels == {None: 2, "looped_row": 1}
    code, text = run("optimize", path, "--strategy", "tile1d")
    assert code == 2 and "tile_1d" in text


def test_optimize_shows_its_steps_on_a_terminal_only(tmp_path: os.PathLike[str], monkeypatch: object) -> None:
    """On a terminal, stderr shows the step under way (loading, planning N nodes and checking the
    plan, generating Triton) and clears it; stdout keeps the plan alone. Not on a terminal
    (CliRunner's streams), nothing is drawn."""
    import io

    import pytest
    from rich.console import Console

    from fuseopt.cli import optimize_cmd

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    seen = io.StringIO()
    terminal = Console(file=seen, force_terminal=True, width=120, highlight=False)
    monkeypatch.setattr(optimize_cmd, "stderr", terminal)
    code, out = run("optimize", APBT, "--format", "json", "-o", str(tmp_path))
    assert code == 0 and json.loads(out)["metrics"]["kernels"] == 1
    drawn = seen.getvalue()
    for step in ("loading", "planning 3 nodes, checking the plan", "generating Triton for 1 kernels"):
        assert step in drawn, drawn
    quiet = io.StringIO()
    monkeypatch.setattr(optimize_cmd, "stderr", Console(file=quiet, force_terminal=False))
    code, out = run("optimize", APBT, "--format", "json")
    assert code == 0 and json.loads(out) and quiet.getvalue() == ""


def test_optimize_bad_input_writes_nothing(tmp_path: os.PathLike[str]) -> None:
    bad = os.path.join(str(tmp_path), "bad.yaml")
    with open(bad, "w", encoding="utf-8") as f:
        f.write(
            "format: fuseopt-graph/1\nname: b\nbuffers: {}\nnodes: [{name: n, loops: [[i, 2]], store: 'o[i]', value: '1'}]\n"
        )
    out_dir = os.path.join(str(tmp_path), "out")
    code, text = run("optimize", bad, "-o", out_dir)
    assert code == 2
    assert "Traceback" not in text
    assert not os.path.exists(os.path.join(out_dir, "plan.json"))


def test_no_loop_order_flag() -> None:
    code, out = run("optimize", APBT, "--format", "json", "--no-loop-order")
    assert code == 0 and json.loads(out)["metrics"]["kernels"] == 2


def test_explain_text_and_json() -> None:
    code, out = run("explain", APBT, "n1", "n2", "--no-loop-order")
    assert code == 0
    assert "index_mismatch" in out and "buf1[c0 + 1024*c1]" in out and "loop-order pass" in out
    code, out = run("explain", APBT, "n1", "n2", "--format", "json")
    data = json.loads(out)
    assert data["fused"] is True and data["kernels"] == ["k0", "k0"]
    assert any("reorder" in r for r in data["reorders"])
    code, out = run("explain", APBT, "n1", "nope")
    assert code == 2 and "no node named 'nope'" in out


def test_skip_pass_leaves_a_pass_out() -> None:
    pool = os.path.join(ROOT, "samples", "avgpool_cl_small.yaml")
    kinds = [r["kind"] for r in json.loads(run("optimize", pool, "--format", "json")[1])["reorders"]]
    assert kinds == ["normalize", "merge"]
    code, out = run("optimize", pool, "--format", "json", "--skip-pass", "merge_loops")
    assert code == 0
    assert [r["kind"] for r in json.loads(out)["reorders"]] == ["normalize"]
    code, out = run("optimize", APBT, "--format", "json", "--skip-pass", "fusion")
    assert code == 0 and json.loads(out)["metrics"]["kernels"] == 3
    code, out = run("optimize", APBT, "--skip-pass", "nope")
    assert code == 2
