"""launches.json (`fuseopt.report.launches`): valid against schemas/launches.schema.json and the
same launches as kernels.py, read back from the module's syntax tree: the kernels in order, each
fixed launch's grid, blocks, warps and cluster programs (its fallback under `_clusters`), every
autotune candidate; the cost model's choice is the strategy it reports taken. On the samples, the
golden kernels (every strategy), the captured samples, every forced strategy, --autotune, and
random graphs."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator

from fuseopt.cli.main import _register, cli
from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.codegen.schedule import ComputeLaunch, build_schedule
from fuseopt.codegen.strategies import TABLE
from fuseopt.codegen.tile_shapes import strategy_name
from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan
from fuseopt.report.launches import FORMAT, launches_json
from tests.planning import sample_paths
from tests.strategies import doc_graph, graph_docs
from tests.sweeps import examples
from tests.update_golden import kernel_graphs

ROOT = Path(__file__).resolve().parent.parent
VALIDATOR = Draft202012Validator(json.loads((ROOT / "schemas" / "launches.schema.json").read_text()))
CAPTURED = sorted(str(p) for p in (ROOT / "samples" / "captured").glob("*.json"))
PATHS = sample_paths() + kernel_graphs() + CAPTURED
STRATEGIES = [strategy_name(a) for a in TABLE] + ["sliding_window", "register_window"]


def _config(blocks: dict[str, int], keywords: dict[str, int], grid: list[int] | None) -> dict[str, Any]:
    out = {"blocks": blocks, "num_warps": keywords["num_warps"], "num_ctas": keywords.get("num_ctas", 1)}
    return out if grid is None else out | {"grid": grid}


def module_launches(source: str) -> tuple[list[str], dict[str, list[dict[str, Any]]], dict[str, list[Any]]]:
    """From a generated module: its kernels in order; each one's fixed launches in `call` (the
    cluster launch, then its fallback); each one's autotune candidates."""
    tree = ast.parse(source)
    kernels: list[str] = []
    tuned: dict[str, list[Any]] = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("triton_"):
            continue
        kernels.append(fn.name)
        for deco in fn.decorator_list:
            if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "triton.autotune":
                configs = next(k.value for k in deco.keywords if k.arg == "configs")
                assert isinstance(configs, ast.List)
                tuned[fn.name] = [
                    _config(
                        ast.literal_eval(c.args[0]),
                        {k.arg: ast.literal_eval(k.value) for k in c.keywords if k.arg},
                        None,
                    )
                    for c in configs.elts
                    if isinstance(c, ast.Call)
                ]
    call = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "call")
    fixed: dict[str, list[dict[str, Any]]] = {}
    found = [
        n
        for n in ast.walk(call)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Subscript)
        and isinstance(n.func.value, ast.Name)
    ]
    for node in sorted(found, key=lambda n: (n.lineno, n.col_offset)):
        assert isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name)
        name = node.func.value.id
        words = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(node.func.slice, ast.Tuple) and all(
            isinstance(e, ast.Constant) for e in node.func.slice.elts
        ):
            grid = list(ast.literal_eval(node.func.slice))
            blocks = {k: ast.literal_eval(v) for k, v in words.items() if k.endswith("BLOCK")}
            numbers = {k: ast.literal_eval(v) for k, v in words.items() if k in ("num_warps", "num_ctas")}
            fixed.setdefault(name, []).append(_config(blocks, numbers, grid))
        else:  # an autotuned launch: the grid is the config's (`_grid`)
            fixed.setdefault(name, [])
    return kernels, fixed, tuned


def check_consistent(graph: Graph, plan: Plan, options: CodegenOptions) -> dict[str, Any]:
    doc = json.loads(json.dumps(launches_json(graph, plan, options)))
    VALIDATOR.validate(doc)
    assert doc["format"] == FORMAT
    kernels, fixed, tuned = module_launches(emit_module(graph, plan, options=options))
    listed = [k for la in doc["launches"] for k in la.get("kernels", [])]
    assert [k["name"] for k in listed] == kernels
    nodes = [n for la in doc["launches"] for n in la["nodes"]]
    assert sorted(nodes) == sorted({n for k in plan.kernels for n in k.nodes}), "every node, once"
    for k in listed:
        name = k["name"]
        if k["autotune"]:  # with --autotune (a window may still have one fixed launch)
            assert options.autotune
            assert tuned[name] == [
                {kk: c[kk] for kk in ("blocks", "num_warps", "num_ctas")} for c in k["autotune"]
            ]
            assert k["launch"] == k["autotune"][0] and k["fallback"] is None
        else:
            want = [k["launch"]] + ([k["fallback"]] if k["fallback"] is not None else [])
            assert fixed[name] == want, name
            assert name not in tuned and k["autotune"] == []
    forced = {strategy_name(a): a for a in TABLE}.get(options.strategy or "")
    for la, launch in zip(doc["launches"], build_schedule(graph, plan).launches, strict=True):
        assert la["plan_kernel"] == launch.plan_kernel
        if forced is not None and isinstance(launch, ComputeLaunch) and la["kernels"]:
            applies = forced(graph, launch, options) is not None
            assert (la["kernels"][0]["strategy"] == options.strategy) == applies, la
            assert not applies or not la["weighed"]
        if la["kind"] == "library":
            assert "kernels" not in la and la["op"]
            continue
        if la["weighed"]:
            taken = [w for w in la["weighed"] if w["taken"]]
            assert len(taken) == 1 and len(la["weighed"]) >= 2
            first = la["kernels"][0]
            assert taken[0]["strategy"] == first["strategy"]
            assert taken[0]["estimated_us"] == first["estimate"]["us"]
            least = min(w["estimated_us"] for w in la["weighed"])
            bound = least * (1 + options.tuning.cost_tie_pct / 100)
            assert taken[0]["estimated_us"] <= bound + 1e-3
        for k in la["kernels"]:
            assert (k["estimate"] is None) == (k["part"] == "finish")
            assert (k["part"] is not None) == (k["strategy"] == "split")
    return doc


@pytest.mark.parametrize("path", PATHS, ids=lambda p: os.path.splitext(os.path.basename(p))[0])
def test_launches_match_the_module(path: str) -> None:
    stage = optimize(load_graph(path))
    doc = check_consistent(stage.graph, stage.plan, CodegenOptions())
    assert doc["launches"], "a plan with kernels has launches"


def test_every_strategy_is_reported_somewhere() -> None:
    """The golden kernels take every strategy; launches.json names each (so the report is not
    merely consistent on the easy ones)."""
    seen: set[str] = set()
    parts: set[str | None] = set()
    for path in kernel_graphs():
        stage = optimize(load_graph(path))
        doc = launches_json(stage.graph, stage.plan, CodegenOptions())
        for la in doc["launches"]:
            for k in la.get("kernels", []):
                seen.add(k["strategy"])
                parts.add(k["part"])
    assert seen == set(STRATEGIES), sorted(set(STRATEGIES) - seen)
    assert parts == {None, "partial", "finish"}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_forced_strategies_and_autotune(strategy: str) -> None:
    for path in kernel_graphs()[::3]:
        stage = optimize(load_graph(path))
        for autotune in (False, True):
            options = CodegenOptions(strategy=strategy, autotune=autotune)
            doc = check_consistent(stage.graph, stage.plan, options)
            assert doc["strategy"] == strategy and doc["autotune"] is autotune


def test_clusters_report_their_fallback() -> None:
    """A cluster launch (num_ctas > 1) is reported with the launch taken without clusters."""
    found = 0
    for path in kernel_graphs():
        stage = optimize(load_graph(path))
        doc = launches_json(stage.graph, stage.plan, CodegenOptions())
        for k in (k for la in doc["launches"] for k in la.get("kernels", [])):
            if k["launch"]["num_ctas"] > 1:
                found += 1
                assert k["fallback"] is not None and k["fallback"]["num_ctas"] == 1
    assert found, "the golden kernels have a cluster launch"


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_docs())
def test_random_graphs(doc: dict[str, Any]) -> None:
    g = doc_graph(doc)
    stage = optimize(g)
    check_consistent(stage.graph, stage.plan, CodegenOptions())
    small = CodegenOptions(max_xblock=4, max_r0_block=4, persistent_rnumel=4)
    check_consistent(stage.graph, stage.plan, dataclasses.replace(small, autotune=True))


def test_optimize_writes_launches_json(tmp_path: Path) -> None:
    _register()
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["optimize", str(ROOT / "samples" / "extern_mm.yaml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "launches.json").read_text())
    VALIDATOR.validate(doc)
    kinds = [la["kind"] for la in doc["launches"]]
    assert "library" in kinds and kinds != ["library"] * len(kinds)
    names = [k["name"] for la in doc["launches"] for k in la.get("kernels", [])]
    assert names == module_launches((out / "kernels.py").read_text())[0]
    none = tmp_path / "none"
    res = CliRunner().invoke(
        cli, ["optimize", str(ROOT / "samples" / "apbt.yaml"), "-o", str(none), "--emit", "none"]
    )
    assert res.exit_code == 0 and sorted(os.listdir(none)) == ["plan.json"]


@pytest.mark.parametrize(
    "args",
    [[], ["--autotune"], ["--strategy", "looped_row"], ["--target", "a100", "--multiprocessors", "20"]],
    ids=["default", "autotune", "looped_row", "a100"],
)
def test_optimize_writes_what_the_library_generates(tmp_path: Path, args: list[str]) -> None:
    """The command chooses the tilings once for both files: kernels.py is `emit_module`'s text and
    launches.json `launches_json`'s document, for the same options."""
    from fuseopt.cli.console import dump_json
    from fuseopt.targets import get

    _register()
    path = str(ROOT / "samples" / "layernorm_t.yaml")
    res = CliRunner().invoke(cli, ["optimize", path, "-o", str(tmp_path), *args])
    assert res.exit_code == 0, res.output
    opts = dict(zip(args[::2], args[1::2], strict=False)) if "--autotune" not in args else {}
    options = CodegenOptions(
        target=get(opts.get("--target", "h200")),
        multiprocessors=int(opts["--multiprocessors"]) if "--multiprocessors" in opts else None,
        strategy=opts.get("--strategy"),
        autotune="--autotune" in args,
    )
    stage = optimize(load_graph(path))
    assert (tmp_path / "kernels.py").read_text() == emit_module(stage.graph, stage.plan, options=options)
    assert (tmp_path / "launches.json").read_text() == dump_json(
        launches_json(stage.graph, stage.plan, options)
    )
