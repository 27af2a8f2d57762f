"""Timing generated kernels against the unfused plan, torch eager and torch.compile, in one run.

Contract: every variant is checked against the reference interpreter (outputs poisoned with NaN
first, so an element nobody writes fails) before it is timed; a variant that does not match is
reported as failed and not timed. Times are medians of GPU time (`fuseopt.bench.timing.gpu_ms`:
as `triton.testing.do_bench`, L2 cleared before each call, but with the host's launch overhead
kept out, so that a small graph is not timed by its Python; `host_ms` is that overhead, apart).
GB/s counts each
input storage read once and each output written once; `pct_copy` relates it to the device's
copy bandwidth measured in the same run (a 1 GiB copy), and `pct_copy_same_size` to a copy that
moves the graph's own byte count (half read, half written), timed in the same run: the ceiling at
that size, where launch, ramp-up and tail weigh more than in a 1 GiB copy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch

from fuseopt.bench.kernels import slowest_kernels
from fuseopt.bench.timing import Timing, gpu_ms
from fuseopt.errors import CheckFailed
from fuseopt.interp.limits import DEFAULT_LIMITS, Limits
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import initial_stage, optimize
from fuseopt.targets import DEFAULT, Target, from_properties

Program = Callable[[Mapping[str, torch.Tensor]], dict[str, torch.Tensor]]


@dataclasses.dataclass
class VariantResult:
    name: str
    ok: bool
    ms: float | None = None
    gbps: float | None = None
    pct_copy: float | None = None
    pct_copy_same_size: float | None = None
    kernels: int | None = None
    peak_mib: float | None = None
    host_ms: float | None = None  # host time of one call's launches (not in `ms`)
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def io_bytes(graph: Graph) -> int:
    """Each input storage read once, each output written once."""
    return sum(b.storage_size * b.dtype.itemsize for b in graph.buffers if b.role in ("input", "output"))


def copy_bandwidth_gbps(device: torch.device, do_bench: Callable[..., float], nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth (bytes read + bytes written) / time, copying `nbytes` (whole
    float32 elements)."""
    nbytes = max(4, nbytes // 4 * 4)
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)

    def copy() -> None:
        dst.copy_(src)

    ms = do_bench(copy)
    return 2 * nbytes / (ms * 1e-3) / 1e9


def read_bandwidth_gbps(device: torch.device, do_bench: Callable[..., float], nbytes: int = 1 << 30) -> float:
    """Device read bandwidth: bytes read by a sum over a float32 tensor / time (context for
    read-only workloads such as row sums, which a copy's read+write figure overstates)."""
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)

    def total() -> None:
        src.sum()

    ms = do_bench(total)
    return nbytes / (ms * 1e-3) / 1e9


def _views(graph: Graph, storages: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    from fuseopt.interp import logical_view

    return {b.name: logical_view(graph, b.name, storages[b.name]) for b in graph.inputs}


def _check_storages(
    graph: Graph,
    got: Mapping[str, torch.Tensor],
    want: Mapping[str, torch.Tensor],
    inputs: Mapping[str, torch.Tensor],
) -> None:
    """Every output against the reference, as `fuseopt run` checks (`check_outputs`: tolerances
    per dtype, widened downstream of long sums and library calls; a float64 run on `inputs`
    decides the elements outside them)."""
    from fuseopt.runtime.compare import check_outputs

    checks = check_outputs(graph, {k: v.cpu() for k, v in got.items()}, want, inputs=inputs)
    problems = [c.message() for c in checks if not c.ok]
    if problems:
        raise CheckFailed("; ".join(problems))


def _check_logical(
    graph: Graph,
    got: Mapping[str, torch.Tensor],
    want: Mapping[str, torch.Tensor],
    inputs: Mapping[str, torch.Tensor],
) -> None:
    """A torch program's outputs (logical tensors) against the reference storages."""
    from fuseopt.interp import logical_view

    storages = {}
    for b in graph.outputs:
        expected = logical_view(graph, b.name, want[b.name])
        flat = torch.zeros_like(want[b.name])
        logical_view(graph, b.name, flat).copy_(
            got[b.name].detach().cpu().to(expected.dtype).reshape(expected.shape)
        )
        storages[b.name] = flat
    _check_storages(graph, storages, want, inputs)


def bench_graph(
    graph: Graph,
    program: Program | None = None,
    *,
    options: Options | None = None,
    device: str | torch.device = "cuda",
    interpret: bool = False,
    warmup: int = 25,
    rep: int = 100,
    seed: int = 0,
    copy_gbps: float | None = None,
    with_compile: bool = True,
    inputs: Mapping[str, torch.Tensor] | None = None,
    kernels_top: int = 0,
    limits: Limits | None = DEFAULT_LIMITS,
    with_unfused: bool = True,
    target: Target | None = None,
    strategy: str | None = None,
    fission: bool | None = None,
) -> dict[str, Any]:
    """Check, then time, every variant of one graph. With `interpret`, correctness only (CPU).

    `inputs` (flat storages of every input buffer) replaces the random inputs: a captured model's
    weights (`BoundProgram.input_storages()`), so that every variant runs the same model. A
    program with a `check(results, expected_storages)` method checks its own results (a bound
    program returns its tensor results in order, not a dict by buffer). With `kernels_top` on a
    GPU, the slowest kernels of fuseopt's module and torch.compile's, by device time per run, are
    in `slowest_kernels`, fuseopt's beside the cost model's estimate (`estimated_us`, also given
    for every generated kernel by name). `limits` bound the reference run (`fuseopt run`'s defaults; a whole
    model at its real size may need more). `with_unfused=False` leaves out the unfused plan (a whole
    model's hundreds of kernels compile twice otherwise). The kernels are generated for `target`;
    None: the GPU they run on (`fuseopt.targets.from_properties`), the default target on the CPU;
    with `strategy` (`CodegenOptions.strategy`) taken wherever it applies and `fission` as
    `CodegenOptions.fission`."""
    from fuseopt.codegen import CodegenOptions, emit_module
    from fuseopt.interp import make_inputs, run_graph
    from fuseopt.report.launches import module_and_launches
    from fuseopt.runtime.module import load_module, run_module

    if interpret:
        _use_interpreter()
    dev = torch.device("cpu" if interpret else device)
    with full_precision_library_calls(dev):
        do_bench = None if interpret else gpu_timer(warmup, rep, dev)
        if target is None:  # the GPU it is timed on (its multiprocessors size reductions' grids)
            hip = torch.version.hip is not None
            target = (
                from_properties(torch.cuda.get_device_properties(dev), hip=hip)
                if dev.type == "cuda"
                else DEFAULT
            )
        codegen = CodegenOptions(target=target, strategy=strategy, fission=fission)
        stage = optimize(graph, options or Options())
        unfused = initial_stage(graph)
        estimates: dict[str, float] = {}  # fuseopt's kernels' cost estimates, once generated
        if inputs is None:
            inputs = make_inputs(graph, seed=seed, limits=limits)
        expected = run_graph(graph, {k: v.clone() for k, v in inputs.items()}, limits=limits)
        cpu_inputs = {k: v.cpu() for k, v in inputs.items()}
        dev_inputs = {k: v.to(dev, copy=True) for k, v in inputs.items()}  # the caller's stay unwritten
        nbytes = io_bytes(graph)
        same_size = None if do_bench is None else copy_bandwidth_gbps(dev, do_bench, nbytes // 2)
        results: list[VariantResult] = []
        slowest: dict[str, list[dict[str, Any]]] = {}

        def timed(
            name: str, fn: Callable[[], object], check: Callable[[], None], kernels: int | None
        ) -> None:
            res = VariantResult(name, ok=False, kernels=kernels)
            try:
                check()
                res.ok = True
                if do_bench is not None:
                    if dev.type == "cuda":
                        # Peak of one call (outputs, workspaces, temporaries), measured on its own:
                        # do_bench's 256 MiB L2-flush buffer must not count.
                        torch.cuda.synchronize(dev)
                        torch.cuda.reset_peak_memory_stats(dev)
                        base = torch.cuda.memory_allocated(dev)
                        fn()
                        torch.cuda.synchronize(dev)
                        res.peak_mib = round((torch.cuda.max_memory_allocated(dev) - base) / 2**20, 1)
                    timing = do_bench.timing(fn)
                    res.ms, res.host_ms = timing.ms, round(timing.host_ms, 4)
                    res.gbps = nbytes / (res.ms * 1e-3) / 1e9
                    if copy_gbps:
                        res.pct_copy = 100.0 * res.gbps / copy_gbps
                    if same_size:
                        res.pct_copy_same_size = 100.0 * res.gbps / same_size
                    if kernels_top and name in ("fuseopt", "torch.compile"):
                        slowest[name] = slowest_kernels(fn, dev, kernels_top)
                    if name == "fuseopt":  # beside each generated kernel, what the model expected
                        for row in slowest.get(name, []):
                            row["estimated_us"] = estimates.get(row["kernel"])
            except Exception as exc:  # a failing variant is reported, not fatal for the others
                res.ok = False
                res.error = f"{type(exc).__name__}: {exc}"[:2000]
            results.append(res)

        for name, st in (("fuseopt", stage), ("unfused", unfused))[: 2 if with_unfused else 1]:
            try:
                if name == "fuseopt":
                    source, launches = module_and_launches(st.graph, st.plan, codegen)
                    estimates = kernel_estimates(launches)
                else:
                    source = emit_module(st.graph, st.plan, options=codegen)
                module = load_module(source)
            except Exception as exc:
                results.append(
                    VariantResult(
                        name, ok=False, kernels=len(st.plan.kernels), error=f"{type(exc).__name__}: {exc}"
                    )
                )
                continue

            def check(m: Any = module) -> None:
                got = run_module(m, {k: v.clone() for k, v in dev_inputs.items()}, poison=True)
                _check_storages(graph, got, expected, cpu_inputs)

            def call(m: Any = module) -> object:
                return m.call(dev_inputs)

            timed(name, call, check, len(st.plan.kernels))

        if program is not None:
            views = _views(graph, dev_inputs)
            own_check = getattr(program, "check", None)
            # a program that writes inputs in place (a bound one: `meta.capture.mutations`) starts
            # each check from the reference's inputs, and its new values are checked too
            restore = getattr(program, "restore_inputs", None)
            check_updated = getattr(program, "check_updated_inputs", None)

            def check_results(run: Callable[[Mapping[str, torch.Tensor]], Any]) -> None:
                if restore is not None:
                    restore(views, cpu_inputs)
                got = run(views)
                if own_check is not None:
                    own_check(got, expected)
                else:
                    _check_logical(graph, got, expected, cpu_inputs)
                if check_updated is not None:
                    check_updated(views, expected)

            def check_eager() -> None:
                check_results(program)

            timed("eager", lambda: program(views), check_eager, None)
            if with_compile and not interpret:
                made: list[Any] = []

                def compiled() -> Any:
                    # Built inside the check, so that a program torch.compile (or the rendering's
                    # trace) cannot handle is reported as a failed variant, not an abort.
                    if not made:
                        made.append(
                            program.compiled(views)
                            if hasattr(program, "compiled")
                            else torch.compile(program)
                        )
                    return made[0]

                def check_compiled() -> None:
                    check_results(compiled())

                timed("torch.compile", lambda: compiled()(views), check_compiled, None)
            if restore is not None:  # a module's own buffers (running statistics) as they were
                restore(views, cpu_inputs)

        by = {r.name: r for r in results}
        speedups: dict[str, float] = {}
        f = by.get("fuseopt")
        if f is not None and f.ms:
            for other in ("unfused", "eager", "torch.compile"):
                o = by.get(other)
                if o is not None and o.ms:
                    speedups[f"vs_{other.replace('.', '_')}"] = o.ms / f.ms
        return {
            "graph": graph.name,
            "io_bytes": nbytes,
            "copy_same_size_gbps": same_size,
            "kernels": {"fuseopt": len(stage.plan.kernels), "unfused": len(unfused.plan.kernels)},
            "plan_bytes": stage.plan.metrics["bytes"],
            "target": codegen.gpu.name,
            "strategy": strategy,
            "fission": fission,
            "multiprocessors": codegen.gpu.multiprocessors,
            "library_precision": "float32 (TF32 off)" if dev.type == "cuda" else "float32",
            "variants": [r.to_json() for r in results],
            "speedups": speedups,
            "slowest_kernels": slowest,
            "estimated_us": estimates,
            "ok": all(r.ok for r in results),
        }


def kernel_estimates(launches: dict[str, Any]) -> dict[str, float]:
    """Each generated kernel's estimated time (launches.json's cost estimates), by kernel name; a
    split reduction's estimate, which covers both of its kernels, is its first's."""
    return {
        k["name"]: k["estimate"]["us"]
        for la in launches["launches"]
        for k in la.get("kernels", [])
        if k["estimate"] is not None
    }


@contextmanager
def full_precision_library_calls(device: torch.device) -> Iterator[None]:
    """On a GPU, matmuls and convolutions in full float32 (TF32 off) for the duration, as the
    reference computes them on the CPU: with cuDNN's default TF32 convolutions, a ResNet-50's logits
    differ from the reference by 4e-2 in every variant alike (seen on the H200). Every variant
    runs under the same setting, so the library calls stay shared."""
    if device.type != "cuda":
        yield
        return
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _use_interpreter() -> None:
    """Generated kernels run on the CPU only under TRITON_INTERPRET=1, set before triton loads."""
    import os
    import sys

    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    if "triton" in sys.modules:
        raise CheckFailed(
            "--interpret needs TRITON_INTERPRET=1 before triton is imported; set it in the environment"
        )
    os.environ["TRITON_INTERPRET"] = "1"


class GpuTimer:
    """GPU time of a call on `device` (`timing.gpu_ms`; None: the current GPU), with warm-up and
    repetitions in ms as do_bench's."""

    def __init__(self, warmup: int, rep: int, device: torch.device | None = None) -> None:
        self.warmup, self.rep = warmup, rep
        self.device = device

    def timing(self, fn: Callable[[], object]) -> Timing:
        device = self.device or torch.device("cuda", torch.cuda.current_device())
        return gpu_ms(fn, device, self.warmup, self.rep)

    def __call__(self, fn: Callable[[], object]) -> float:
        return self.timing(fn).ms


def gpu_timer(warmup: int, rep: int, device: torch.device | None = None) -> GpuTimer:
    return GpuTimer(warmup, rep, device)


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))
