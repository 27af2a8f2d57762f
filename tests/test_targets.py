"""GPU targets (fuseopt/targets/): the registry, detection from device properties, every field
documented and frozen, the H200's every tuned constant with a why and a results file, and the
hardware reaching the generated launches (multiprocessors, clusters, the grid's limit)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from click.testing import CliRunner

from fuseopt.cli.main import _register, cli
from fuseopt.codegen import CodegenOptions, emit_module
from fuseopt.codegen.options import TUNING_OVERRIDES
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.targets import A100, DEFAULT, H100, H200, Target, Tuning, detect, from_properties, get, names
from fuseopt.targets.base import Tuned, doc, tuned
from tests.fixtures.workloads import FULL, WORKLOADS

ROOT = Path(__file__).resolve().parent.parent


def _props(name: str, sms: int, cc: tuple[int, int], **more: object) -> SimpleNamespace:
    """What `torch.cuda.get_device_properties` returns, as far as `from_properties` reads it."""
    return SimpleNamespace(name=name, multi_processor_count=sms, major=cc[0], minor=cc[1], **more)


def _launches(name: str, options: CodegenOptions) -> list[tuple[str, str]]:
    """(kernel, grid) of every fixed launch of a full-size workload's module."""
    doc_, _ = WORKLOADS[name](**FULL[name])
    st = optimize(load_text(json.dumps(doc_), f"{name}.json"))
    src = emit_module(st.graph, st.plan, options=options)
    return re.findall(r"(\w+)\[(\([0-9, ]*\))\]\(", src)


def test_registry() -> None:
    assert names() == sorted(names()) and {"h200", "h100", "a100"} <= set(names())
    assert all(get(n).name == n for n in names())
    assert DEFAULT is H200 is get("h200")
    with pytest.raises(KeyError, match="known: a100, h100, h200"):
        get("b200")


def test_targets_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        H200.multiprocessors = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        H200.tuning.max_xblock = 1  # type: ignore[misc]
    assert hash(H200) == hash(dataclasses.replace(H200))  # usable in frozen options


def test_every_field_is_documented() -> None:
    for cls in (Target, Tuning):
        for f in dataclasses.fields(cls):
            assert len(doc(cls, f.name)) > 10, f"{cls.__name__}.{f.name}"


def test_the_h200_gives_every_tuned_constant_a_why_and_a_results_file() -> None:
    constants = [f.name for f in dataclasses.fields(Tuning)]
    assert [name for name, _ in H200.provenance] == constants  # each once, in Tuning's order
    for name, why in H200.provenance:
        assert why.measured_on == "h200", name
        assert why.why and "\n" not in why.why, name
        path = why.results.removesuffix(" (history)")
        assert path.startswith("benchmarks/results/") and (ROOT / path).is_file(), (name, why.results)
    # the file itself lists each constant once, as `name=(value, why, results)`
    text = (ROOT / "fuseopt" / "targets" / "h200.py").read_text(encoding="utf-8")
    assert sorted(re.findall(r"^    (\w+)=\($", text, re.M)) == sorted(constants)


def test_other_targets_inherit_the_h200_tuning_and_say_so() -> None:
    for t in (H100, A100):
        assert t.tuning == H200.tuning
        for name, why in t.provenance:
            assert why.measured_on == "h200" and "not measured on this GPU" in why.why, (t.name, name)
            assert why.results == H200.why(name).results
    assert (A100.multiprocessors, A100.clusters, A100.programmatic_dependent_launch) == (108, False, False)
    assert H100.clusters and H100.l2_bytes < H200.l2_bytes


def test_a_tuning_table_is_checked() -> None:
    table = {name: (getattr(H200.tuning, name), w.why, w.results) for name, w in H200.provenance}
    tuning, provenance = tuned("h200", **table)
    assert tuning == H200.tuning and provenance == H200.provenance
    with pytest.raises(ValueError, match="missing"):
        tuned("x", **{k: v for k, v in table.items() if k != "max_warps"})
    with pytest.raises(ValueError, match="not a tuned constant"):
        tuned("x", **table, max_cheese=(1, "why", "file"))
    with pytest.raises(ValueError, match="expected"):
        tuned("x", **{**table, "max_warps": (8.0, "why", "file")})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="every tuned constant once"):
        dataclasses.replace(H200, provenance=H200.provenance[1:])
    with pytest.raises(ValueError, match="threads a program"):
        dataclasses.replace(H200, max_threads_per_block=128)


def test_detect_maps_device_properties_to_a_target(monkeypatch: pytest.MonkeyPatch) -> None:
    assert from_properties(_props("NVIDIA H200", 132, (9, 0))) is H200
    assert from_properties(_props("NVIDIA A100-SXM4-80GB", 108, (8, 0))) is A100
    assert from_properties(_props("NVIDIA H100 80GB HBM3", 132, (9, 0))) is H100
    # An H100 PCIe (114 multiprocessors) is not the H100 SXM5 target: its own facts, H200 tuning.
    pcie = from_properties(
        _props(
            "NVIDIA H100 PCIe",
            114,
            (9, 0),
            L2_cache_size=52428800,
            warp_size=32,
            regs_per_multiprocessor=65536,
            memory_clock_rate=1593000,  # kHz: HBM2e at 1593 MHz on a 5120-bit bus
            memory_bus_width=5120,
        )
    )
    assert pcie.memory_bandwidth_gbps == 2039  # 2 x 1593 MHz x 640 bytes
    assert (pcie.name, pcie.multiprocessors, pcie.l2_bytes, pcie.clusters) == (
        "nvidia-h100-pcie",
        114,
        52428800,
        True,
    )
    assert pcie.tuning == H200.tuning and all(w.measured_on == "h200" for _, w in pcie.provenance)
    ampere = from_properties(_props("NVIDIA GeForce RTX 3090", 82, (8, 6)))
    assert not ampere.clusters and not ampere.programmatic_dependent_launch
    assert ampere.memory_bandwidth_gbps == H200.memory_bandwidth_gbps  # not reported: the default's
    rocm = from_properties(_props("AMD Instinct MI300X", 304, (9, 4), warp_size=64), hip=True)
    assert rocm.warp_size == 64 and not rocm.clusters and not rocm.programmatic_dependent_launch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda device: _props("NVIDIA A100-PCIE-40GB", 108, (8, 0))
    )
    assert detect() is A100


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_detect_without_a_gpu_is_none() -> None:
    assert detect() is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_detect_on_a_gpu() -> None:
    props = torch.cuda.get_device_properties(0)
    found = detect()
    assert found is not None and found.multiprocessors == props.multi_processor_count
    assert found.compute_capability == (props.major, props.minor)
    if "H200" in props.name:  # the facts of the H200 file are the device's
        assert found is H200 and H200.l2_bytes == props.L2_cache_size
        assert H200.registers_per_multiprocessor == props.regs_per_multiprocessor
        assert H200.shared_memory_per_block == props.shared_memory_per_block_optin
        assert H200.shared_memory_per_multiprocessor == props.shared_memory_per_multiprocessor


def test_importing_targets_imports_neither_torch_nor_the_code_generator() -> None:
    code = "import sys, fuseopt.targets; assert not {'torch', 'fuseopt.codegen'} & set(sys.modules), sys.modules.keys()"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_options_apply_overrides_to_the_target() -> None:
    assert CodegenOptions().gpu is H200
    assert set(TUNING_OVERRIDES) <= {f.name for f in dataclasses.fields(Tuning)}
    o = CodegenOptions(target=A100, max_xblock=8, multiprocessors=64)
    assert (o.tuning.max_xblock, o.gpu.multiprocessors, o.gpu.max_cluster_size) == (8, 64, 1)
    assert o.tuning.max_yblock == A100.tuning.max_yblock  # the rest is the target's
    moved = dataclasses.replace(o, target=H200)
    assert (moved.tuning.max_xblock, moved.gpu.multiprocessors, moved.gpu.max_cluster_size) == (8, 64, 8)
    assert CodegenOptions(target=A100).split_target == 16 * 108
    assert (
        not CodegenOptions(target=A100).use_clusters
        and CodegenOptions(target=A100, clusters=True).use_clusters
    )


def test_fewer_multiprocessors_give_fewer_split_programs() -> None:
    """three_layouts_mean's split reduction: 16 programs a multiprocessor, its finishing kernel
    about one: on an A100's 108 the chunks halve (256 x 8 instead of 256 x 16 programs), as with
    --multiprocessors 108 on the H200."""
    h200 = _launches("three_layouts_mean", CodegenOptions())
    a100 = _launches("three_layouts_mean", CodegenOptions(target=A100))
    assert [g for _, g in h200] == ["(256, 16)", "(128,)"]
    assert [g for _, g in a100] == ["(256, 8)", "(64,)"]
    assert a100 == _launches("three_layouts_mean", CodegenOptions(multiprocessors=108, clusters=False))


def test_clusters_only_for_targets_that_have_them() -> None:
    """layernorm_t's transposed persistent reduction launches as a cluster of two on Hopper (with
    its single-program fallback chosen at run time); an A100 gets the single launch alone."""
    assert len(_launches("layernorm_t", CodegenOptions())) == 2
    assert len(_launches("layernorm_t", CodegenOptions(target=H100))) == 2
    assert len(_launches("layernorm_t", CodegenOptions(target=A100))) == 1


def _cli(*args: str) -> tuple[int, str]:
    _register()
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def test_optimize_and_targets_commands(tmp_path: Path) -> None:
    doc_, _ = WORKLOADS["three_layouts_mean"](**FULL["three_layouts_mean"])
    path = tmp_path / "tlm.json"
    path.write_text(json.dumps(doc_), encoding="utf-8")
    grids = {}
    for args in ((), ("--target", "a100"), ("--target", "a100", "--multiprocessors", "132")):
        out = tmp_path / "-".join(args or ("default",))
        code, text = _cli("optimize", str(path), "-o", str(out), *args)
        assert code == 0, text
        grids[args] = re.findall(r"\w+\[(\([0-9, ]*\))\]\(", (out / "kernels.py").read_text(encoding="utf-8"))
    assert grids[()] == grids[("--target", "a100", "--multiprocessors", "132")] == ["(256, 16)", "(128,)"]
    assert grids[("--target", "a100")] == ["(256, 8)", "(64,)"]
    code, text = _cli("optimize", str(path), "--target", "b200")
    assert code == 2 and "b200" in text

    code, text = _cli("targets")
    assert code == 0 and all(n in text for n in names())
    code, text = _cli("targets", "h200", "--format", "json")
    report = json.loads(text)
    assert report["format"] == "fuseopt-targets/1" and report["default"] == "h200"
    (t,) = report["targets"]
    assert t["multiprocessors"] == 132 and set(t["tuning"]) == {f.name for f in dataclasses.fields(Tuning)}
    assert all(
        Tuned(**{k: v for k, v in c.items() if k != "value"}) == H200.why(n) for n, c in t["tuning"].items()
    )


def test_codegen_holds_no_measurements() -> None:
    """Timings and measured percentages live in the target files and benchmarks/results, not in
    the code generator's comments."""
    measured = re.compile(r"\d ms\b|\d% of copy|\bon an H200\b|\(H200", re.I)
    offenders = [
        f"{p.name}:{i}"
        for p in sorted((ROOT / "fuseopt" / "codegen").glob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if measured.search(line)
    ]
    assert not offenders, offenders
