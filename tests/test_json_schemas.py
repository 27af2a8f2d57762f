"""Every command's `--format json` output is versioned (`format`) and valid against its JSON Schema
in schemas/ (checked on real output: samples, a divergent and a nondeterministic plan, an invalid
graph, a CI run with findings)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from fuseopt.cli.main import _register, cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SCHEMAS = ROOT / "schemas"

# command -> its schema (capture writes a graph)
SCHEMA_OF = {
    "optimize": "plan",
    "explain": "explain",
    "run": "run",
    "validate": "validate",
    "diff-jit-aot": "diff",
    "check-determinism": "determinism",
    "ci": "ci",
    "reduce": "reduce",
    "targets": "targets",
    "bench": "bench",
}
NOT_HERE: set[str] = set()


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _json(*args: str, codes: tuple[int, ...] = (0,)) -> dict[str, object]:
    _register()
    res = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert res.exit_code in codes, (args, res.output, res.stderr)
    doc: dict[str, object] = json.loads(res.output)
    return doc


def test_every_json_command_has_a_schema() -> None:
    _register()
    with_json = sorted(
        name
        for name, cmd in cli.commands.items()
        if any(
            isinstance(p, click.Option) and "--format" in p.opts and "json" in getattr(p.type, "choices", ())
            for p in cmd.params
        )
    )
    assert sorted(set(with_json) - NOT_HERE) == sorted(SCHEMA_OF)
    for name in SCHEMA_OF.values():
        assert _validator(name).schema["properties"]["format"]["const"].startswith("fuseopt-")


CASES = [
    ("optimize", [str(SAMPLES / "apbt.yaml")], (0,)),
    ("optimize", [str(SAMPLES / "jit_aot.yaml"), "--scoring", "inductor"], (0,)),
    ("optimize", [str(SAMPLES / "layernorm_t.yaml"), "--no-loop-order"], (0,)),
    ("explain", [str(SAMPLES / "apbt.yaml"), "n1", "n2"], (0,)),
    ("explain", [str(SAMPLES / "apbt.yaml"), "n1", "n2", "--no-loop-order"], (0,)),
    ("run", [str(SAMPLES / "jit_aot.yaml")], (0,)),
    ("run", [str(SAMPLES / "avgpool_cl_small.yaml"), "--backend", "triton"], (0,)),
    (
        "validate",
        [str(SAMPLES / "apbt.yaml"), str(ROOT / "tests" / "bad_inputs" / "addmm_bias_broadcast.yaml")],
        (2,),
    ),
    ("diff-jit-aot", [str(SAMPLES / "jit_aot.yaml")], (0,)),
    ("diff-jit-aot", [str(SAMPLES / "jit_aot.yaml"), "--scoring", "inductor"], (1,)),
    ("check-determinism", [str(SAMPLES / "apbt.yaml"), "--permutations", "2", "--processes", "0"], (0,)),
    (
        "check-determinism",
        [str(SAMPLES / "jit_aot.yaml"), "--scoring", "inductor", "--permutations", "3", "--processes", "0"],
        (1,),
    ),
    ("ci", [str(SAMPLES / "apbt.yaml"), "--jobs", "1"], (0,)),
    ("ci", [str(SAMPLES / "jit_aot.yaml"), "--jobs", "1", "--scoring", "inductor"], (1,)),
    ("targets", [], (0,)),
    ("targets", ["a100", "--detect"], (0,)),
    ("bench", [str(SAMPLES / "avgpool_cl_small.yaml"), "--interpret"], (0,)),
]


@pytest.mark.parametrize(
    ("command", "args", "codes"), CASES, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CASES)]
)
def test_real_output_is_valid(command: str, args: list[str], codes: tuple[int, ...]) -> None:
    doc = _json(command, *args, codes=codes)
    errors = sorted(_validator(SCHEMA_OF[command]).iter_errors(doc), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


def test_reduce_output_is_valid(tmp_path: Path) -> None:
    doc = _json(
        "reduce", str(SAMPLES / "jit_aot.yaml"), "--until", "diverges", "--scoring", "inductor",
        "-o", str(tmp_path / "small.yaml"),
    )  # fmt: skip
    assert not list(_validator("reduce").iter_errors(doc))


def test_a_schema_rejects_a_wrong_document() -> None:
    """The schemas say something: a plan without its format, or with a string for bytes, fails."""
    doc = _json("optimize", str(SAMPLES / "apbt.yaml"))
    v = _validator("plan")
    assert v.is_valid(doc)
    assert not v.is_valid({k: x for k, x in doc.items() if k != "format"})
    kernels = [dict(k, bytes="many") for k in doc["kernels"]]  # type: ignore[attr-defined]
    assert not v.is_valid({**doc, "kernels": kernels})
    assert not v.is_valid({**doc, "format": "fuseopt-plan/0"})


def test_bench_results_timed_on_a_gpu_are_valid() -> None:
    """bench's timed fields, from a GPU run: the suite's results are `bench_graph`'s, as
    `fuseopt bench` reports them (less the suite's own keys, plus the baseline it names)."""
    suite = json.loads((ROOT / "benchmarks" / "results" / "suite-2026-12-05-h200-gputime.json").read_text())
    own = {"workload", "sizes", "wall_s", "summary"}
    results = [
        {**{k: v for k, v in r.items() if k not in own}, "baseline": "source", "source": "suite.py:fn"}
        for r in suite["results"]
    ]
    assert any(v["ms"] for r in results for v in r["variants"])  # timed, not interpreted
    doc = {"format": "fuseopt-bench/1", "device": suite["device"], "torch": suite["torch"]}
    copy = suite["copy_gbps"]  # the suite's two device calls measured one each
    doc |= {"copy_gbps": copy[0] if isinstance(copy, list) else copy, "results": results}
    errors = sorted(_validator("bench").iter_errors(doc), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    results[0]["variants"][0]["ms"] = "0.1 ms"
    assert list(_validator("bench").iter_errors(doc))
