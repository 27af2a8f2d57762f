"""`fuseopt reduce`: ddmin over nodes keeps graphs valid and shrinks a 200+ node divergence to the seed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fuseopt.aot.diff import diff_finalized
from fuseopt.aot.graphedit import keep_nodes
from fuseopt.aot.reduce import ddmin, diverges, is_valid, kernels_exceed, nondeterministic, reduce_graph
from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_graph, load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INDUCTOR2 = Options(scoring="inductor", max_fusion_size=2)


def _invoke(*args: str) -> Result:
    _register()
    return CliRunner().invoke(cli, list(args))


def seed_copies(copies: int, filler: int) -> str:
    """`copies` instances of the jit_aot seed pattern (x+x, item, x*x, x@x template, x**2, each on
    its own inputs), with `filler` pointwise nodes (chains of 4 on their own inputs) between them."""
    buffers: list[str] = []
    blocks: list[list[str]] = []
    for k in range(copies):
        buffers += [f"  x{k}: {{shape: [16, 16], dtype: float32, role: input}}"]
        buffers += [f"  num{k}: {{shape: [], dtype: int64, role: input}}"]
        # In program order, as Inductor holds them: the proximity scores come from this order.
        for p in "asbmc":
            shape = "[]" if p == "s" else "[16, 16]"
            dtype = "int64" if p == "s" else "float32"
            buffers.append(f"  {p}{k}: {{shape: {shape}, dtype: {dtype}, role: output}}")
        pw = "{{name: {n}, loops: [[i0, 16], [i1, 16]], store: '{n}[16*i0 + i1]', value: '{v}'}}"
        load = f"x{k}[16*i0 + i1]"
        blocks.append(
            [
                "  - " + pw.format(n=f"a{k}", v=f"{load} + {load}"),
                f"  - {{name: s{k}, loops: [], store: 's{k}[0]', value: 'num{k}[0]'}}",
                "  - " + pw.format(n=f"b{k}", v=f"{load} * {load}"),
                f"  - {{name: m{k}, kind: template, op: mm, inputs: [x{k}, x{k}], output: m{k}, "
                f"choices: [{{name: tri_{k}, time_us: 1.0}}, {{name: ext_{k}, time_us: 2.0}}]}}",
                "  - " + pw.format(n=f"c{k}", v=f"pow({load}, 2)"),
            ]
        )
    fill: list[str] = []
    for j in range(filler):
        if j % 4 == 0:
            buffers.append(f"  y{j}: {{shape: [32, 8], dtype: float32, role: input}}")
        src = f"y{j}" if j % 4 == 0 else f"f{j - 1}"
        role = "output" if j % 4 == 3 or j == filler - 1 else "intermediate"
        buffers.append(f"  f{j}: {{shape: [32, 8], dtype: float32, role: {role}}}")
        fill.append(
            f"  - {{name: f{j}, loops: [[i0, 32], [i1, 8]], store: 'f{j}[8*i0 + i1]', "
            f"value: 'relu({src}[8*i0 + i1]) + {j}'}}"
        )
    nodes: list[str] = []
    per = -(-filler // copies)
    for k, blk in enumerate(blocks):
        nodes += blk
        nodes += fill[k * per : (k + 1) * per]
    header = "format: fuseopt-graph/1\nname: many_seeds\nbuffers:\n"
    return header + "\n".join(buffers) + "\nnodes:\n" + "\n".join(nodes) + "\n"


@pytest.fixture(scope="module")
def big() -> Graph:
    g = load_text(seed_copies(24, 90), "many_seeds.yaml")
    assert len(g.nodes) >= 200
    return g


# -- graph surgery ------------------------------------------------------------------------------


def test_keep_nodes_turns_lost_producers_into_inputs_and_keeps_an_output() -> None:
    g = load_graph(SAMPLES / "apbt.yaml")
    sub = keep_nodes(g, ["n2"])
    assert [n.name for n in sub.nodes] == ["n2"]
    roles = {b.name: b.role for b in sub.buffers}
    assert roles == {"buf0": "input", "buf1": "input", "out": "output"}  # x and y are gone
    assert is_valid(sub)
    sub = keep_nodes(g, ["n0"])
    assert {b.name: b.role for b in sub.buffers} == {"x": "input", "buf0": "output"}
    assert is_valid(sub)


def test_ddmin_finds_a_one_minimal_subset() -> None:
    calls: list[frozenset[str]] = []

    def test(items: Sequence[str]) -> bool:
        calls.append(frozenset(items))
        return {"c", "q", "x"} <= set(items)

    items = [chr(ord("a") + i) for i in range(26)]
    assert ddmin(items, test) == ["c", "q", "x"]
    assert len(calls) < 200


# -- predicates and the 200-node case -----------------------------------------------------------


@pytest.mark.slow  # the CLI test below reduces the same graph in the quick set
def test_a_200_node_divergence_shrinks_to_the_seed(big: Graph) -> None:
    pred = diverges(INDUCTOR2)
    assert pred(big)
    seen: list[int] = []
    result = reduce_graph(big, pred, lambda size, tests: seen.append(size))
    small = result.graph
    assert len(small.nodes) <= 10
    assert pred(small) and is_valid(small)
    assert seen and seen[-1] == len(small.nodes)
    # One copy of the seed: three pointwise nodes on one x, the item node between them, the template.
    kinds = sorted(n.kind for n in small.nodes)
    assert kinds.count("template") == 1 and kinds.count("pointwise") == 4
    report = diff_finalized(small, INDUCTOR2, "append")
    assert report.comparison.divergence is not None
    assert report.comparison.divergence.summary == "proximity -2 vs -1"
    # Deterministic: the same input gives the same result.
    assert reduce_graph(big, pred).graph == small


def test_kernels_exceed_predicate(big: Graph) -> None:
    opts = Options(max_fusion_size=2)
    result = reduce_graph(big, kernels_exceed(3, opts))
    assert len(result.graph.nodes) == 4  # four nodes that cannot share kernels
    assert kernels_exceed(3, opts)(result.graph)
    assert not kernels_exceed(4, opts)(result.graph)


def test_nondeterministic_predicate_reduces_the_seed() -> None:
    g = load_graph(SAMPLES / "jit_aot.yaml")
    pred = nondeterministic(INDUCTOR2, permutations=8, seed=0)
    assert pred(g)
    small = reduce_graph(g, pred).graph
    assert len(small.nodes) <= len(g.nodes) and pred(small)
    assert not nondeterministic(Options(max_fusion_size=2), permutations=8)(g)


# -- CLI ----------------------------------------------------------------------------------------


def test_cli_reduces_and_writes_a_valid_graph(tmp_path: Path, big: Graph) -> None:
    from fuseopt.ir.serialize import dump_yaml

    src = tmp_path / "big.yaml"
    src.write_text(dump_yaml(big))
    out = tmp_path / "small.yaml"
    args = ["reduce", str(src), "--until", "diverges", "--scoring", "inductor", "--max-fusion-size", "2"]
    r = _invoke(*args, "-o", str(out), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["nodes_before"] >= 200 and doc["nodes_after"] <= 10
    small = load_graph(out)
    assert len(small.nodes) == doc["nodes_after"]
    assert small.meta["until"] == "diverges"
    d = _invoke("diff-jit-aot", str(out), "--scoring", "inductor", "--max-fusion-size", "2")
    assert d.exit_code == 1 and "proximity -2 vs -1" in d.output


def test_cli_kernels_exceed_spellings(tmp_path: Path) -> None:
    for until in ("kernels-exceed=1", "kernels-exceed 1"):
        out = tmp_path / "k.yaml"
        r = _invoke("reduce", str(SAMPLES / "apbt.yaml"), "--until", until, "--no-loop-order", "-o", str(out))
        assert r.exit_code == 0, r.output
        assert "reduced apbt" in r.output
        assert len(load_graph(out).nodes) == 2


def test_cli_predicate_not_holding_exits_1(tmp_path: Path) -> None:
    r = _invoke(
        "reduce", str(SAMPLES / "jit_aot.yaml"), "--until", "diverges", "-o", str(tmp_path / "o.yaml")
    )
    assert r.exit_code == 1
    assert "does not hold" in r.output
    assert not (tmp_path / "o.yaml").exists()


@pytest.mark.parametrize("until", ["sometimes", "kernels-exceed", "kernels-exceed=x", "diverges 3"])
def test_cli_bad_predicate_exits_2(tmp_path: Path, until: str) -> None:
    r = _invoke("reduce", str(SAMPLES / "apbt.yaml"), "--until", until, "-o", str(tmp_path / "o.yaml"))
    assert r.exit_code == 2
