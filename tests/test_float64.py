"""The float64 run that decides elements outside the tolerance (`fuseopt.runtime.float64`).

`(a + 1e8) - 1e8` in float32 rounds `a` to a multiple of 8: the reference is off by up to 4 from
the exact value, and so may generated code be, on the other side. Mirrored values (as close to the
exact value as the reference is) match; one wrong element among them still fails; without the
inputs (no float64 run) the tolerance alone decides.
"""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from fuseopt.cli.main import cli
from fuseopt.interp import run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Cast, walk
from fuseopt.ir.graph import ComputeNode, EnumArg, LibraryNode
from fuseopt.runtime.compare import check_outputs
from fuseopt.runtime.float64 import as_close_as_the_reference, promoted, run_float64

CANCELS = """format: fuseopt-graph/1
name: cancels
buffers:
  a: {shape: [64], dtype: float32, role: input}
  o: {shape: [64], dtype: float32, role: output}
nodes:
  - {name: n, loops: [[i, 64]], store: 'o[i]', value: '(a[i] + 100000000.0) - 100000000.0'}
"""


def _run(dtype: str = "float32") -> tuple[object, dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    g = load_text(CANCELS.replace("float32", dtype), "cancels.yaml")
    a = torch.randn(64, generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype)) * 3
    expected = run_graph(g, {"a": a.clone()})["o"]
    return g, {"a": a}, expected, a.double()


def test_mirrored_rounding_matches_and_one_wrong_element_fails() -> None:
    g, inputs, expected, exact = _run()
    assert (expected.double() - exact).abs().max() > 1  # the reference is off by more than a unit
    mirrored = (2 * exact - expected.double()).float()
    strict = check_outputs(g, {"o": mirrored}, {"o": expected})
    assert not strict[0].ok and strict[0].mismatch is not None and strict[0].mismatch.float64 is None
    (decided,) = check_outputs(g, {"o": mirrored}, {"o": expected}, inputs=inputs)
    assert decided.ok and decided.float64 == strict[0].mismatch.count
    assert decided.to_json()["float64_matched"] == decided.float64

    wrong = mirrored.clone()
    wrong[5] += 40.0
    (bad,) = check_outputs(g, {"o": wrong}, {"o": expected}, inputs=inputs)
    assert bad.mismatch is not None and bad.mismatch.count == 1 and bad.mismatch.index == (5,)
    assert bad.mismatch.float64 == 2.0 and "2x the reference" in bad.mismatch.message()


def test_sixteen_bit_floats_take_three_times_the_distance() -> None:
    got = torch.tensor([1.0 + 2.9, 1.0 + 3.1], dtype=torch.float16)
    expected = torch.tensor([0.0, 0.0], dtype=torch.float16)
    exact = torch.tensor([1.0, 1.0], dtype=torch.float64)
    assert as_close_as_the_reference(got, expected, exact, 0.0, 0.0).tolist() == [True, False]
    assert as_close_as_the_reference(got.float(), expected.float(), exact, 0.0, 0.0).tolist() == [
        False,
        False,
    ]


def test_promoted_widens_buffers_casts_and_call_dtypes() -> None:
    text = json.dumps(
        {
            "format": "fuseopt-graph/1",
            "name": "mixed",
            "buffers": {
                "x": {"shape": [4, 4], "dtype": "float16", "role": "input"},
                "i": {"shape": [4], "dtype": "int64", "role": "input"},
                "h": {"shape": [4, 4], "dtype": "bfloat16"},
                "c": {"shape": [4, 4], "dtype": "float32"},
                "o": {"shape": [4, 4], "dtype": "float32", "role": "output"},
            },
            "nodes": [
                {"name": "n0", "loops": [["p", 4], ["q", 4]], "store": "h[4*p + q]",
                 "value": "cast(cast(x[4*p + q], float32) * 2.0, bfloat16) + cast(i[p], float16)"},
                {"name": "n1", "kind": "extern", "op": "aten._to_copy.default",
                 "args": [{"buffer": "h"}], "kwargs": {"dtype": "float32"}, "outputs": ["c"]},
                {"name": "n2", "loops": [["p", 4], ["q", 4]], "store": "o[4*p + q]",
                 "value": "exp(c[4*p + q])"},
            ],
        }
    )  # fmt: skip
    g = load_text(text, "mixed.json")
    wide = promoted(g)
    assert {b.name: b.dtype for b in wide.buffers} == {
        "x": DType.float64, "i": DType.int64, "h": DType.float64, "c": DType.float64, "o": DType.float64
    }  # fmt: skip
    n0 = wide.nodes[0]
    assert isinstance(n0, ComputeNode)
    assert {e.to for e in walk(n0.value) if isinstance(e, Cast)} == {DType.float64}
    call = wide.nodes[1]
    assert isinstance(call, LibraryNode) and call.call is not None
    assert dict(call.call.kwargs)["dtype"] == EnumArg("dtype", "float64")
    x = torch.randn(16, dtype=torch.float16)
    out = run_float64(g, {"x": x, "i": torch.arange(4)})
    assert out is not None and out["o"].dtype == torch.float64
    want = torch.exp(x.double() * 2 + torch.arange(4).double().repeat_interleave(4))
    torch.testing.assert_close(out["o"], want)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_run_says_which_elements_a_float64_run_decided(
    fmt: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fuseopt run --backend triton` through a backend that returns the mirrored values."""
    import fuseopt.cli.run_cmd as run_cmd

    def mirrored(graph: object, inputs: dict[str, torch.Tensor], options: object) -> dict[str, torch.Tensor]:
        expected = run_graph(graph, {k: v.clone() for k, v in inputs.items()})  # type: ignore[arg-type]
        return {"o": (2 * inputs["a"].double() - expected["o"].double()).float()}

    monkeypatch.setitem(run_cmd.BACKENDS, "triton", mirrored)
    path = f"{tmp_path}/cancels.yaml"
    with open(path, "w") as f:
        f.write(CANCELS)
    result = CliRunner().invoke(cli, ["run", path, "--backend", "triton", "--format", fmt])
    assert result.exit_code == 0, result.output
    if fmt == "json":
        doc = json.loads(result.output)
        assert doc["verdict"] == "match" and doc["checks"][0]["float64_matched"] > 0
    else:
        assert "match*" in result.output and "as close to the graph run in float64" in result.output


def test_bench_checks_results_the_same_way() -> None:
    """`fuseopt bench` checks each variant (and eager, torch.compile) before timing it."""
    from fuseopt.bench.harness import _check_storages
    from fuseopt.errors import CheckFailed

    g, inputs, expected, exact = _run()
    mirrored = (2 * exact - expected.double()).float()
    _check_storages(g, {"o": mirrored}, {"o": expected}, inputs)
    mirrored[3] += 40.0
    with pytest.raises(CheckFailed, match="1 of 64 elements"):
        _check_storages(g, {"o": mirrored}, {"o": expected}, inputs)
