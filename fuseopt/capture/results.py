"""Which of Inductor's graph outputs each result of the program is.

Dynamo hands Inductor each tensor the program computes and returns once, in the order they are
first returned: a tensor returned twice (`return y, y`) is one graph output, and an input
returned as it is (`return y, x`) is no graph output at all (Dynamo returns it itself), unless
it went through a no-op (`x.contiguous()` returns `x`), which may be one. So the
graph's outputs are the program's results only when it returns neither. `result_specs` runs the
program once in eager torch on the example inputs to see which result is which (putting back
the inputs it writes in place), and reads a repeated result from the same buffer as its first
occurrence, an input from its input buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fuseopt.capture.errors import CaptureError
from fuseopt.capture.layout import Layout, OutputSpec

if TYPE_CHECKING:
    from fuseopt.capture.convert import Draft


def draft_results(
    fn: Callable[..., Any], example_inputs: Sequence[Any], draft: Draft, real_inputs: Mapping[str, Any]
) -> list[OutputSpec]:
    """`result_specs` of a converted graph: its graph outputs, input tensors and in-place writes."""
    new_values = {i: b for b, i in draft.mutations.items()}  # input -> its new value's buffer
    inputs = {b: real_inputs[b] for b in draft.inputs}
    return list(result_specs(fn, example_inputs, draft.outputs, inputs, new_values))


def result_specs(
    fn: Callable[..., Any],
    example_inputs: Sequence[Any],
    graph_outputs: Sequence[OutputSpec],
    inputs: Mapping[str, Any],
    new_values: Mapping[str, str],
) -> tuple[OutputSpec, ...]:
    """The program's tensor results in order, each as an OutputSpec: a graph output (in turn), a
    repeat of an earlier result, or an input of `inputs` (buffer -> the tensor): its buffer, or
    the buffer of its new value where the program writes it in place (`new_values`: input buffer
    -> that buffer). A Python number among the results (`.item()`'s) is the 0-d graph output
    Inductor gives it. Where the eager run fails, the graph's outputs are taken as its results."""
    import torch

    results = _probe(fn, example_inputs, [inputs[b] for b in new_values])
    if results is None:
        return tuple(graph_outputs)
    by_id = {id(t): new_values.get(b, b) for b, t in inputs.items()}
    specs: list[OutputSpec] = []
    seen: dict[int, OutputSpec] = {}
    outs = list(graph_outputs)
    for i, t in enumerate(results):
        out = outs[0] if outs else None
        if not isinstance(t, torch.Tensor):  # a Python number: `.item()`'s is a 0-d graph output
            if out is not None and out.layout.shape == ():
                specs.append(outs.pop(0))
            continue
        if id(t) in seen:  # one traced value returned twice is one graph output; two values
            spec = seen[id(t)]  # that are one tensor (`x.contiguous()` twice) are two
            if out == spec:
                outs.pop(0)
        elif id(t) in by_id:  # Dynamo returns an input itself, unless a no-op made it a graph output
            spec = OutputSpec(by_id[id(t)], Layout(tuple(t.shape), tuple(t.stride()), 0, _dtype(t)))
            if out == spec:
                outs.pop(0)
        elif out is not None and out.layout.shape == tuple(t.shape) and out.layout.dtype == _dtype(t):
            spec = outs.pop(0)
        else:
            raise CaptureError(
                f"the program's result {i} ({_describe(t)}) is not Inductor's next graph output "
                f"({'none left' if out is None else list(out.layout.shape)}): the results cannot be read back"
            )
        seen[id(t)] = spec
        specs.append(spec)
    if outs:
        raise CaptureError(f"{len(outs)} of Inductor's graph outputs are no result of the program")
    return tuple(specs)


def _probe(fn: Callable[..., Any], example_inputs: Sequence[Any], written: Sequence[Any]) -> list[Any] | None:
    """The program's tensor and number results, run once in eager torch; the inputs it writes in place are
    put back. None where it fails.

    Not under fake tensors: a model that caches a tensor it computes (BEiT's relative position
    index, an `lru_cache`) would keep a fake one and fail on its next real call."""
    import torch
    import torch.utils._pytree as pytree

    saved = [t.detach().clone() for t in written]
    try:
        with torch.no_grad():
            result = fn(*example_inputs)
        return [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor | int | float)]
    except Exception:  # the compile succeeded, so this should not happen: the graph's outputs stand
        return None
    finally:
        with torch.no_grad():
            for t, s in zip(written, saved, strict=True):
                t.copy_(s)


def _dtype(t: Any) -> Any:
    from fuseopt.capture.body import dtype_of

    return dtype_of(t.dtype)


def _describe(t: Any) -> str:
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"
