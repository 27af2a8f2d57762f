"""schemas/graph.schema.json is generated from the pydantic models and must stay in sync; the samples
(and the structurally broken corpus files) agree with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fuseopt.cli.main import _register, cli
from fuseopt.cli.schema_cmd import graph_schema_text
from fuseopt.io.load import parse_text

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / "schemas" / "graph.schema.json"
SAMPLES = sorted((ROOT / "samples").rglob("*.yaml")) + sorted((ROOT / "samples").rglob("*.json"))
REGENERATE = "fuseopt schema > schemas/graph.schema.json"


def test_committed_schema_is_current() -> None:
    committed = SCHEMA_FILE.read_text() if SCHEMA_FILE.exists() else ""
    assert committed == graph_schema_text(), (
        f"schemas/graph.schema.json is stale: the models changed. Regenerate it with\n    {REGENERATE}\n"
        "and commit the result."
    )


def test_schema_command_prints_the_same_text() -> None:
    _register()
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    assert result.stdout == graph_schema_text()
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["format"]["const"] == "fuseopt-graph/1"


def _validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")  # optional: not a dependency of fuseopt
    schema = json.loads(SCHEMA_FILE.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_samples_match_the_schema(path: Path) -> None:
    validator = _validator()
    data = parse_text(path.read_text(), str(path))
    problems = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(data)
    ]
    assert not problems, problems


@pytest.mark.parametrize(
    "name",
    [
        "unknown_field.yaml",
        "bad_kind.yaml",
        "too_many_loops.yaml",
        "loop_size_2_31.json",
        "loop_size_zero.yaml",
        "shape_2_63.yaml",
        "wrong_format.yaml",
        "unknown_dtype.yaml",
        "missing_value.yaml",
        "reduce_on_pointwise.yaml",
        "inject_node_name.json",
        "inject_loop_variable.yaml",
        "template_negative_time.yaml",
    ],
)
def test_structural_errors_are_schema_errors_too(name: str) -> None:
    validator = _validator()
    path = ROOT / "tests" / "bad_inputs" / name
    assert list(validator.iter_errors(parse_text(path.read_text(), str(path))))
