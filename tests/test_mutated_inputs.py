"""Mutated graph files: whatever a file says, a command ends with a documented exit code, an
error that names the file where the input is bad, and no traceback. Samples and golden kernel
graphs are mutated at random (a number replaced, a token inserted, a span deleted, a dtype or op
swapped) and given to `validate`, `optimize` (with a random strategy, target or option),
`diff-jit-aot`, and, for small ones, `run --backend triton`, which runs the reference first."""

from __future__ import annotations

import glob
import os
import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuseopt.cli.main import _register, cli
from fuseopt.codegen.options import STRATEGY_NAMES
from fuseopt.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_OK
from tests.planning import ROOT
from tests.sweeps import examples

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

SEEDS = sorted(
    glob.glob(os.path.join(ROOT, "samples", "*.yaml"))
    + glob.glob(os.path.join(ROOT, "samples", "cases", "*.yaml"))
    + glob.glob(os.path.join(ROOT, "tests", "golden", "kernels", "*.json"))
)
SMALL = [p for p in SEEDS if "golden" in p and "full" not in p]
TOKENS = (
    "0",
    "-1",
    "2147483648",
    "inf",
    "nan",
    "0.5",
    "true",
    "x0",
    "r0",
    "//",
    "%",
    "*",
    "(",
    ")",
    "[",
    ",",
)
TOKENS += ("masked(", "where(", "cast(", "index(", "sum(", "argmax(", "float16", "int8", "bool", "min(")
SWAPS = ("float16", "int8", "bool", "uint8", "float64", "argmax", "prod", "any", "sigmoid")
NUMBERS = ("0", "1", "3", "7", "1024", "2147483647", "4294967296")
WORDS = re.compile(r"float32|float16|bfloat16|int32|int64|sum|max|min|exp|where|masked")


@st.composite
def mutated(
    draw: st.DrawFn, seeds: list[str], kinds: tuple[int, ...] = (0, 0, 0, 1, 2, 3, 3)
) -> tuple[str, str]:
    """(a seed's file name, its text with one to three random edits: 0 a number replaced, 1 a
    token inserted, 2 a span deleted, 3 a dtype or op swapped). Numbers and words, which keep
    the file well formed, are drawn most."""
    path = draw(st.sampled_from(seeds))
    text = Path(path).read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(kinds))
        at = draw(st.integers(0, max(0, len(text) - 1)))
        if kind == 0 and (nums := list(re.finditer(r"\b\d+\b", text))):
            m = draw(st.sampled_from(nums))
            text = text[: m.start()] + draw(st.sampled_from(NUMBERS)) + text[m.end() :]
        elif kind == 1:
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
        elif kind == 2:
            text = text[:at] + text[at + draw(st.integers(1, 4)) :]
        elif words := list(WORDS.finditer(text)):
            m = draw(st.sampled_from(words))
            text = text[: m.start()] + draw(st.sampled_from(SWAPS)) + text[m.end() :]
    return os.path.basename(path), text


def _invoke(args: list[str]) -> tuple[int, str]:
    _register()
    res = CliRunner().invoke(cli, args)
    crashed = res.exception is not None and not isinstance(res.exception, SystemExit)
    assert not crashed, f"{args}: {res.exception!r}"
    assert "Traceback" not in res.output, res.output[-2000:]
    return res.exit_code, res.output


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _settings(full: int, quick: int) -> settings:
    return settings(
        max_examples=examples(full, quick=quick),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


@_settings(400, 40)
@given(
    mutated(SEEDS),
    st.sampled_from([[], ["--target", "a100"], ["--autotune"], ["--no-loop-order"]]),
    st.data(),
)
def test_planning_commands_end_with_a_documented_code(
    tmp_path: Path, case: tuple[str, str], extra: list[str], data: st.DataObject
) -> None:
    name, text = case
    path = _write(tmp_path, name, text)
    code, out = _invoke(["validate", str(path)])
    assert code in (EXIT_OK, EXIT_BAD_INPUT)
    if code == EXIT_BAD_INPUT:
        assert name in out  # the error names the file (and where in it)
    strategy = data.draw(st.sampled_from([[], *(["--strategy", s] for s in STRATEGY_NAMES)]))
    out_dir = Path(tempfile.mkdtemp(dir=tmp_path)) / "out"  # one per example
    got, _ = _invoke(["optimize", str(path), "-o", str(out_dir), "--emit", "triton", *extra, *strategy])
    assert got == code  # what validates plans and emits; what does not is refused alike
    assert (out_dir / "kernels.py").exists() == (got == EXIT_OK)  # nothing written on an error
    got, _ = _invoke(["diff-jit-aot", str(path)])
    assert got in (EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT) and (got == EXIT_BAD_INPUT) == (
        code == EXIT_BAD_INPUT
    )


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="runs kernels in Triton's interpreter")
@_settings(60, 6)
@given(mutated(SMALL, kinds=(0, 3)))
def test_run_checks_generated_code_or_refuses_the_input(tmp_path: Path, case: tuple[str, str]) -> None:
    """A graph the reference refuses at run time is an input error before generated code runs (a
    mismatch, exit 1, is allowed: a mutated graph may be ill-conditioned, a layer norm of a
    variance that is not one)."""
    name, text = case
    path = _write(tmp_path, name, text)
    limits = ["--max-points", "3000000", "--max-memory", "64MiB"]
    code, out = _invoke(["run", str(path), "--backend", "triton", *limits])
    assert code in (EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT)
    if code == EXIT_BAD_INPUT:
        assert name in out
