"""`fuseopt run --backend triton` checks the generated code against the reference and says so.

A mismatch is made by a deliberately wrong module: the real emitted module, with a `call()` that
changes one element of one output after the real one ran (or drops an output). The verdict must
name that buffer, that element's index, both values and the tolerance, and exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuseopt.codegen as codegen
from fuseopt.cli.main import _register, cli

GRAPH = """\
format: fuseopt-graph/1
name: small_{dtype}
buffers:
  x:   {{shape: [{m}, {n}], dtype: {dtype}, role: input}}
  y:   {{shape: [{m}, {n}], stride: [1, {m}], dtype: {dtype}, role: input}}
  t:   {{shape: [{m}, {n}], dtype: {dtype}}}
  out: {{shape: [{m}, {n}], dtype: {dtype}, role: output}}
  s:   {{shape: [{m}], dtype: {acc}, role: output}}
nodes:
  - {{name: a, loops: [[i0, {m}], [i1, {n}]], store: 't[{n}*i0 + i1]', value: 'x[{n}*i0 + i1] * 2'}}
  - {{name: b, loops: [[i0, {m}], [i1, {n}]], store: 'out[{n}*i0 + i1]', value: 't[{n}*i0 + i1] + y[i0 + {m}*i1]'}}
  - {{name: r, loops: [[i0, {m}]], reduce: [[r0, {n}]], store: 's[i0]', value: 'sum(t[{n}*i0 + r0])'}}
"""


def _write(tmp: Path, m: int, n: int, dtype: str) -> Path:
    acc = "int64" if dtype.startswith("int") else dtype
    p = tmp / f"g_{m}_{n}_{dtype}.yaml"
    p.write_text(GRAPH.format(m=m, n=n, dtype=dtype, acc=acc))
    return p


def _run(*args: str) -> Result:
    _register()
    return CliRunner().invoke(cli, ["run", *args])


def _wrong_module(monkeypatch: pytest.MonkeyPatch, tail: str) -> None:
    """emit_module returns the real module with `tail` appended (it redefines call)."""
    real = codegen.emit_module

    def wrong(*args: object, **kwargs: object) -> str:
        return real(*args, **kwargs) + tail  # type: ignore[arg-type]

    monkeypatch.setattr(codegen, "emit_module", wrong)


def _corrupt(buffer: str, flat: int, delta: str) -> str:
    return f"""

_real_call = call


def call(inputs, intermediates=False):
    out = _real_call(inputs, intermediates=intermediates)
    out[{buffer!r}].view(-1)[{flat}] += {delta}
    return out
"""


@pytest.mark.parametrize(("m", "n", "dtype"), [(4, 8, "float32"), (3, 16, "float16"), (8, 4, "int32")])
def test_generated_code_matches(tmp_path: Path, m: int, n: int, dtype: str) -> None:
    g = _write(tmp_path, m, n, dtype)
    res = _run(str(g), "--backend", "triton")
    assert res.exit_code == 0, res.output
    assert "match: 2 outputs checked" in res.output and "MISMATCH" not in res.output
    doc = json.loads(_run(str(g), "--backend", "triton", "--format", "json").output)
    assert doc["format"] == "fuseopt-run/2" and doc["verdict"] == "match"
    assert [(c["buffer"], c["verdict"]) for c in doc["checks"]] == [("out", "match"), ("s", "match")]
    assert doc["options"]["scoring"] == "stable"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    m=st.integers(2, 6),
    n=st.integers(2, 6),
    dtype=st.sampled_from(["float32", "int64"]),
    which=st.sampled_from(["out", "s"]),
    data=st.data(),
)
def test_a_wrong_module_is_a_mismatch_at_its_first_wrong_element(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    m: int,
    n: int,
    dtype: str,
    which: str,
    data: st.DataObject,
) -> None:
    g = _write(tmp_path, m, n, dtype)
    numel = m * n if which == "out" else m
    flat = data.draw(st.integers(0, numel - 1))
    with monkeypatch.context() as mp:
        _wrong_module(mp, _corrupt(which, flat, "1000"))
        res = _run(str(g), "--backend", "triton", "--format", "json")
        text = _run(str(g), "--backend", "triton")
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    assert doc["verdict"] == "mismatch"
    bad = [c for c in doc["checks"] if c["verdict"] == "mismatch"]
    assert [c["buffer"] for c in bad] == [which]
    mm = bad[0]["mismatch"]
    index = [flat // n, flat % n] if which == "out" else [flat]
    assert mm["count"] == 1 and mm["first"]["index"] == index and mm["worst"]["index"] == index
    assert mm["first"]["got"] - mm["first"]["expected"] == pytest.approx(1000, rel=1e-3)
    if dtype == "float32":
        assert mm["rtol"] is not None and mm["atol"] is not None
        assert "rtol" in text.output
    else:
        assert mm["rtol"] is None and "exact" in text.output
    assert text.exit_code == 1 and "MISMATCH" in text.output and f"first at index {index}" in text.output


def test_a_missing_output_is_a_mismatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    g = _write(tmp_path, 4, 4, "float32")
    tail = """

_real_call = call


def call(inputs, intermediates=False):
    out = dict(_real_call(inputs, intermediates=intermediates))
    del out["s"]
    return out
"""
    _wrong_module(monkeypatch, tail)
    res = _run(str(g), "--backend", "triton")
    assert res.exit_code == 1 and "MISMATCH" in res.output and "did not return it" in res.output


def test_the_reference_backend_says_what_it_ran(tmp_path: Path) -> None:
    g = _write(tmp_path, 4, 8, "float32")
    res = _run(str(g))
    assert res.exit_code == 0 and "reference interpreter" in res.output and "match" not in res.output
    doc = json.loads(_run(str(g), "--format", "json").output)
    assert doc["verdict"] is None and doc["checks"] is None and "reference interpreter" in doc["ran"]
