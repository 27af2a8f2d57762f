"""`fuseopt.capture`: real PyTorch programs in, validated graphs out, with Inductor's plan in meta.

Every docs/cases.md program and every docs/inductor.md workload (small sizes) is captured once per module
(torch.compile is slow) and checked: the graph validates and round-trips, the reference interpreter
computes what torch computes on the same tensors, meta is filled, and Inductor's kernel count is the
GPU one of docs/cases.md (loop reordering on), which the CPU only reaches through the GPU emulation.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sympy
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree
from torch._inductor.test_operators import realize

import fuseopt
from fuseopt.analysis.metrics import AccessTable
from fuseopt.capture import Capture, CaptureError, capture_program
from fuseopt.capture.index import IndexPrinter
from fuseopt.capture.specs import describe_tensor, make_inputs, parse_spec
from fuseopt.errors import InputError
from fuseopt.interp import run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.expr import Const, to_text
from fuseopt.ir.serialize import dump_json, dump_yaml
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize

_GEN = torch.Generator().manual_seed(0)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_GEN).to(dtype)


Program = tuple[Callable[..., Any], tuple[Any, ...]]
PROGRAMS: dict[str, Program] = {}


def program(name: str, *args: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS[name] = (fn, args)
        return fn

    return register


# -- docs/cases.md (the "loop reordering on" column is Inductor's count on a GPU) -------------------------
CASES_KERNELS = {
    "apbt_realize": 1,
    "sum_and_t": 1,
    "pw_outer_red": 1,
    "pw_outer_red_2": 1,
    "view": 1,
    "outer_sum_plus_pw": 1,
    "rms_reshape": 1,
    "floordiv_broadcast": 1,
    "cast_and_t": 1,
    "avgpool_cl": 1,
}


@program("apbt_realize", _randn(64, 32), _randn(32, 64).t())
def apbt_realize(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return realize(x * 2) + realize(y * 3)


@program("sum_and_t", _randn(64, 32))
def sum_and_t(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.sum(-1), x.t().contiguous()


@program("pw_outer_red", _randn(2, 4, 512))
def pw_outer_red(x: torch.Tensor) -> torch.Tensor:
    return realize(x + 1).sum([0, 1])


@program("pw_outer_red_2", _randn(2, 4, 512))
def pw_outer_red_2(x: torch.Tensor) -> torch.Tensor:
    return realize(realize(realize(x + 1) - 2) * 3).sum([0, 1])


@program("view", _randn(100))
def view(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return realize(x.view(10, 10)), x.sin()


@program("outer_sum_plus_pw", _randn(32, 1024))
def outer_sum_plus_pw(x: torch.Tensor) -> torch.Tensor:
    return x.sum(0, keepdim=True) + x


@program("rms_reshape", _randn(4, 640, dtype=torch.bfloat16)[:, :512])
def rms_reshape(x: torch.Tensor) -> torch.Tensor:
    g = x.reshape(-1, 128).float()
    y = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + 1e-5)
    return y.reshape(x.shape).to(torch.bfloat16)


@program("floordiv_broadcast", _randn(4, 256))
def floordiv_broadcast(x: torch.Tensor) -> torch.Tensor:
    g = x.unflatten(-1, (8, 32))
    s = g.abs().amax(-1).clamp(min=1e-6)
    return (g / s.unsqueeze(-1)).flatten(-2)


@program("cast_and_t", _randn(64, 64, dtype=torch.bfloat16), torch.tensor([10.0]))
def cast_and_t(x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = (x * s).clamp(-448, 448).to(torch.float16)
    return y, y.t().contiguous().t()


@program("avgpool_cl", _randn(2, 8, 5, 5, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last))
def avgpool_cl(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(F.avg_pool2d(x, 3, stride=1, padding=1))


@program("jit_aot", _randn(32, 32), torch.tensor(3))
def jit_aot(x: torch.Tensor, number: torch.Tensor) -> tuple[Any, ...]:
    return x + x, number.item(), x * x, x @ x, x**2


@program("item_float", _randn(4, 5), torch.tensor(2.5))
def item_float(x: torch.Tensor, s: torch.Tensor) -> tuple[Any, ...]:
    v = s.item()  # a float's item() is an unbacked SymFloat: used in a body, and returned
    return x * v, v


@program("item_mixed", _randn(4, 5), torch.tensor(-1.5), torch.tensor(3))
def item_mixed(x: torch.Tensor, s: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    return x * s.item() + n.item()


@program("item_computed", _randn(4, 5))
def item_computed(x: torch.Tensor) -> tuple[Any, ...]:
    y = x.exp()
    return y / y.abs().max().item(), y.sum().item()  # items of computed values


@program("item_bool", _randn(4, 5))
def item_bool(x: torch.Tensor) -> tuple[Any, ...]:
    flag = (x > 0).any().item()  # a bool's item(): its symbol is the int the bool converts to
    return x * 2, flag, x.argmax().item()


# -- docs/inductor.md's measured workloads ----------------------------------------------------------------
@program("tsum", _randn(64, 32), _randn(32, 64))
def tsum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x * 2 + y.t()).sum(-1)


@program("layernorm_t", _randn(32, 64).t(), _randn(32), _randn(32))
def layernorm_t(xt: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(xt, (xt.shape[-1],), w, b, eps=1e-5)


@program("softmax_bias_t", _randn(32, 64).t(), _randn(32))
def softmax_bias_t(xt: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.softmax(xt + bias, dim=-1)


@program("three_layouts_mean", _randn(32, 16), _randn(16, 32), _randn(32, 16))
def three_layouts_mean(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    s = torch.sigmoid(a) * b.t() + c
    return s, s.mean(0)


# apbt and avgpool_cl of docs/inductor.md are the CASES programs above.
WORKLOADS = ("apbt_realize", "tsum", "avgpool_cl", "layernorm_t", "softmax_bias_t", "three_layouts_mean")


@pytest.fixture(scope="module")
def captured() -> Iterator[Callable[[str], Capture]]:
    cache: dict[str, Capture] = {}

    def get(name: str) -> Capture:
        if name not in cache:
            fn, args = PROGRAMS[name]
            cache[name] = capture_program(fn, *args)
        return cache[name]

    yield get


def expected_outputs(name: str) -> list[torch.Tensor]:
    fn, args = PROGRAMS[name]
    leaves = pytree.tree_leaves(fn(*args))
    return [t if isinstance(t, torch.Tensor) else torch.tensor(t) for t in leaves]


def assert_matches_torch(cap: Capture, want: list[torch.Tensor]) -> None:
    got = cap.program_outputs(run_graph(cap.graph, cap.input_storages()))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, i
        low = w.dtype in (torch.bfloat16, torch.float16)
        torch.testing.assert_close(
            g.to(w.dtype),
            w,
            rtol=2e-2 if low else 1e-4,
            atol=2e-2 if low else 1e-5,
            msg=lambda m, i=i: f"output {i}: {m}",
        )


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_captured_graph_validates_and_equals_torch(captured: Callable[[str], Capture], name: str) -> None:
    cap = captured(name)
    g = cap.graph
    assert load_text(dump_yaml(g), f"{name}.yaml") == g
    assert load_text(dump_json(g), f"{name}.json") == g
    assert_matches_torch(cap, expected_outputs(name))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_meta_holds_source_and_inductor_plan(captured: Callable[[str], Capture], name: str) -> None:
    g = captured(name).graph
    fn, args = PROGRAMS[name]
    src = g.meta["source"]
    assert src["function"] == fn.__qualname__ and src["file"].endswith("test_capture.py")
    assert src["inputs"] == [describe_tensor(a) for a in args]
    ind = g.meta["inductor"]
    names = [n for group in ind["kernels"] for n in group]
    assert sorted(names) == sorted(n.name for n in g.nodes), "every node in exactly one Inductor kernel"
    assert ind["kernel_count"] == len(ind["kernels"])
    table = AccessTable(g)
    assert ind["num_bytes_accessed"] == sum(table.kernel_bytes(k) for k in ind["kernels"])
    assert "AccessTable" in ind["bytes_definition"]
    assert g.meta["capture"]["gpu_emulation"] is True


@pytest.mark.parametrize("name", sorted(CASES_KERNELS))
def test_cases_reach_inductors_gpu_kernel_count(captured: Callable[[str], Capture], name: str) -> None:
    g = captured(name).graph
    expected = CASES_KERNELS[name]
    if name == "rms_reshape" and _torch_version() < (2, 13):
        expected = 2  # torch 2.11's Inductor does not fuse it (its real GPU capture agrees)
    assert g.meta["inductor"]["kernel_count"] == expected
    plan = optimize(g, Options()).plan
    assert plan.metrics["kernels"] <= CASES_KERNELS[name]


def _torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int(minor)


def test_workloads_are_all_captured() -> None:
    assert set(WORKLOADS) <= set(PROGRAMS)
    assert set(CASES_KERNELS) | {"jit_aot"} <= set(PROGRAMS)


def test_item_becomes_a_0d_copy(captured: Callable[[str], Capture]) -> None:
    cap = captured("jit_aot")
    kinds = {n.name: n.kind for n in cap.graph.nodes}
    assert sorted(kinds.values()) == ["extern", "pointwise", "pointwise", "pointwise", "pointwise"]
    scalar = next(o for o in cap.outputs if o.layout.shape == ())
    assert cap.graph.buffer(scalar.buffer).dtype.value == "int64"


def test_inductor_config_is_applied_and_recorded() -> None:
    fn, args = PROGRAMS["jit_aot"]
    g = capture_program(fn, *args, inductor_config={"max_fusion_size": 2}).graph
    assert g.meta["capture"]["inductor_config"] == {"max_fusion_size": 2}
    assert max(len(k) for k in g.meta["inductor"]["kernels"]) == 2


def test_capture_is_deterministic(captured: Callable[[str], Capture]) -> None:
    fn, args = PROGRAMS["avgpool_cl"]
    again = capture_program(fn, *args).graph
    assert dump_json(again) == dump_json(captured("avgpool_cl").graph)


# -- the GPU emulation ------------------------------------------------------------------------------
def _inductor_hooks() -> list[Any]:
    import torch._inductor.fx_passes.post_grad as post_grad
    import torch._inductor.ir as ir
    import torch._inductor.lowering as lowering
    import torch._inductor.scheduler as scheduler
    from torch._inductor import config

    return [
        ir.is_gpu,
        ir.is_cpu,
        scheduler.is_gpu,
        scheduler.Scheduler.create_backend,
        scheduler.Scheduler.fuse_nodes,
        scheduler.BaseSchedulerNode.is_cpu,
        getattr(scheduler, "_is_gpu_triton_backend", None),
        config.cpu_backend,
        config.fx_graph_cache,
        getattr(config.cpp, "use_two_step_variance_threshold", None),  # not in torch 2.11
        config.disable_padding_cpu,
        post_grad.is_gpu,
        inspect.unwrap(lowering.cat).__code__,
        inspect.unwrap(lowering.div_prim).__code__,
        *[inspect.unwrap(f).__code__ for f in [getattr(lowering, "_pad_as_cat", None)] if f],  # not in 2.11
    ]


def test_without_emulation_inductor_plans_for_the_cpu() -> None:
    """The CPU plan merges loops and skips loop reordering: apbt takes 2 kernels there, 1 on a GPU."""
    fn, args = PROGRAMS["apbt_realize"]
    cpu = capture_program(fn, *args, emulate_gpu=False)
    assert cpu.graph.meta["inductor"]["kernel_count"] == 2
    assert cpu.graph.meta["capture"]["gpu_emulation"] is False
    assert [len(n.loops) for n in cpu.graph.nodes][:2] == [1, 1], "merged loops on the CPU"
    assert_matches_torch(cpu, expected_outputs("apbt_realize"))


def test_emulation_restores_inductor_after_success_and_failure() -> None:
    before = _inductor_hooks()
    fn, args = PROGRAMS["view"]
    cap = capture_program(fn, *args)
    assert _inductor_hooks() == before
    assert cap.emulation is not None and {"lowering.cat", "lowering.div_prim"} <= set(cap.emulation.applied)
    if _torch_version() >= (2, 13):
        assert cap.emulation.missing == [] and "emulation_missing" not in cap.graph.meta["capture"]
    with pytest.raises(CaptureError):
        capture_program(lambda x: torch.rand_like(x) + x, _randn(8))
    assert _inductor_hooks() == before


def test_emulated_pointwise_cat() -> None:
    """A GPU lowers a cat of a few simple inputs used pointwise as one masked node; the CPU always
    as a ConcatKernel (slices computed into the output, here dropped from the graph)."""

    def rope_like(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([-x[:, 4:], x[:, :4]], dim=-1) * 2

    x = _randn(6, 8)
    gpu = capture_program(rope_like, x)
    cpu = capture_program(rope_like, x, emulate_gpu=False)
    assert len(gpu.graph.nodes) == 1 and "dropped_nodes" not in gpu.graph.meta["capture"]
    assert len(cpu.graph.nodes) == 3 and len(cpu.graph.meta["capture"]["dropped_nodes"]) == 1
    want = [rope_like(x)]
    assert_matches_torch(gpu, want)
    assert_matches_torch(cpu, want)


def test_emulated_welford_layer_norm() -> None:
    """fp32 var_mean of more than 8 elements is Welford on a GPU (two-pass on the CPU lowering):
    its mean and M2 outputs become two reductions, the second reading the first."""
    fn, args = PROGRAMS["layernorm_t"]
    g = capture_program(fn, *args).graph
    reductions = [n for n in g.nodes if n.kind == "reduction"]
    assert len(reductions) == 2
    assert reductions[0].output in reductions[1].read_buffers()


def _annotated_layer_norm(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A hand-written LayerNorm (as in many model repositories): the mean and the std apart."""
    mean = x.mean(-1, keepdim=True)
    return a * (x - mean) / (x.std(-1, keepdim=True) + 1e-6) + b


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (lambda x: torch.var(x, dim=-1, keepdim=True) + x, (_randn(8, 64),)),
        (lambda x: x.std(0, unbiased=False), (_randn(40, 6),)),
        (_annotated_layer_norm, (_randn(8, 64), _randn(64), _randn(64))),
    ],
    ids=["var", "std_dim0", "annotated_layer_norm"],
)
def test_a_later_welford_output_alone_makes_the_first(fn: Any, args: tuple[torch.Tensor, ...]) -> None:
    """torch.var and torch.std use only Welford's M2, and Inductor drops the mean it computes in
    the same kernel: the mean is made as a node of its own before M2, which reads it, and counted
    in M2's Inductor kernel. The graph computes what torch does."""
    cap = capture_program(fn, *args)
    g = cap.graph
    reductions = [n for n in g.nodes if n.kind == "reduction"]
    made = [n for n in reductions if n.name.endswith("_" + n.output)]
    assert len(made) == 1
    readers = [n for n in reductions if made[0].output in n.read_buffers()]
    assert len(readers) == 1 and made[0].name == f"{readers[0].name}_{made[0].output}"
    assert any({made[0].name, readers[0].name} <= set(k) for k in g.meta["inductor"]["kernels"])
    with torch.no_grad():
        assert_matches_torch(cap, [fn(*args)])


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (lambda x: torch.var_mean(x, dim=0), (_randn(1000, 96),)),  # chunks that divide the rows
        (lambda x: torch.var_mean(x, dim=0), (_randn(999, 96),)),  # masked chunks
        (lambda x: x.std(0, unbiased=False) * 2, (_randn(19999, 7),)),  # split twice, masked
        (lambda x: torch.nn.functional.layer_norm(x, (x.shape[-1],)), (_randn(2, 65536),)),  # few long rows
        (lambda x: torch.var_mean(torch.where(x > 1, float("nan"), x), dim=0), (_randn(1000, 96),)),
    ],
    ids=["divisible", "masked", "two_splits", "layer_norm_long_rows", "nan"],
)
def test_a_split_welford_reduction_is_combined(fn: Any, args: tuple[torch.Tensor, ...]) -> None:
    """Inductor splits a long Welford reduction: chunks reduced to (mean, M2, weight), then a
    `welford_combine` over the chunks (masked where they do not divide the points). The combine
    becomes three reductions (the total weight, the weighted mean over it, M2 with each chunk's
    spread from that mean), outputs Inductor dropped are made, outputs Inductor orders after the
    one that reads them are converted first. The graph computes what torch does, and fuseopt's
    plan of it has at most Inductor's kernels and bytes."""
    cap = capture_program(fn, *args)
    g = cap.graph
    with torch.no_grad():
        want = fn(*args)
    got = cap.program_outputs(run_graph(g, cap.input_storages()))
    for a, b in zip(got, list(want) if isinstance(want, tuple) else [want], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)  # NaN where torch's
    assert any("sum(buf" in to_text(n.value) and "/ buf" in to_text(n.value) for n in g.nodes if n.reduce)
    stage = optimize(g, Options())
    assert len(stage.plan.kernels) <= g.meta["inductor"]["kernel_count"]
    assert stage.plan.metrics["bytes"] <= g.meta["inductor"]["num_bytes_accessed"]


def test_a_float_item_is_its_0d_buffer_wherever_it_is_used(captured: Callable[[str], Capture]) -> None:
    """A float's `.item()` in a loop body reads the 0-d copy of the element (its symbol is not an
    index), and the Python float returned is a float64 0-d output, as eager's number is a double."""
    cap = captured("item_float")
    scalar = next(o for o in cap.outputs if o.layout.shape == ())
    assert cap.graph.buffer(scalar.buffer).dtype.value == "float64"
    (scaled,) = [n for n in cap.graph.nodes if n.loops]
    assert to_text(scaled.value) == "x[5 * x0 + x1] * s[0]"


def test_a_view_at_a_position_known_at_run_time_is_refused() -> None:
    def pick(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        return x[n.item()] * 2

    with pytest.raises(CaptureError, match=r"a view at a position known only at run time"):
        capture_program(pick, _randn(6, 5), torch.tensor(3))


# -- errors -----------------------------------------------------------------------------------------
def test_unsupported_op_is_a_clear_error() -> None:
    """A loop op without a rule (every one Inductor emits for the operators tested has one, or
    is a library call: `LOOP_OPS_AS_CALLS`) fails when used, naming the op and the node."""
    from fuseopt.capture.body import BodyHandler, NodeContext

    handler = BodyHandler(None, NodeContext("op7", {}, {}, 1))  # type: ignore[arg-type]
    with pytest.raises(CaptureError, match=r"op7: op 'frobnicate' is not supported") as err:
        handler.frobnicate(Const(1.0))
    assert isinstance(err.value, InputError) and err.value.node == "op7"


def test_random_library_call_names_the_operator() -> None:
    with pytest.raises(CaptureError, match=r"aten\.multinomial\.default is a random operator"):
        capture_program(lambda x: torch.multinomial(x.abs() + 0.1, 2), _randn(8))


def test_graph_break_is_a_clear_error() -> None:
    def breaks(x: torch.Tensor) -> torch.Tensor:
        print("side effect")  # noqa: T201 - a graph break under fullgraph=True
        return x + 1

    with pytest.raises(CaptureError, match=r"torch.compile could not capture the program"):
        capture_program(breaks, _randn(4))


def test_unknown_inductor_config_is_a_clear_error() -> None:
    with pytest.raises(CaptureError, match=r"no_such_option"):
        capture_program(lambda x: x + 1, _randn(4), inductor_config={"no_such_option": 1})


# -- the package and its pieces ---------------------------------------------------------------------
def test_import_fuseopt_does_not_import_torch() -> None:
    code = "import sys, fuseopt; assert 'torch' not in sys.modules; assert callable(fuseopt.capture)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fuseopt_capture_is_callable_and_returns_a_graph() -> None:
    g = fuseopt.capture(lambda x, y: (x * y).sum(0), _randn(6, 4), _randn(6, 4))
    assert g.meta["inductor"]["kernel_count"] == 1 and len(g.nodes) == 1


def _sym(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


def test_index_printer_walks_the_sympy_tree() -> None:
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    x0, x1, r0 = _sym("x0"), _sym("x1"), _sym("r0")
    p = IndexPrinter({x0: "x0", x1: "x1", r0: "r0"}, {}, "n")
    assert to_text(p(r0 + 2048 * x0 + x1 - 48)) == "2048 * x0 + x1 + r0 - 48"
    assert to_text(p(FloorDiv(x0, 4) + ModularIndexing(x1, 8, 3))) == "x0 // 4 + x1 // 8 % 3"
    assert to_text(p(ModularIndexing(x1, 1, 3) - x0)) == "-x0 + x1 % 3"
    assert to_text(p(sympy.Min(x0 + 2, 9))) == "minimum(9, x0 + 2)"
    with pytest.raises(CaptureError, match=r"index function .* is not supported"):
        p(sympy.sin(x0))
    with pytest.raises(CaptureError, match=r"dynamic shapes"):
        p(_sym("s0") + x0)


def test_index_printer_folds_digits_of_digits() -> None:
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    x2, x3 = _sym("x2"), _sym("x3")
    p = IndexPrinter({x2: "x2", x3: "x3"}, {}, "n")
    a = 30 * x2 + x3
    # Funnel's relative shift: 8 * (a // 8) + (a % 8) // 8 + (a + 16) % 32 % 8
    e = (
        8 * FloorDiv(a, 8)
        + 8 * FloorDiv(ModularIndexing(a, 1, 8), 8)
        + ModularIndexing(ModularIndexing(a + 16, 1, 32), 1, 8)
    )
    assert to_text(p(e + 240)) == "30 * x2 + x3 + 240"
    assert to_text(p(ModularIndexing(ModularIndexing(a, 1, 32), 1, 8))) == "(30 * x2 + x3) % 8"
    assert to_text(p(FloorDiv(ModularIndexing(a, 1, 8), 8))) == "0"
    assert to_text(p(FloorDiv(FloorDiv(a, 4), 8))) == "(30 * x2 + x3) // 32"
    assert to_text(p(ModularIndexing(ModularIndexing(a, 1, 12), 1, 8))) == "(30 * x2 + x3) % 12 % 8"


def test_input_specs() -> None:
    assert parse_spec("float32[1024, 2048]").shape == (1024, 2048)
    assert parse_spec("int64[]").shape == ()
    t, u, v = make_inputs(
        [parse_spec("float32[2,3]", "transposed"), parse_spec("bfloat16[2,4,3,3]", "channels_last"),
         parse_spec("int32[5]")]
    )  # fmt: skip
    assert t.shape == (2, 3) and t.stride() == (1, 2)
    assert u.is_contiguous(memory_format=torch.channels_last) and u.dtype == torch.bfloat16
    assert v.dtype == torch.int32 and int(v.min()) >= 0 and int(v.max()) < 8
    assert describe_tensor(t) == "float32[2,3] transposed"
    assert torch.equal(
        make_inputs([parse_spec("float32[4]")], seed=1)[0], make_inputs([parse_spec("float32[4]")], 1)[0]
    )
    for bad, match in [
        ("float33[2]", "unknown dtype"),
        ("float32(2)", "is not DTYPE"),
        ("float32[0]", "positive"),
        ("float32[2]", "transposed needs"),
    ]:
        with pytest.raises(InputError, match=match):
            parse_spec(bad, "transposed" if "transposed" in match else "contiguous")
