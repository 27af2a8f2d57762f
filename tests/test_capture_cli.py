"""`fuseopt capture FILE.py:FUNCTION`: writes the graph only on success; optimize shows Inductor's line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_graph

PROGRAM = """\
import torch

def scale_sum(x, y):
    return (x * 2 + y).sum(-1)

def noisy(x):
    return torch.rand_like(x) + x

def matmul(a, b):
    return a @ b

def make_model():
    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.LayerNorm(4))
"""


def _invoke(*args: str) -> Result:
    _register()
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prog") / "prog.py"
    path.write_text(PROGRAM)
    return path


@pytest.fixture(scope="module")
def captured(program: Path) -> tuple[Result, Path]:
    out = program.parent / "out" / "scale_sum.yaml"
    res = _invoke(
        "capture", f"{program}:scale_sum", "--input", "float32[64,32]", "--input", "float32[64,32]",
        "--layout", "contiguous", "--layout", "transposed", "-o", str(out),
    )  # fmt: skip
    return res, out


def test_capture_writes_the_graph(captured: tuple[Result, Path], program: Path) -> None:
    res, out = captured
    assert res.exit_code == 0, res.output
    assert "captured scale_sum" in res.output and "Inductor: 1 kernels" in res.output
    g = load_graph(out)
    assert g.buffer("y").stride == (1, 64)
    src = g.meta["source"]
    assert src["function"] == "scale_sum" and src["file"] == str(program)
    assert src["inputs"] == ["float32[64,32]", "float32[64,32]"]
    assert src["layouts"] == ["contiguous", "transposed"] and src["seed"] == 0
    assert g.meta["inductor"]["kernel_count"] == 1
    plain = out.parent / "plain.txt"
    plain.write_text("")
    assert out.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777, "the umask's mode, not 0600"
    assert sorted(p.name for p in out.parent.iterdir()) == ["plain.txt", "scale_sum.yaml"]


def test_optimize_prints_the_inductor_line(captured: tuple[Result, Path]) -> None:
    _, out = captured
    g = load_graph(out)
    ind = g.meta["inductor"]
    res = _invoke("optimize", str(out))
    assert res.exit_code == 0, res.output
    assert (
        f"Inductor: {ind['kernel_count']} kernels, {ind['num_bytes_accessed']} bytes; fuseopt: 1,"
        in res.output
    )


def test_json_output(program: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    res = _invoke(
        "capture",
        f"{program}:scale_sum",
        "--input",
        "float32[8,4]",
        "--input",
        "float32[8,4]",
        "-o",
        str(out),
    )
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("{") and load_graph(out).name == "scale_sum"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{prog}:noisy", "--input", "float32[8]"], "random operator"),
        (["{prog}:matmul", "--input", "float32[4,8]", "--input", "float32[4,8]"],
         r"could not capture the program: a and b must have same reduction dim.*matmul: return a @ b"),
        (["{prog}:scale_sum", "--module"], r"scale_sum\(\) failed: TypeError"),
        (["{prog}:scale_sum", "--input", "float33[8]"], "unknown dtype 'float33'"),
        (["{prog}:scale_sum", "--input", "float32[8]", "--layout", "transposed"], "transposed needs at least 2"),
        (["{prog}:scale_sum", "--input", "float32[8]", "--layout", "contiguous", "--layout", "contiguous"],
         "2 --layout options for 1 --input"),
        (["{prog}:no_such_function", "--input", "float32[8]"], "has no attribute 'no_such_function'"),
        (["{dir}/missing.py:f"], "no such file"),
        (["{prog}", "--input", "float32[8]"], "expected FILE.py:FUNCTION"),
        (["{broken}:f"], "running .*broken.py failed: ZeroDivisionError"),
        (["{prog}:scale_sum", "--input", "float32[8]"], "torch.compile could not capture"),
        (["{prog}:matmul", "--input", "float32[4,8]", "--input", "float32[8,4]", "--name", "m:bf16"],
         r"graph name 'm:bf16' is not a name: it must match"),
    ],
)  # fmt: skip
def test_failures_write_nothing(program: Path, tmp_path: Path, args: list[str], message: str) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1 / 0\n")
    out = tmp_path / "never.yaml"
    keep = tmp_path / "kept.yaml"
    keep.write_text("untouched")
    fill = {"prog": str(program), "dir": str(tmp_path), "broken": str(broken)}
    for target in (out, keep):
        res = _invoke("capture", *[a.format(**fill) for a in args], "-o", str(target))
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output
        assert re.search(message, res.output), res.output
    assert not out.exists()
    assert keep.read_text() == "untouched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py", "kept.yaml"]


def test_module_factory_is_captured_with_its_weights(program: Path, tmp_path: Path) -> None:
    """`--module`: FUNCTION() after seeding torch returns the module; its parameters are input
    buffers named after their paths, and meta.capture.call says how to call it again."""
    import torch

    out = tmp_path / "model.json"
    res = _invoke("capture", f"{program}:make_model", "--module", "--input", "float32[2,8]", "-o", str(out))
    assert res.exit_code == 0, res.output
    g = load_graph(out)
    call = g.meta["capture"]["call"]
    assert call["module"] == "Sequential" and call["args"] == ["input"]
    assert call["parameters"] == {"p_0_weight": "0.weight", "p_0_bias": "0.bias", "p_2_weight": "2.weight",
                                  "p_2_bias": "2.bias"}  # fmt: skip
    assert g.meta["source"]["module_factory"] is True and g.name == "Sequential"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.LayerNorm(4))
    # mm reads the weight transposed: the buffer is declared as that view of the same storage
    w = g.buffer("p_0_weight")
    assert w.storage_size == model[0].weight.numel() and sorted(w.shape) == sorted(model[0].weight.shape)


def test_help_says_the_program_is_executed() -> None:
    res = _invoke("capture", "--help")
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert "runs FILE.py" in text and "trust" in text
    assert "--layout" in text and "channels_last" in text
