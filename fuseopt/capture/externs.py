"""Inductor's extern kernels -> extension-1.1 library calls (`aten.<name>.<overload>` on views).

Every extern Inductor emits names the ATen operator it calls: `node.op_overload` (an `out=` overload
such as `aten.baddbmm.out` of an `ExternKernelOut` maps to its functional overload, `default`).
Its arguments are put in the operator's schema order: a `FallbackKernel` rebuilds them with its own
`unflatten_args`; other extern kernels hold the tensors in `inputs`, then `constant_args`, with
`kwargs` by name, which is how Inductor calls them. Tensors become views of their buffer's storage
(size, stride, storage offset of Inductor's layout), literals JSON values (a dtype or memory format
by name, a device as null: the run's device). A multi-result operator's results are the buffers
of its `MultiOutput` children, by result index (null for an unused result).

Refused, naming the operator: mutating or aliasing operators, random ones (the attention family is
tagged random for its dropout, and accepted with `dropout_p == 0`), results that are not tensors,
an argument of a type FORMAT has no literal for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fuseopt.capture.errors import CaptureError
from fuseopt.ir.serialize import nonfinite_text

# Inductor's own extern kernels (python_kernel_name) that may lack an op_overload: the ATen op.
KERNEL_OPS: dict[str, str] = {
    "extern_kernels.mm": "aten.mm.default",
    "extern_kernels.bmm": "aten.bmm.default",
    "extern_kernels.addmm": "aten.addmm.default",
    "extern_kernels.baddbmm": "aten.baddbmm.default",
    "extern_kernels.convolution": "aten.convolution.default",
}

_ENUM_NAMES = {"contiguous_format", "channels_last", "channels_last_3d", "preserve_format"}


@dataclass(frozen=True)
class TensorRef:
    """A tensor argument before rendering: Inductor's buffer and the view through which it is read
    (rendered `{"buffer": b}` when the view is the buffer as declared)."""

    buffer: str
    layout: Any  # fuseopt.capture.layout.Layout


@dataclass
class Call:
    """One library call being built: rendered into the node's `args`/`kwargs`/`outputs` at the end."""

    node: str
    op: str
    args: list[Any]
    kwargs: dict[str, Any]
    outputs: list[str | None]


def functional_overload(node: Any, name: str) -> Any:
    """The functional OpOverload an extern kernel computes (refused: mutating, aliasing, random)."""
    import torch

    op = getattr(node, "op_overload", None)
    kernel = getattr(node, "python_kernel_name", None) or type(node).__name__
    if op is None and kernel in KERNEL_OPS:
        _, opname, overload = KERNEL_OPS[kernel].split(".")
        op = getattr(getattr(torch.ops.aten, opname), overload)
    if not isinstance(op, torch._ops.OpOverload):
        raise CaptureError(f"extern kernel {kernel} names no ATen operator (op_overload {op!r})", node=name)
    schema = op._schema
    if schema.overload_name == "out" or any(a.kwarg_only and a.is_out for a in schema.arguments):
        functional = getattr(op.overloadpacket, "default", None)
        if functional is None:
            raise CaptureError(f"{_label(op)} has no functional overload to call", node=name)
        op = functional
        schema = op._schema
    label = _label(op)
    if op.namespace not in ("aten", "prims"):
        raise CaptureError(
            f"{label} is a custom operator; library calls are ATen and prims operators (a model's own "
            "kernels, such as transformers' grouped_mm_fallback for mixture-of-experts, are not captured)",
            node=name,
        )
    names = {a.name for a in schema.arguments}
    if torch.Tag.nondeterministic_seeded in op.tags and "dropout_p" not in names:
        raise CaptureError(f"{label} is a random operator; random ops are not captured", node=name)
    if schema.is_mutable or any(a.alias_info is not None for a in (*schema.arguments, *schema.returns)):
        raise CaptureError(
            f"{label} mutates or aliases its arguments (not a functional library call)", node=name
        )
    if not schema.returns or any(str(r.type) != "Tensor" for r in schema.returns):
        types = ", ".join(str(r.type) for r in schema.returns) or "nothing"
        raise CaptureError(f"{label} returns {types}; library calls return tensors only", node=name)
    return op


def check_deterministic(op: Any, args: list[Any], kwargs: dict[str, Any], name: str) -> None:
    """Refuse a random call. Operators tagged `nondeterministic_seeded` are random only through
    their dropout (the attention family: `dropout_p`); with `dropout_p == 0` they are deterministic."""
    import torch

    if torch.Tag.nondeterministic_seeded not in op.tags:
        return
    schema = op._schema
    positional = [a.name for a in schema.arguments if not a.kwarg_only]
    values = {**dict(zip(positional, args, strict=False)), **kwargs}
    p = values.get("dropout_p")
    if "dropout_p" in values and isinstance(p, int | float) and not isinstance(p, bool) and p == 0:
        return
    why = f"dropout_p={p}" if "dropout_p" in values else "tagged nondeterministic_seeded"
    raise CaptureError(
        f"{_label(op)} is a random operator ({why}); library calls are deterministic", node=name
    )


def _label(op: Any) -> str:
    ns = op.namespace
    return f"{ns}.{op._schema.name.split('::')[-1]}.{op._overloadname}"


def op_name(op: Any) -> str:
    return _label(op)


def bind(node: Any, op: Any, name: str) -> tuple[list[Any], dict[str, Any]]:
    """Inductor's arguments of the call, by the schema: (positional, kwarg-only), IR nodes as is."""
    import torch._inductor.ir as ir

    schema = op._schema
    if isinstance(node, ir.FallbackKernel):
        args, kwargs = node.unflatten_args(node.inputs, node.constant_args)
        args, given = list(args), {**kwargs}
    else:
        pool = [*node.inputs, *getattr(node, "constant_args", ())]
        given = {**getattr(node, "kwargs", {})}
        args = []
        for a in schema.arguments:
            if a.kwarg_only or a.name in given:
                continue
            if pool:
                given[a.name] = pool.pop(0)
        if pool:
            raise CaptureError(f"{_label(op)}: {len(pool)} arguments more than its schema takes", node=name)
    values: dict[str, Any] = {}
    positional = [a for a in schema.arguments if not a.kwarg_only]
    for a, v in zip(positional, args, strict=False):
        values[a.name] = v
    if len(args) > len(positional):
        raise CaptureError(f"{_label(op)}: {len(args)} positional arguments for {len(positional)}", node=name)
    unknown = sorted(k for k in given if k not in {a.name for a in schema.arguments})
    if unknown:
        raise CaptureError(f"{_label(op)} has no argument(s) {', '.join(unknown)}", node=name)
    values.update(given)
    out_args: list[Any] = []
    out_kwargs: dict[str, Any] = {}
    for a in schema.arguments:
        if a.name not in values:
            if not a.has_default_value():
                raise CaptureError(f"{_label(op)}: argument {a.name} is missing", node=name)
            if a.kwarg_only:
                continue
            values[a.name] = a.default_value
        if a.kwarg_only:
            out_kwargs[a.name] = values[a.name]
        else:
            out_args.append(values[a.name])
    return out_args, out_kwargs


def literal(value: Any, tensor: Callable[[Any], TensorRef], name: str, where: str) -> Any:
    """An argument as a JSON value: tensors through `tensor`, lists item by item."""
    import sympy
    import torch
    import torch._inductor.ir as ir

    if isinstance(value, float) and not math.isfinite(value):
        return nonfinite_text(value)  # JSON has no literal for it: "inf", "-inf" or "nan"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, ir.IRNode):
        if isinstance(value, ir.NoneAsConstantBuffer):
            return None
        return tensor(value)
    if isinstance(value, sympy.Basic):
        if value.is_Integer:
            return int(value)
        if value.is_Float or value.is_Rational or value in (sympy.oo, -sympy.oo, sympy.nan):
            return literal(float(value), tensor, name, where)
        raise CaptureError(f"argument {where} is the symbolic value {value} (dynamic shapes)", node=name)
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.memory_format):
        text = str(value).removeprefix("torch.")
        if text in _ENUM_NAMES:
            return text
    if isinstance(value, torch.layout) and value == torch.strided:
        return "strided"
    if isinstance(value, torch.device):
        return None  # the run's device
    if isinstance(value, list | tuple):
        return [literal(v, tensor, name, f"{where}/{i}") for i, v in enumerate(value)]
    raise CaptureError(
        f"argument {where} is a {type(value).__name__} ({value!r}), which FORMAT has no literal for",
        node=name,
    )


def result_count(op: Any) -> int:
    return len(op._schema.returns)


def multi_output_index(node: Any, name: str) -> int:
    """Which result of its parent a MultiOutput is (`indices == [(tuple, i)]`)."""
    indices = list(getattr(node, "indices", ()))
    if not indices:
        return 0  # the call's one result
    if len(indices) != 1 or indices[0][0] not in (tuple, list) or not isinstance(indices[0][1], int):
        raise CaptureError(
            f"a result selected by {indices} is nested (a Tensor[] result); library calls return tensors",
            node=name,
        )
    return int(indices[0][1])
