"""Differential test: random valid graphs (tests/strategies.py, `differential_docs`) planned under
each command-line option set, compiled to Triton, run (TRITON_INTERPRET=1 on the CPU) and compared
with the reference interpreter -- and the planned (transformed) graph's reference with the graph's
own, so a loop transformation that changes meaning fails too.

Every run draws new graphs (derandomize=False); FUSEOPT_DIFFERENTIAL_EXAMPLES (default 200) sets
how many. Option sets that give the same module are run once. A failure prints the shrunk graph as
YAML: save it as a test case. The sweep is marked slow (the quick command skips it, CI runs it).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, note, settings

from fuseopt.codegen import emit_module
from fuseopt.interp import make_inputs, run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime import compare_with_reference
from fuseopt.runtime.compare import compare_buffer, value_tolerances
from tests.strategies import differential_docs

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

EXAMPLES = int(os.environ.get("FUSEOPT_DIFFERENTIAL_EXAMPLES", "200"))
# The planning options of `fuseopt optimize`, as fuseopt.cli.options.options_from maps them.
OPTION_SETS: dict[str, Options] = {
    "default": Options(),
    "--no-loop-order": Options(loop_order=False),
    "--scoring inductor": Options(scoring="inductor"),
    "--max-fusion-size 2": Options(max_fusion_size=2),
}


class _Dumper(yaml.SafeDumper):
    """Quotes a string that fuseopt's YAML reader would take for a number (a value `1e-3`)."""


def _str(dumper: yaml.SafeDumper, s: str) -> yaml.ScalarNode:
    try:
        float(s)
    except ValueError:
        return dumper.represent_str(s)
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="'")


_Dumper.add_representer(str, _str)


def as_yaml(doc: dict[str, Any]) -> str:
    # Through JSON first: plain dicts and lists, so the dump has no tags.
    plain = json.loads(json.dumps(doc))
    return yaml.dump(plain, Dumper=_Dumper, sort_keys=False, width=110, default_flow_style=None)


def same_meaning(original: Graph, planned: Graph) -> None:
    """The planned graph's reference outputs are the original's (on the original's inputs)."""
    inputs = make_inputs(original)
    want = run_graph(original, {k: v.clone() for k, v in inputs.items()})
    got = run_graph(planned, {k: v.clone() for k, v in inputs.items()})
    for b in original.outputs:
        rtol, atol = value_tolerances(original, b)
        m = compare_buffer(b, got[b.name], want[b.name], rtol=rtol, atol=atol)
        assert m is None, f"the planned graph's reference differs from the graph's: {m.message()}"


@pytest.mark.slow  # 200 graphs, ~400 distinct modules: about 100 s of one core
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(differential_docs())
def test_generated_code_matches_the_reference(doc: dict[str, Any]) -> None:
    text = as_yaml(doc)
    note(f"the graph, as YAML (save it as a test case):\n{text}")
    graph = load_text(text, "differential.yaml")  # the very text a failure prints
    checked: dict[str, str] = {}  # module source -> the option set that ran it
    for label, opts in OPTION_SETS.items():
        try:
            stage = optimize(graph, opts)
            source = emit_module(stage.graph, stage.plan)
            if source in checked:  # same plan and code as another option set: same answer
                continue
            checked[source] = label
            same_meaning(graph, stage.graph)
            compare_with_reference(stage.graph, stage.plan, source=source)
        except Exception as exc:
            raise AssertionError(f"options {label}: {type(exc).__name__}: {exc}") from exc


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(differential_docs())
def test_differential_graphs_are_valid_as_drawn(doc: dict[str, Any]) -> None:
    """The strategy is valid by construction (indices in bounds, every store writes its buffer
    whole, once): the loader accepts every graph, as JSON and as the YAML a failure prints."""
    text = as_yaml(doc)
    assert load_text(text, "differential.yaml") == load_text(json.dumps(doc), "differential.json")


@pytest.mark.parametrize("value", ["1e-3", "3", "-1.5", "inf", "nan", "true", "~flag[i0]", "-(x[i0])"])
def test_printed_yaml_keeps_every_value_a_string(value: str) -> None:
    """A failure's YAML must load as the graph that failed: a value that reads as a number or a
    bool in YAML (`1e-3`) is quoted."""
    doc = {
        "format": "fuseopt-graph/1",
        "name": "literal",
        "buffers": {
            "x": {"shape": [2], "dtype": "float32", "role": "input"},
            "flag": {"shape": [2], "dtype": "bool", "role": "input"},
            "out": {"shape": [2], "dtype": "float32", "role": "output"},
        },
        "nodes": [{"name": "n0", "loops": [["i0", 2]], "store": "out[i0]", "value": value}],
    }
    assert load_text(as_yaml(doc), "literal.yaml") == load_text(json.dumps(doc), "literal.json")
