"""`diff-jit-aot`: template finalization, plan comparison, and the seed case (docs/inductor.md, docs/cases.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fuseopt.aot.compare import compare_plans, flipped_term
from fuseopt.aot.diff import diff_finalized, diff_graphs, infer_renames
from fuseopt.aot.finalize import finalize_templates
from fuseopt.aot.planfile import plan_from_text
from fuseopt.cli.main import _register, cli
from fuseopt.errors import InputError
from fuseopt.io.load import load_graph, load_text
from fuseopt.ir.graph import Graph, LibraryNode
from fuseopt.ir.serialize import dump_json, dump_yaml
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "jit_aot.yaml"

# docs/cases.md jit_aot: fn(x, number) = (x+x, number.item(), x*x, x@x, x**2), x 256x256.
SEED = """\
format: fuseopt-graph/1
name: seed
buffers:
  x:      {shape: [256, 256], dtype: float32, role: input}
  number: {shape: [], dtype: int64, role: input}
  buf0:   {shape: [256, 256], dtype: float32, role: output}
  buf1:   {shape: [], dtype: int64, role: output}
  buf2:   {shape: [256, 256], dtype: float32, role: output}
  buf3:   {shape: [256, 256], dtype: float32, role: output}
  buf4:   {shape: [256, 256], dtype: float32, role: output}
nodes:
  - {name: buf0, loops: [[i0, 256], [i1, 256]], store: 'buf0[256*i0 + i1]', value: 'x[256*i0 + i1] + x[256*i0 + i1]'}
  - {name: buf1, loops: [], store: 'buf1[0]', value: 'number[0]'}
  - {name: buf2, loops: [[i0, 256], [i1, 256]], store: 'buf2[256*i0 + i1]', value: 'x[256*i0 + i1] * x[256*i0 + i1]'}
  - name: buf3
    kind: template
    op: mm
    inputs: [x, x]
    output: buf3
    choices: [{name: triton_mm_1, time_us: 10.5}, {name: extern_mm, time_us: 12.0}, {name: triton_mm_0, time_us: 10.5}]
  - {name: buf4, loops: [[i0, 256], [i1, 256]], store: 'buf4[256*i0 + i1]', value: 'pow(x[256*i0 + i1], 2)'}
"""

# A template whose output feeds a later epilogue: it can only move up to just before its reader.
EPILOGUE = """\
format: fuseopt-graph/1
name: epi
buffers:
  a:    {shape: [16, 16], dtype: float32, role: input}
  mmo:  {shape: [16, 16], dtype: float32}
  p:    {shape: [16, 16], dtype: float32, role: output}
  q:    {shape: [16, 16], dtype: float32, role: output}
  mmo_final: {shape: [16, 16], dtype: float32, role: output}
nodes:
  - {name: mm0, kind: template, op: mm, inputs: [a, a], output: mmo, choices: [{name: t0, time_us: 2.0}], epilogue_fusion: true}
  - {name: p0, loops: [[i0, 16], [i1, 16]], store: 'p[16*i0 + i1]', value: 'a[16*i0 + i1] * 2'}
  - {name: q0, loops: [[i0, 16], [i1, 16]], store: 'q[16*i0 + i1]', value: 'relu(mmo[16*i0 + i1])'}
  - {name: z0, loops: [[i0, 16], [i1, 16]], store: 'mmo_final[16*i0 + i1]', value: 'a[16*i0 + i1] + 1'}
"""

INDUCTOR2 = Options(scoring="inductor", max_fusion_size=2)


def _seed() -> Graph:
    return load_text(SEED, "seed.yaml")


def _invoke(*args: str) -> Result:
    _register()
    return CliRunner().invoke(cli, list(args))


# -- finalization -------------------------------------------------------------------------------


def test_append_moves_buffer_and_node_to_the_end_with_a_new_name() -> None:
    fin = finalize_templates(_seed(), "append")
    g = fin.graph
    assert [b.name for b in g.buffers][-2:] == ["buf4", "buf3_final"]
    assert [n.name for n in g.nodes] == ["buf0", "buf1", "buf2", "buf4", "buf3_final"]
    assert dict(fin.node_renames) == {"buf3": "buf3_final"}
    assert dict(fin.buffer_renames) == {"buf3": "buf3_final"}
    node = g.node("buf3_final")
    assert isinstance(node, LibraryNode) and node.output == "buf3_final"
    # Best choice: smallest time, ties to the smallest name.
    assert node.choices == (("triton_mm_0", 10.5),)
    assert fin.choices["buf3"] == "triton_mm_0"
    assert load_text(dump_json(g), "re.json") == g  # still a valid graph file


def test_in_place_keeps_position_and_name() -> None:
    seed = _seed()
    fin = finalize_templates(seed, "in-place")
    assert [n.name for n in fin.graph.nodes] == [n.name for n in seed.nodes]
    assert [b.name for b in fin.graph.buffers] == [b.name for b in seed.buffers]
    assert not fin.node_renames and not fin.buffer_renames
    node = fin.graph.node("buf3")
    assert isinstance(node, LibraryNode) and node.choices == (("triton_mm_0", 10.5),)


def test_append_respects_program_order_and_avoids_name_collisions() -> None:
    g = load_text(EPILOGUE, "epi.yaml")
    fin = finalize_templates(g, "append")
    names = [n.name for n in fin.graph.nodes]
    # q0 reads the template's output, so the template stops just before it.
    assert names == ["p0", "mm0_final", "q0", "z0"]
    assert fin.buffer_renames["mmo"] == "mmo_final2"  # mmo_final is taken
    assert [b.name for b in fin.graph.buffers][-1] == "mmo_final2"
    q0 = fin.graph.node("q0")
    assert "mmo_final2" in q0.read_buffers()
    load_text(dump_yaml(fin.graph), "re.yaml")


# -- comparison ---------------------------------------------------------------------------------


def test_seed_diverges_on_proximity_with_append_in_inductor_mode() -> None:
    report = diff_finalized(_seed(), INDUCTOR2, "append")
    cmp = report.comparison
    assert not report.identical
    d = cmp.divergence
    assert d is not None and d.a is not None and d.b is not None
    assert d.kind == "fusion"
    assert d.a.pair == ("buf0", "buf2") and d.b.pair == ("buf2", "buf4")
    assert d.flip is not None and d.flip.text() == "proximity -2 vs -1"
    assert d.a.score["proximity"] == -2 and d.b.score["proximity"] == -1
    assert any("tied with buf0 + buf2" in line for line in d.explanation)
    assert {k.nodes for k in cmp.only_in_b} == {("buf2", "buf4"), ("buf0",)}
    assert {k.nodes for k in cmp.only_in_a} == {("buf0", "buf2"), ("buf4",)}
    assert ("buf3", 3, 4) in cmp.order_changes and ("buf4", 4, 3) in cmp.order_changes


@pytest.mark.parametrize(
    ("opts", "mode"),
    [
        (INDUCTOR2, "in-place"),
        (Options(max_fusion_size=2), "append"),
        (Options(max_fusion_size=2), "in-place"),
    ],
)
def test_seed_has_no_divergence(opts: Options, mode: str) -> None:
    report = diff_finalized(_seed(), opts, mode)
    assert report.identical, report.comparison.divergence
    assert report.comparison.divergence is None


def test_other_fusion_order_same_kernels_is_not_divergent() -> None:
    # With max fusion size 64 all three pointwise nodes end up in one kernel either way; the
    # passes get there by different first fusions, which is reported but is no divergence.
    report = diff_finalized(_seed(), Options(scoring="inductor"), "append")
    assert report.identical
    d = report.comparison.divergence
    assert d is not None and d.flip is not None and d.flip.term == "proximity"


def test_two_graph_dumps_with_an_inferred_rename() -> None:
    seed = _seed()
    aot = finalize_templates(seed, "append").graph
    assert infer_renames(seed, aot) == {"buf3": "buf3_final"}
    report = diff_graphs(seed, aot, INDUCTOR2)
    assert not report.identical
    assert report.comparison.divergence is not None
    assert report.comparison.divergence.summary == "proximity -2 vs -1"
    assert not report.comparison.unmatched_a and not report.comparison.unmatched_b
    assert diff_graphs(seed, seed, INDUCTOR2).identical


def test_flipped_term_takes_the_most_significant_difference() -> None:
    a = {"template": 2, "node_type": 1, "memory": 8, "proximity": -2}
    assert flipped_term(a, {**a, "memory": 4, "proximity": -1}).text() == "memory 8 vs 4"  # type: ignore[union-attr]
    assert flipped_term(a, dict(a)) is None


def test_a_plan_compared_with_itself_is_identical() -> None:
    seed = _seed()
    plan = optimize(seed, Options()).plan
    cmp = compare_plans(plan, plan)
    assert cmp.identical and cmp.divergence is None and not cmp.renamed


# -- CLI ----------------------------------------------------------------------------------------


def test_cli_reproduces_the_seed_and_explains_it() -> None:
    r = _invoke(
        "diff-jit-aot", str(SAMPLE), "--scoring", "inductor", "--finalize", "append", "--max-fusion-size", "2"
    )
    assert r.exit_code == 1, r.output
    assert "divergent" in r.output
    assert "score term that flipped: proximity -2 vs -1" in r.output
    assert "kernels only in aot" in r.output


@pytest.mark.parametrize(
    "extra", [["--scoring", "inductor", "--finalize", "in-place"], ["--finalize", "append"], []]
)
def test_cli_identical_exits_0(extra: list[str]) -> None:
    r = _invoke("diff-jit-aot", str(SAMPLE), "--max-fusion-size", "2", *extra)
    assert r.exit_code == 0, r.output
    assert "identical" in r.output


def test_cli_json_is_stable_and_names_the_flip(tmp_path: Path) -> None:
    args = [
        "diff-jit-aot",
        str(SAMPLE),
        "--scoring",
        "inductor",
        "--max-fusion-size",
        "2",
        "--format",
        "json",
    ]
    r1, r2 = _invoke(*args), _invoke(*args)
    assert r1.exit_code == 1 and r1.output == r2.output
    doc = json.loads(r1.output)
    assert doc["format"] == "fuseopt-diff-jit-aot/1"
    assert doc["identical"] is False
    div = doc["first_divergent_decision"]
    assert div["term"] == "proximity" and (div["jit_value"], div["aot_value"]) == (-2, -1)
    assert div["jit"]["pair"] == ["buf0", "buf2"] and div["aot"]["pair"] == ["buf2", "buf4"]
    assert div["summary"] == "proximity -2 vs -1"
    assert ["buf2", "buf4"] in [k["nodes"] for k in doc["kernels"]["only_in_aot"]]
    assert doc["finalize"]["node_renames"] == {"buf3": "buf3_final"}


def test_cli_two_graphs_and_two_plans(tmp_path: Path) -> None:
    aot = tmp_path / "aot.yaml"
    aot.write_text(dump_yaml(finalize_templates(load_graph(SAMPLE), "append").graph))
    opts = ["--scoring", "inductor", "--max-fusion-size", "2"]
    r = _invoke("diff-jit-aot", str(SAMPLE), str(aot), *opts)
    assert r.exit_code == 1, r.output
    assert "proximity -2 vs -1" in r.output
    for name, graph in (("jit", SAMPLE), ("aot", aot)):
        out = _invoke("optimize", str(graph), *opts, "-o", str(tmp_path / name))
        assert out.exit_code == 0, out.output
    pj, pa = str(tmp_path / "jit" / "plan.json"), str(tmp_path / "aot" / "plan.json")
    r = _invoke("diff-jit-aot", "--plans", pj, pa)
    assert r.exit_code == 1
    assert "nodes only in jit: buf3" in r.output  # unmatched until told
    r = _invoke("diff-jit-aot", "--plans", pj, pa, "--rename", "buf3=buf3_final", "--format", "json")
    doc = json.loads(r.output)
    assert r.exit_code == 1 and doc["first_divergent_decision"]["summary"] == "proximity -2 vs -1"
    assert doc["unmatched_nodes"] == {"jit": [], "aot": []}
    assert _invoke("diff-jit-aot", "--plans", pj, pj).exit_code == 0


def test_plan_files_are_validated_with_locations(tmp_path: Path) -> None:
    good = json.loads(_invoke("optimize", str(SAMPLE), "--format", "json", "--max-fusion-size", "2").output)
    bad = dict(good)
    bad["kernels"] = [{**good["kernels"][0], "nodes": "buf0"}, *good["kernels"][1:]]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad, indent=2))
    r = _invoke("diff-jit-aot", "--plans", str(path), str(path))
    assert r.exit_code == 2
    assert "/kernels/0/nodes" in r.output
    dup = {**good, "kernels": [*good["kernels"], good["kernels"][0]]}
    with pytest.raises(InputError) as err:
        plan_from_text(json.dumps(dup), "dup.json")
    assert "duplicate kernel name" in str(err.value)
    missing = {k: v for k, v in good.items() if k != "decisions"}
    with pytest.raises(InputError) as err:
        plan_from_text(json.dumps(missing), "m.json")
    assert err.value.diagnostics[0].pointer == "/decisions"


@pytest.mark.parametrize(
    "args",
    [
        ["diff-jit-aot"],
        ["diff-jit-aot", "a.yaml", "b.yaml", "c.yaml"],
        ["diff-jit-aot", str(SAMPLE), "--plans", "a.json", "b.json"],
        ["diff-jit-aot", str(SAMPLE), str(SAMPLE), "--rename", "nonsense"],
        ["diff-jit-aot", "does-not-exist.yaml"],
    ],
)
def test_cli_bad_input_exits_2(args: list[str]) -> None:
    assert _invoke(*args).exit_code == 2


def test_cli_bad_graph_is_located(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(SEED.replace("role: input}\n  number", "role: inpt}\n  number"))
    r = _invoke("diff-jit-aot", str(p))
    assert r.exit_code == 2
    assert "/buffers/x/role" in r.output
