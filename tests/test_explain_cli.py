"""`fuseopt explain`: an unknown node is an error naming the file and the nearest node names;
A and B must differ; the JSON output is versioned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_graph

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _explain(*args: str) -> Result:
    _register()
    return CliRunner().invoke(cli, ["explain", *args])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sample=st.sampled_from(["apbt.yaml", "jit_aot.yaml", "layernorm_t.yaml"]), data=st.data())
def test_an_unknown_node_names_the_file_and_the_nearest_nodes(sample: str, data: st.DataObject) -> None:
    path = SAMPLES / sample
    nodes = [n.name for n in load_graph(path).nodes]
    known = data.draw(st.sampled_from(nodes))
    typo = known + data.draw(st.sampled_from(["x", "_", "9"]))  # one character away from a node
    for args in ([str(path), known, typo], [str(path), typo, known]):
        res = _explain(*args)
        assert res.exit_code == 2 and "Traceback" not in res.stderr
        assert str(path) in res.stderr and f"no node named {typo!r}" in res.stderr
        assert f"did you mean {known!r}" in res.stderr or f"{known!r}" in res.stderr.split("did you mean")[1]


def test_no_suggestion_for_a_name_like_no_node() -> None:
    res = _explain(str(SAMPLES / "apbt.yaml"), "n0", "completely_unrelated")
    assert res.exit_code == 2 and "did you mean" not in res.stderr and "(3 nodes)" in res.stderr


def test_the_same_node_twice_is_an_error() -> None:
    for node in ("n0", "n1"):
        res = _explain(str(SAMPLES / "apbt.yaml"), node, node)
        assert res.exit_code == 2 and "two different nodes" in res.stderr and "share kernel" not in res.output


def test_json_is_versioned() -> None:
    doc = json.loads(_explain(str(SAMPLES / "apbt.yaml"), "n1", "n2", "--format", "json").output)
    assert doc["format"] == "fuseopt-explain/1" and doc["graph"] == "apbt" and doc["fused"] is True


def test_jobs_give_the_same_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--jobs 2` on a capped graph of PARALLEL_MIN_NODES nodes plans in two processes and answers
    as `--jobs 1` does, for a fused pair and a refused one."""
    from fuseopt.passes import packing, speculate
    from tests.fixtures.graphgen import FAMILIES

    started: list[int] = []
    real = speculate.Forked.start
    monkeypatch.setattr(speculate.Forked, "start", staticmethod(lambda work: started.append(1) or real(work)))

    path = tmp_path / "g.json"
    path.write_text(json.dumps(FAMILIES["transposed"](packing.PARALLEL_MIN_NODES, 5, 8, 16)))
    g = load_graph(path)
    first, last = g.nodes[0].name, g.nodes[-1].name
    for a, b in ((first, g.nodes[1].name), (first, last)):
        out = {
            jobs: _explain(str(path), a, b, "--format", "json", "--jobs", jobs).output for jobs in ("1", "2")
        }
        assert out["1"] == out["2"] and json.loads(out["1"])["format"] == "fuseopt-explain/1"
    assert len(started) == 2  # a child for each --jobs 2
