"""Makes Inductor, running on the CPU, build and fuse scheduler nodes as it does for a GPU.

Inductor picks its CPU code generator, merges loops as it creates nodes, normalizes their memory
dependencies and skips loop ordering after fusion (LOAF) whenever a node's device is the CPU. A
capture here must show what a GPU run does, so `gpu_emulation()` selects the Triton backend for the
CPU (`cpu_backend="triton"`, a supported Inductor setting) and swaps, for its duration only, the few
device tests that gate those decisions. Each swap is a module attribute or a method, looked up with
getattr so that a torch without it (2.11 lacks some) is reported, not broken. Everything is restored
on exit, also on errors. What the CPU lowering still does differently is listed in docs/capture.md.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from types import CodeType
from typing import Any


@dataclass
class Emulation:
    """What `gpu_emulation` changed: the patches applied and those this torch does not have."""

    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _cpu_counts_as_gpu(original: Callable[[str | None], bool]) -> Callable[[str | None], bool]:
    def is_gpu(device: str | None) -> bool:
        return device == "cpu" or original(device)

    return is_gpu


def _config_patches(config: Any) -> dict[str, Any]:
    """Inductor settings for a GPU-like plan that is only scheduled, never compiled."""
    wanted: dict[str, Any] = {
        "cpu_backend": "triton",
        # A cache hit skips lowering and scheduling altogether: there would be nothing to capture.
        "fx_graph_cache": False,
        "fx_graph_remote_cache": False,
    }
    # compile_fx turns comprehensive padding (of large strides) off when no input is on a GPU.
    wanted["disable_padding_cpu"] = False
    # On a GPU, var_mean of fp32 uses Welford unless the reduction is unrolled (<= 8 elements);
    # the CPU lowering switches to the two-pass form up to cpp.use_two_step_variance_threshold.
    if hasattr(config, "cpp") and hasattr(config.cpp, "use_two_step_variance_threshold"):
        wanted["cpp.use_two_step_variance_threshold"] = config.unroll_reductions_threshold
    return {k: v for k, v in wanted.items() if has_config(config, k)}


def has_config(config: Any, dotted: str) -> bool:
    """Whether `config` (an Inductor config module) has the option `dotted` (`cpp.threads`)."""
    obj = config
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


@contextmanager
def gpu_emulation() -> Iterator[Emulation]:
    """Run Inductor's lowering and scheduler on CPU tensors as if they lived on a GPU.

    Only scheduling is emulated: kernels are not compiled (the caller stops after fusion).
    """
    import torch._functorch.config as functorch_config
    import torch._inductor.fx_passes.post_grad as post_grad
    import torch._inductor.ir as ir
    import torch._inductor.scheduler as scheduler
    from torch._inductor import config

    report = Emulation()
    saved: list[tuple[Any, str, Any]] = []

    def swap(owner: Any, attr: str, make: Callable[[Any], Any], label: str) -> None:
        original = getattr(owner, attr, None)
        replacement = None if original is None else make(original)
        if replacement is None:
            report.missing.append(label)
            return
        saved.append((owner, attr, original))
        setattr(owner, attr, replacement)
        report.applied.append(label)

    # Lowering: loop merging at node creation (simplify_and_reorder), unrolling of small
    # reductions to a single output, the template dependency normalization.
    swap(ir, "is_gpu", _cpu_counts_as_gpu, "ir.is_gpu")
    # Lowering: the CPU-only thresholds for realizing reused or heavy pointwise values.
    swap(ir, "is_cpu", lambda _orig: lambda _x: False, "ir.is_cpu")
    # Scheduler: `should_normalize` in SchedulerNode._compute_attrs (keep unmerged dependencies
    # for LOAF) and the other module-level device tests.
    swap(scheduler, "is_gpu", _cpu_counts_as_gpu, "scheduler.is_gpu")
    # ... except create_backend, which asserts that a GPU device carries an index.
    swap(
        scheduler.Scheduler,
        "create_backend",
        _with_original_is_gpu(scheduler, saved),
        "Scheduler.create_backend",
    )
    # LOAF's bail-outs (shared_data_after_reordering_loop, loop index inversion, reindexing a
    # pointwise node to a reduction's shape) test node.is_cpu().
    swap(scheduler.BaseSchedulerNode, "is_cpu", lambda _orig: lambda _self: False, "BaseSchedulerNode.is_cpu")
    # Post-grad patterns: addmm whose users are all pointwise is split into mm + a pointwise bias
    # add on a GPU (unfuse_bias_add_to_pointwise), so that the bias fuses into the epilogue.
    swap(post_grad, "is_gpu", _cpu_counts_as_gpu, "post_grad.is_gpu")
    # Lowering tests written inline (`x.get_device().type == "cpu"`) have no attribute to swap: the
    # function's code is swapped for a copy compiled from its own source with that one test
    # replaced (reported missing when the source is not as expected). See _SOURCE_EDITS.
    import torch._inductor.lowering as lowering

    for fn_name, old, new, label in _SOURCE_EDITS:
        fn = getattr(lowering, fn_name, None)
        if fn is None:
            report.missing.append(label)
            continue
        fn = inspect.unwrap(fn)
        swap(fn, "__code__", _code_with(fn, old, new), label)
    # Mix-order and nested reductions are enabled for the GPU Triton backend only.
    swap(
        scheduler, "_is_gpu_triton_backend", _triton_on_cpu_counts(config), "scheduler._is_gpu_triton_backend"
    )

    try:
        with ExitStack() as stack:
            stack.enter_context(config.patch(_config_patches(config)))
            if hasattr(functorch_config, "enable_autograd_cache"):
                stack.enter_context(functorch_config.patch(enable_autograd_cache=False))
            yield report
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)


# (function of torch._inductor.lowering, its CPU test, the GPU's answer, label)
_SOURCE_EDITS: tuple[tuple[str, str, str, str], ...] = (
    # cat: always a ConcatKernel on the CPU (inputs computed into slices of the output); on a GPU
    # one pointwise node of masked loads when the inputs are few and simple and used pointwise.
    ("cat", 'cpu_device = inputs[0].get_device().type == "cpu"', "cpu_device = False", "lowering.cat"),
    # x / constant: a true division on the CPU, x * (1 / constant) on a GPU.
    ("div_prim", 'a.get_device().type != "cpu"', "True", "lowering.div_prim"),
    # constant_pad_nd as a cat with a fill: skipped on the CPU.
    ("_pad_as_cat", 'if device is not None and device.type == "cpu":', "if False:", "lowering._pad_as_cat"),
)


def _code_with(func: Any, old: str, new: str) -> Callable[[Any], CodeType | None]:
    """A factory for `swap`: `func`'s code recompiled from its source with the text `old` (which
    must occur exactly once) replaced by `new`; None when the source is not as expected."""

    def make(code: CodeType) -> CodeType | None:
        try:
            lines, first = inspect.getsourcelines(func)
        except (OSError, TypeError):
            return None
        start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), None)
        if start is None:
            return None
        source = textwrap.dedent("".join(lines[start:]))
        if source.count(old) != 1:
            return None
        tree = ast.parse(source.replace(old, new))
        ast.increment_lineno(tree, first + start - 1)
        module = compile(tree, code.co_filename, "exec")
        for const in module.co_consts:
            if isinstance(const, CodeType) and const.co_name == code.co_name:
                return const if const.co_freevars == code.co_freevars else None
        return None

    return make


def _with_original_is_gpu(scheduler: Any, saved: list[tuple[Any, str, Any]]) -> Callable[[Any], Any]:
    def make(create_backend: Any) -> Any:
        def wrapper(self: Any, device: Any) -> Any:
            original = next((o for owner, attr, o in saved if owner is scheduler and attr == "is_gpu"), None)
            if original is None:
                return create_backend(self, device)
            emulated = scheduler.is_gpu
            scheduler.is_gpu = original
            try:
                return create_backend(self, device)
            finally:
                scheduler.is_gpu = emulated

        return wrapper

    return make


def _triton_on_cpu_counts(config: Any) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def is_gpu_triton_backend(node1: Any, node2: Any) -> bool:
            devices = [n.get_device() for n in (node1, node2)]
            if all(d is not None and d.type == "cpu" for d in devices):
                return bool(config.cpu_backend == "triton")
            return bool(original(node1, node2))

        return is_gpu_triton_backend

    return make
