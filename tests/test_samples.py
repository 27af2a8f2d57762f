"""Every sample graph validates, and the reference interpreter computes what its torch program does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from fuseopt.interp import logical_outputs, run_graph
from fuseopt.io.load import load_graph
from tests.torch_programs import PROGRAMS, expected_outputs

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
FILES = sorted(SAMPLES.rglob("*.yaml"))
CASES = ("apbt_realize", "sum_and_t", "pw_outer_red", "pw_outer_red_2", "view", "outer_sum_plus_pw",
         "rms_reshape", "floordiv_broadcast", "cast_and_t")  # fmt: skip
TOP = ("apbt", "avgpool_cl", "avgpool_cl_small", "layernorm_t", "softmax_bias_t", "three_layouts_mean",
       "jit_aot", "extern_mm")  # fmt: skip


def _prefixed(where: str) -> Callable[[str], str]:
    return lambda message: f"{where}: {message}"


def _id(p: Path) -> str:
    return str(p.relative_to(SAMPLES))


def test_the_sample_set_is_complete() -> None:
    names = {_id(p) for p in FILES}
    assert {f"{n}.yaml" for n in TOP} <= names
    assert {f"cases/{n}.yaml" for n in CASES} <= names


# avgpool_cl at its full size is the slowest run of the samples; avgpool_cl_small stays quick.
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if _id(p) == "avgpool_cl.yaml" else p for p in FILES],
    ids=_id,
)
def test_sample_matches_torch(path: Path) -> None:
    g = load_graph(path)
    assert g.name == path.stem, "a sample's file is named after its graph"
    assert g.description and "torch" in g.description, "the description holds the torch program"
    assert g.name in PROGRAMS, f"tests/torch_programs.py has no program for {g.name}"
    storages = run_graph(g, seed=0)
    got = logical_outputs(g, storages)
    want = expected_outputs(g, storages)
    assert list(got) == list(want)
    for name, tensor in got.items():
        assert tensor.dtype == want[name].dtype, name
        torch.testing.assert_close(tensor, want[name], msg=_prefixed(f"{g.name}/{name}"))


def test_jit_aot_tie_structure() -> None:
    """The divergence of docs/cases.md needs buf3 to be the template and buf0/buf2/buf4 to read x alike."""
    g = load_graph(SAMPLES / "jit_aot.yaml")
    assert [b.name for b in g.buffers if b.role != "input"] == ["buf0", "buf1", "buf2", "buf3", "buf4"]
    kinds = {n.name: n.kind for n in g.nodes}
    assert kinds["buf3"] == "template"
    assert [kinds[n] for n in ("buf0", "buf2", "buf4")] == ["pointwise"] * 3
