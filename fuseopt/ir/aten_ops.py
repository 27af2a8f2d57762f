"""ATen operators of extension-1.1 library calls: found in torch's registry, checked, bound, run.

An op name (`aten.convolution.default`) is split by the format's grammar and looked up part by part
in torch's operator registry (`torch._C._get_schema`, then the overload packet); nothing is ever
evaluated. An op is accepted only if it is functional (no mutated or aliased argument or result,
no `out=` overload, no in-place name), not random (`nondeterministic_seeded`, a Generator
argument), with results of statically known shape, every result a Tensor. Arguments are bound
against its schema (arity, names, types); the results' shapes and dtypes come from running it on
meta tensors (fake tensors where an op has no meta kernel). Rules are tables keyed by schema type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fuseopt.ir.dtypes import DType
from fuseopt.ir.graph import AtenCall, CallArg, EnumArg, View

_OP = re.compile(r"(aten|prims)\.([a-z_][a-z0-9_]{0,63})\.([A-Za-z_][A-Za-z0-9_]{0,63})")

# Enum arguments, given by name: kind -> name -> the torch value (and its source text, `torch.NAME`).
_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
ENUMS: dict[str, dict[str, Any]] = {
    "dtype": dict(_DTYPES),
    "layout": {"strided": torch.strided},
    "memory_format": {
        "contiguous_format": torch.contiguous_format,
        "channels_last": torch.channels_last,
        "channels_last_3d": torch.channels_last_3d,
        "preserve_format": torch.preserve_format,
    },
}
# Ops tagged random only through a dropout argument: deterministic (and accepted) when it is 0.
_RANDOM_THROUGH = {
    "scaled_dot_product_attention": "dropout_p",
    "_scaled_dot_product_attention_math": "dropout_p",
    "_scaled_dot_product_flash_attention": "dropout_p",
    "_scaled_dot_product_flash_attention_for_cpu": "dropout_p",
    "_scaled_dot_product_efficient_attention": "dropout_p",
}
# Non-finite floats, which JSON cannot write as numbers: where the schema takes a float or a Scalar
# (or a list of floats), these strings are those values; everywhere else a string stays a string.
NONFINITE: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_ENUM_OF_TYPE = {"ScalarType": "dtype", "Layout": "layout", "MemoryFormat": "memory_format"}
# Tags that make an op unusable as a pure library call, and why.
_REFUSED_TAGS = {
    "nondeterministic_seeded": "it is random (tagged nondeterministic_seeded)",
    "inplace": "it mutates its input (in place)",
    "inplace_view": "it changes its input's view in place",
    "out": "it is an out= overload",
    "maybe_aliasing_or_mutating": "it may return an alias of its input or mutate it",
    "dynamic_output_shape": "its results' shapes depend on the data",
    "data_dependent_output": "its results depend on reading data at trace time",
}


class CallProblem(Exception):
    """A bad library call: the message and where, as a pointer suffix under the node ("op",
    "args/2", "args/0/1", "kwargs/alpha", "outputs/1"; "" for the node itself)."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


@dataclass(frozen=True)
class Operator:
    qualname: str  # aten.convolution.default
    overload: Any  # torch._ops.OpOverload
    schema: Any  # torch.FunctionSchema


def resolve_op(op: str) -> Operator:
    """The registered functional, deterministic operator `op` names; CallProblem at "op" otherwise."""
    m = _OP.fullmatch(op)
    if m is None or "__" in op:
        raise CallProblem(
            f"{op!r} is not an ATen operator name: namespace.name.overload with namespace aten or "
            "prims, e.g. aten.convolution.default",
            "op",
        )
    ns, name, overload = m.groups()
    try:
        schema = torch._C._get_schema(f"{ns}::{name}", "" if overload == "default" else overload)
    except RuntimeError:
        raise CallProblem(_unknown(ns, name, overload), "op") from None
    packet = getattr(getattr(torch.ops, ns), name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket) or overload not in packet.overloads():
        raise CallProblem(_unknown(ns, name, overload), "op")
    opo = getattr(packet, overload)
    why = _not_functional(name, overload, schema, opo)
    if why is not None:
        raise CallProblem(f"{op} cannot be a library call: {why}", "op")
    return Operator(op, opo, schema)


def _unknown(ns: str, name: str, overload: str) -> str:
    try:
        packet = getattr(getattr(torch.ops, ns), name)
        known = sorted(packet.overloads()) if isinstance(packet, torch._ops.OpOverloadPacket) else []
    except (AttributeError, RuntimeError):
        known = []
    if not known:
        return f"unknown operator {ns}.{name}: torch has no such {ns} operator"
    return f"unknown overload {ns}.{name}.{overload}; {ns}.{name} has: {', '.join(known)}"


def _not_functional(name: str, overload: str, schema: Any, opo: Any) -> str | None:
    if name.endswith("_"):
        return "it works in place (its name ends in '_'); use the functional operator"
    if overload == "out" or overload.endswith("_out") or any(a.is_out for a in schema.arguments):
        return "it is an out= overload; use the functional overload, with `outputs`"
    for a in schema.arguments:
        if a.alias_info is not None:
            what = "writes" if a.alias_info.is_write else "aliases"
            return f"it {what} its argument {a.name!r}"
        if "Generator" in str(a.real_type):
            return f"it is random (argument {a.name!r} is a Generator)"
    for j, r in enumerate(schema.returns):
        if r.alias_info is not None:
            return f"its result {j} aliases an argument (a view); use the copying operator"
        if str(r.real_type) != "Tensor":
            return f"its result {j} is a {r.real_type}, not a Tensor"
    if not schema.returns:
        return "it returns nothing"
    if schema.is_mutable:
        return "it mutates an argument"
    for tag in opo.tags:
        if tag.name == "nondeterministic_seeded" and name in _RANDOM_THROUGH:
            continue  # checked on the bound arguments (`_check_dropout`)
        why = _REFUSED_TAGS.get(tag.name)
        if why is not None:
            return why
    return None


# -- binding ------------------------------------------------------------------------------------


class _Mismatch(Exception):
    """A value that does not fit its parameter's type; `at`: the list indices down to it."""

    def __init__(self, message: str, at: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.at = message, at


def bind(
    operator: Operator, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[tuple[CallArg, ...], tuple[tuple[str, CallArg], ...]]:
    """`args`/`kwargs` (views already resolved to `View`s, literals as read) bound against the
    schema: every value converted to its parameter's type; CallProblem at the first bad one."""
    params = list(operator.schema.arguments)
    positional = [a for a in params if not a.kwarg_only]
    op = operator.qualname
    if len(args) > len(positional):
        raise CallProblem(
            f"{op} takes {len(positional)} positional argument{'s' * (len(positional) != 1)} "
            f"({_signature(positional)}), got {len(args)}",
            f"args/{len(positional)}" if len(positional) else "args",
        )
    bound_args = tuple(
        _convert_at(a, v, op, f"args/{j}") for j, (a, v) in enumerate(zip(positional, args, strict=False))
    )
    by_name = {a.name: a for a in params}
    given = {a.name for a in positional[: len(args)]}
    bound_kwargs: list[tuple[str, CallArg]] = []
    for k, v in kwargs.items():
        a = by_name.get(k)
        where = f"kwargs/{k}"
        if a is None:
            raise CallProblem(f"{op} has no argument {k!r}; its arguments: {_signature(params)}", where)
        if k in given:
            raise CallProblem(f"{op}: argument {k!r} is given both by position and by name", where)
        bound_kwargs.append((k, _convert_at(a, v, op, where)))
        given.add(k)
    for j, a in enumerate(params):
        if a.name not in given and not a.has_default_value():
            where = "args" if not a.kwarg_only else "kwargs"
            place = f"position {j}" if not a.kwarg_only else "keyword-only"
            raise CallProblem(f"{op}: missing argument {a.name!r} ({a.real_type}, {place})", where)
    _check_dropout(operator, positional, bound_args, dict(bound_kwargs))
    return bound_args, tuple(bound_kwargs)


def _check_dropout(
    operator: Operator, positional: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """An attention op is random only with dropout: its dropout probability must be 0."""
    name = operator.qualname.split(".")[1]
    arg = _RANDOM_THROUGH.get(name)
    if arg is None:
        return
    names = [a.name for a in positional]
    if arg in kwargs:
        value, where = kwargs[arg], f"kwargs/{arg}"
    elif arg in names and names.index(arg) < len(args):
        value, where = args[names.index(arg)], f"args/{names.index(arg)}"
    else:
        return  # the schema's default, 0
    if value != 0:
        raise CallProblem(
            f"{operator.qualname} with {arg}={value} is random (dropout); a library call must be "
            f"deterministic: {arg} must be 0",
            where,
        )


def _signature(params: Sequence[Any]) -> str:
    return ", ".join(f"{a.real_type} {a.name}" for a in params)


def _convert_at(param: Any, value: Any, op: str, where: str) -> CallArg:
    try:
        return _convert(param.real_type, value, getattr(param, "N", None))
    except _Mismatch as exc:
        item = f" (item {'/'.join(str(j) for j in exc.at)})" if exc.at else ""
        raise CallProblem(
            f"{op}: argument {param.name!r} is {param.real_type}, {exc.message}{item}",
            where + "".join(f"/{j}" for j in exc.at),
        ) from None


def _convert(t: Any, v: Any, n: int | None = None) -> CallArg:
    if isinstance(t, torch._C.OptionalType):
        return None if v is None else _convert(t.getElementType(), v, n)
    if isinstance(t, torch._C.ListType):
        elem = t.getElementType()
        if isinstance(v, tuple):
            return tuple(_convert_item(elem, j, x) for j, x in enumerate(v))
        if n is not None and not isinstance(v, View) and str(elem) in ("int", "SymInt", "float", "bool"):
            return _convert(elem, v)  # an int for int[2], as torch takes it
        raise _Mismatch(f"so it takes a list, not {_what(v)}")
    rule = _LEAVES.get(str(t))
    if rule is None:
        raise _Mismatch(f"which a library call cannot pass (got {_what(v)})")
    return rule(v)


def _convert_item(t: Any, j: int, v: Any) -> CallArg:
    try:
        return _convert(t, v)
    except _Mismatch as exc:
        raise _Mismatch(exc.message, (j, *exc.at)) from None


def _what(v: Any) -> str:
    if isinstance(v, View):
        return f"a view of {v.buffer!r}"
    if isinstance(v, tuple):
        return "a list"
    if v is None:
        return "null"
    return f"{type(v).__name__} {v!r}" if not isinstance(v, str) else f"the string {v!r}"


def _tensor(v: Any) -> CallArg:
    if not isinstance(v, View):
        raise _Mismatch(f"so it takes a tensor view ({{buffer: ...}}), not {_what(v)}")
    return v


def _int(v: Any) -> CallArg:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Mismatch(f"not {_what(v)}")
    return v


def _float(v: Any) -> CallArg:
    if isinstance(v, str):
        return _nonfinite(v, "not")
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _Mismatch(f"not {_what(v)}")
    return math.nan if isinstance(v, float) and math.isnan(v) else v


def _nonfinite(v: str, lead: str) -> float:
    """The float that a string stands for where a float is expected ("inf", "-inf", "nan"); one NaN
    object for every NaN, so graphs read twice compare equal."""
    value = NONFINITE.get(v)
    if value is None:
        spelt = ", ".join(repr(k) for k in NONFINITE)
        raise _Mismatch(f"{lead} {_what(v)} (a non-finite float is one of the strings {spelt})")
    return value


def _bool(v: Any) -> CallArg:
    if not isinstance(v, bool):
        raise _Mismatch(f"not {_what(v)}")
    return v


def _str(v: Any) -> CallArg:
    if not isinstance(v, str):
        raise _Mismatch(f"not {_what(v)}")
    return v


def _scalar(v: Any) -> CallArg:
    if isinstance(v, str):
        return _nonfinite(v, "so it takes a number or a bool, not")
    if not isinstance(v, bool | int | float):
        raise _Mismatch(f"so it takes a number or a bool, not {_what(v)}")
    return math.nan if isinstance(v, float) and math.isnan(v) else v


def _enum(kind: str) -> Callable[[Any], CallArg]:
    names = ENUMS[kind]

    def rule(v: Any) -> CallArg:
        if not isinstance(v, str) or v not in names:
            raise _Mismatch(f"one of {', '.join(names)} (a string), not {_what(v)}")
        return EnumArg(kind, v)

    return rule


def _device(v: Any) -> CallArg:
    raise _Mismatch(f"which is null only (the run's device), not {_what(v)}")


_LEAVES: dict[str, Callable[[Any], CallArg]] = {
    "Tensor": _tensor,
    "int": _int,
    "SymInt": _int,
    "float": _float,
    "SymFloat": _float,
    "bool": _bool,
    "SymBool": _bool,
    "str": _str,
    "number": _scalar,
    "Scalar": _scalar,
    "Device": _device,
    **{t: _enum(kind) for t, kind in _ENUM_OF_TYPE.items()},
}


# -- running ------------------------------------------------------------------------------------


def torch_value(arg: CallArg, tensor: Callable[[View], torch.Tensor]) -> Any:
    """A bound argument as torch takes it: views through `tensor`, enums as torch's, lists as lists."""
    if isinstance(arg, View):
        return tensor(arg)
    if isinstance(arg, EnumArg):
        return ENUMS[arg.kind][arg.name]
    if isinstance(arg, tuple):
        return [torch_value(a, tensor) for a in arg]
    return arg


def run_call(operator: Any, call: AtenCall, tensor: Callable[[View], torch.Tensor]) -> tuple[Any, ...]:
    """Call `operator` (an OpOverload) on the call's arguments; its results as a tuple."""
    args = [torch_value(a, tensor) for a in call.args]
    kwargs = {k: torch_value(v, tensor) for k, v in call.kwargs}
    result = operator(*args, **kwargs)
    return tuple(result) if isinstance(result, tuple | list) else (result,)


def overload_of(op: str) -> Any:
    """The OpOverload of a validated op name (resolved again: graphs are built once, run often)."""
    return resolve_op(op).overload


def check_results(operator: Operator, call: AtenCall, dtype_of: Callable[[str], DType]) -> None:
    """Shapes and dtypes of the results, from meta (or fake) tensors, against `call.outputs`;
    CallProblem at the first mismatch, or where the op refuses the arguments."""
    results = _meta_results(operator, call, dtype_of)
    if len(results) != len(call.outputs):
        raise CallProblem(
            f"{operator.qualname} has {len(results)} result{'s' * (len(results) != 1)}; `outputs` "
            f"names {len(call.outputs)} (one entry per result, null for an unused one)",
            "outputs",
        )
    for j, (r, out) in enumerate(zip(results, call.outputs, strict=True)):
        if out is None:
            continue
        want = _DTYPES[dtype_of(out.buffer).value]
        if tuple(r.shape) != out.shape or r.dtype != want:
            got = f"{list(r.shape)} {str(r.dtype).removeprefix('torch.')}"
            raise CallProblem(
                f"{operator.qualname}'s result {j} is {got}, but its output {out.buffer!r} is "
                f"{list(out.shape)} {dtype_of(out.buffer).value}",
                f"outputs/{j}",
            )


def _meta_results(operator: Operator, call: AtenCall, dtype_of: Callable[[str], DType]) -> tuple[Any, ...]:
    def meta(v: View) -> torch.Tensor:
        return torch.empty_strided(v.shape, v.stride, dtype=_DTYPES[dtype_of(v.buffer).value], device="meta")

    try:
        try:
            return run_call(operator.overload, call, meta)
        except NotImplementedError:
            from torch._subclasses.fake_tensor import FakeTensorMode

            def fake(v: View) -> torch.Tensor:
                return torch.empty_strided(v.shape, v.stride, dtype=_DTYPES[dtype_of(v.buffer).value])

            with FakeTensorMode():
                return run_call(operator.overload, call, fake)
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as exc:
        name = type(exc).__name__
        if "DynamicOutputShape" in name or "DataDependent" in name:
            raise CallProblem(f"{operator.qualname}: its results' shapes depend on the data", "op") from None
        first = (str(exc).strip().splitlines() or [name])[0][:400]
        raise CallProblem(
            f"{first} ({operator.qualname} refuses these arguments, run on meta tensors of the views' "
            "shapes, strides and dtypes)",
            "",  # the node: torch's message may blame any argument, positional or keyword
        ) from None
