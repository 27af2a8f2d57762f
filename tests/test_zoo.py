"""The model zoo end to end (issue #22, section 3): every model of tests/zoo, small.

For each model: (a) the capture (API; the CLI for one model per family) validates; (b) the
reference interpreter's outputs equal the model's eager outputs (torch's default tolerances, bf16's
for the bf16 network); (c) `fuseopt run --backend triton` runs the whole graph through the
generated module (Triton kernels and library calls) and matches the reference; (d) fuseopt's
generated (non-extern) kernels and bytes moved are at most Inductor's on the same graph; and (e) in
the Inception network every branch pool is one kernel with its loops flattened, and `fuseopt
explain` gives the reason each pool does or does not fuse with each neighbour.

Each model is captured once per test module and process (a module-scoped cache), and (a)-(d) are
one test per model, so that pytest-xdist never captures a model in two workers for them. What runs
where: the quick suite checks (a)-(d) for one model per family (gpt2: decoders, with embedding
lookups and causal attention; vit: encoders, attention without a mask and a patch convolution;
resnet: CNNs) and (e); the rest of the zoo (llama, bert, convnext, inception's (a)-(d), the CLI
captures, the whole-model bench path) is marked slow. (c) runs on the GPU where there is one, else under the Triton
interpreter (tests/conftest.py sets TRITON_INTERPRET=1).
benchmarks/models.py writes the committed table (benchmarks/results/models-*.json).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fuseopt.capture import Capture, CaptureError, capture_program
from fuseopt.cli.main import _register, cli
from fuseopt.interp import run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.graph import ComputeNode, Graph
from fuseopt.ir.serialize import dump_json
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from tests.zoo import ZOO, ZooCase, build
from tests.zoo.measure import generated_kernels, inductor_generated_kernels, pool_nodes

_register()
ROOT = Path(__file__).resolve().parent.parent

FAST = ("resnet",)  # a CNN; transformer blocks are in tests/test_capture_models.py, whole ones in the sweeps


def _params(names: tuple[str, ...] = tuple(ZOO)) -> list[object]:
    return [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in names]


Captured = tuple[ZooCase, Capture]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Captured]]:
    """name -> (case, capture), captured once per module; the graph is also written to a file."""
    cache: dict[str, Captured | CaptureError] = {}
    files = tmp_path_factory.mktemp("zoo")

    def get(name: str) -> Captured:
        if name not in cache:
            case = build(name, "small")
            source = {
                "file": "tests/zoo/programs.py",
                "function": name,
                "inputs": list(case.specs),
                "layouts": list(case.layouts),
            }
            try:
                cap = capture_program(case.module, *case.inputs, name=name, source=source)
            except CaptureError as err:
                cache[name] = err
            else:
                (files / f"{name}.json").write_text(dump_json(cap.graph), encoding="utf-8")
                cache[name] = (case, cap)
        got = cache[name]
        if isinstance(got, CaptureError):
            raise got
        return got

    get.files = files  # type: ignore[attr-defined]
    yield get


def check_capture_validates(name: str, cap: Capture) -> None:
    """(a) The API's capture is a validated graph, and its file loads again as the same graph."""
    graph = cap.graph
    assert any(isinstance(n, ComputeNode) for n in graph.nodes)
    again = load_text(dump_json(graph), f"{name}.json")
    assert dump_json(again) == dump_json(graph)
    assert graph.meta["inductor"]["kernel_count"] >= 1


def _eager(case: ZooCase) -> list[torch.Tensor]:
    with torch.no_grad():
        out = case.module(*case.inputs)
    return [out] if isinstance(out, torch.Tensor) else list(out)


def check_reference_equals_eager(case: ZooCase, cap: Capture) -> None:
    """(b) The reference interpreter on the capture's own inputs (the model's weights) gives the
    model's eager outputs, within torch's default tolerances for the model's dtype."""
    storages = run_graph(cap.graph, cap.input_storages())
    got = cap.program_outputs(storages)
    want = _eager(case)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, equal_nan=True)


def check_triton_run_matches_the_reference(path: Path) -> None:
    """(c) `fuseopt run --backend triton`: the generated module runs the whole model (Triton
    kernels and library calls) and every output matches the reference."""
    res = CliRunner().invoke(cli, ["run", str(path), "--backend", "triton", "--format", "json"])
    assert res.exit_code == 0, res.output[-3000:]
    assert "MISMATCH" not in res.output


def check_kernels_and_bytes_at_most_inductors(cap: Capture) -> None:
    """(d) On the same captured graph: fuseopt's generated kernels <= Inductor's (non-extern
    groups of meta.inductor), and bytes moved <= Inductor's (the same AccessTable definition)."""
    graph = cap.graph
    stage = optimize(graph, Options())
    ours, theirs = generated_kernels(stage.graph, stage.plan), inductor_generated_kernels(graph)
    assert ours <= theirs, (ours, theirs)
    assert stage.plan.metrics["bytes"] <= graph.meta["inductor"]["num_bytes_accessed"]


@pytest.mark.parametrize("name", _params())
def test_model_end_to_end(zoo: Callable[[str], Captured], name: str) -> None:
    """(a)-(d) for one model, in one test: its capture is made once in whichever worker runs it."""
    case, cap = zoo(name)
    check_capture_validates(name, cap)
    check_reference_equals_eager(case, cap)
    check_triton_run_matches_the_reference(zoo.files / f"{name}.json")  # type: ignore[attr-defined]
    check_kernels_and_bytes_at_most_inductors(cap)


def _kernel_of(plan_json: dict, node: str) -> dict:  # type: ignore[type-arg]
    (k,) = [k for k in plan_json["kernels"] if node in k["nodes"]]
    return k  # type: ignore[no-any-return]


def _neighbours(graph: Graph, node: str) -> list[str]:
    """The nodes that write what `node` reads, and that read what it writes."""
    n = graph.node(node)
    writer = graph.writer()
    producers = {writer[b] for b in n.read_buffers() if b in writer}
    consumers = {m.name for m in graph.nodes if set(n.outputs) & set(m.read_buffers())}
    return sorted((producers | consumers) - {node})


@pytest.mark.slow  # the channels-last pool's flattening is also checked on samples/avgpool_cl*.yaml
def test_inception_branch_pools_are_one_flat_kernel_each_and_explained(
    zoo: Callable[[str], Captured],
) -> None:
    """(e) Every branch pool (`avg_pool2d(3, 1, 1)` of InceptionA, C and E) is in one kernel whose
    loops are flattened (N*H*W as one loop, not split into batch and position loops), and
    `fuseopt explain` states, for each neighbour, whether it fuses and why not."""
    _, cap = zoo("inception")
    graph = cap.graph
    path = zoo.files / "inception.json"  # type: ignore[attr-defined]
    pools = pool_nodes(graph)
    assert len(pools) == 3, pools  # one per InceptionA, C and E block of the small network
    res = CliRunner().invoke(cli, ["optimize", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output[-2000:]
    plan = json.loads(res.stdout)
    for pool, (n, h, w, c) in pools.items():
        kernel = _kernel_of(plan, pool)
        sizes = [size for _, size in kernel["loops"]]
        assert sizes in ([n * h * w, c], [n * h * w * c], [c, n * h * w]), (pool, kernel["loops"])
        neighbours = _neighbours(graph, pool)
        assert neighbours, pool
        for other in neighbours:
            res = CliRunner().invoke(cli, ["explain", str(path), pool, other, "--format", "json"])
            assert res.exit_code == 0, res.output[-2000:]
            why = json.loads(res.stdout)
            assert why["pair"] == [pool, other]
            fused = why["kernels"][0] == why["kernels"][1]
            assert why["fused"] is fused
            if fused:
                assert why["reason"] == ""
            else:
                assert why["reason"] and why["detail"], why
                if isinstance(graph.node(other), ComputeNode):
                    assert why["reason"] != "extern", why
                else:  # the 1x1 convolution that reads the pool: a library call never fuses
                    assert why["reason"] == "extern" and other in why["detail"], why


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet", "gpt2"])
def test_cli_capture_validates(name: str, tmp_path: Path) -> None:
    """(a) `fuseopt capture tests/zoo/programs.py:<model>` writes a graph that `fuseopt validate`
    accepts (one model per input kind: token ids, images)."""
    case = build(name, "small")
    out = tmp_path / f"{name}.json"
    args = ["capture", f"{ROOT / 'tests' / 'zoo' / 'programs.py'}:{name}", "-o", str(out)]
    for spec, layout in zip(case.specs, case.layouts, strict=True):
        args += ["--input", spec, "--layout", layout]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output[-3000:]
    res = CliRunner().invoke(cli, ["validate", str(out)])
    assert res.exit_code == 0, res.output[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet", "bert"])
def test_bench_checks_the_whole_model_on_its_own_weights(zoo: Callable[[str], Captured], name: str) -> None:
    """`fuseopt bench`'s path for a whole model (what benchmarks/models.py --gpu times), on the CPU:
    fuseopt's module, the unfused plan and the eager module on the module's own weights, each
    checked against the reference."""
    from fuseopt.bench.harness import bench_graph
    from fuseopt.bench.model import bind_capture

    case, cap = zoo(name)
    bound = bind_capture(cap.graph, case.module, case.inputs, cap)
    owned = {id(t) for t in (*case.module.parameters(), *case.module.buffers())}
    lifted = [w for w in bound.weights if cap.graph.meta["capture"]["inputs"][w] != "constant"]
    assert lifted and all(id(bound.tensors[w]) in owned for w in lifted)  # the module's own tensors
    res = bench_graph(cap.graph, bound, interpret=True, inputs=bound.input_storages())
    assert res["ok"], [v["error"] for v in res["variants"]]
    assert [v["name"] for v in res["variants"]] == ["fuseopt", "unfused", "eager"]
