"""Extension-1.1 library calls in the generated wrapper: `torch.ops.<op>(...)` on `as_strided` views.

The op's path is emitted only after checking it against the format's op grammar; every string
argument is a string literal (`source_text.literal`), every enum a fixed `torch.NAME` from
`fuseopt.ir.aten_ops.ENUMS`, every number exact (`float("inf")` and `float("nan")` spelt out).
Results are checked at run time (`_take_results`: count, shape, dtype) and become their output
buffers' storage: a result laid out as its buffer (its strides, from offset 0, owning exactly that
storage and sharing none with what the call read) is taken as it is, as Inductor takes an extern
kernel's result; any other is copied into a new storage through the declared layout. Long
statements are split as `ruff format` splits them: flat if the line fits, else the arguments on
one indented line, else one a line.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fuseopt.codegen.common import TORCH_DTYPE
from fuseopt.codegen.layout import LINE_LENGTH
from fuseopt.codegen.source_text import UnsafeSourceError, ident, literal, python_name
from fuseopt.ir.graph import AtenCall, BufferInfo, CallArg, EnumArg, View

_OP = re.compile(r"(aten|prims)\.[a-z_][a-z0-9_]{0,63}\.[A-Za-z_][A-Za-z0-9_]{0,63}")

CALL_RUNTIME = '''\
def _take_results(result: object, outputs: list, op: str, reads: list) -> list:
    """A library call's results, checked against their outputs (size, shape, stride, offset,
    dtype; None: unused), as flat storages: a result laid out as its output (its strides where
    a dimension has more than one element), owning exactly its storage and sharing none with what
    the call read or another result, as it is; else a copy."""
    results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(results) != len(outputs):
        raise RuntimeError(f"{op} returned {len(results)} results, expected {len(outputs)}")
    taken = []
    held = {t.untyped_storage().data_ptr() for t in reads}
    for j, (r, out) in enumerate(zip(results, outputs, strict=True)):
        if out is None:
            continue
        size, shape, stride, offset, dtype = out
        if not isinstance(r, torch.Tensor) or tuple(r.shape) != shape or r.dtype != dtype:
            got = f"{list(r.shape)} {r.dtype}" if isinstance(r, torch.Tensor) else type(r).__name__
            raise RuntimeError(f"{op}: result {j} is {got}, expected {list(shape)} {dtype}")
        storage = r.untyped_storage()
        if (
            offset == 0
            and r.numel() == size
            and all(a == b for a, b, n in zip(r.stride(), stride, shape, strict=True) if n > 1)
            and r.storage_offset() == 0
            and storage.nbytes() == size * r.element_size()
            and storage.data_ptr() not in held
        ):
            taken.append(torch.as_strided(r, (size,), (1,), 0))
        else:
            flat = _empty(size, dtype, r.device)
            torch.as_strided(flat, shape, stride, offset).copy_(r)
            taken.append(flat)
        held.add(taken[-1].untyped_storage().data_ptr())
    return taken
'''


@dataclass(frozen=True)
class Call:
    """A call to print: `head(items...)`, split as `ruff format` splits it when too long."""

    head: str  # `f(` without the parenthesis
    items: tuple[_Src, ...]


@dataclass(frozen=True)
class _List:
    items: tuple[_Src, ...]


_Src = str | Call | _List


def op_path(op: str) -> str:
    """`torch.ops.aten.name.overload` for a validated op name (checked again here)."""
    if not isinstance(op, str) or _OP.fullmatch(op) is None or "__" in op:
        raise UnsafeSourceError(f"{op!r} is not an ATen operator name of the graph format")
    return f"torch.ops.{op}"


def call_lines(
    call: AtenCall, names: Mapping[str, str], buffers: Mapping[str, BufferInfo], indent: int
) -> list[str]:
    """The statement that runs `call` and binds its results' storages, as lines (without `indent`)."""
    args: list[_Src] = [_arg(a, names) for a in call.args]
    for k, v in call.kwargs:
        src = _arg(v, names)
        if keyword.iskeyword(ident(k)):  # a schema may name an argument like a keyword
            args.append("**{" + literal(k) + ": " + _flat(src) + "}")
        else:
            args.append(f"{k}={_flat(src)}" if isinstance(src, str) else Call(f"{k}=", (src,)))
    outputs = [None if v is None else (buffers[v.buffer], v) for v in call.outputs]
    reads = list(dict.fromkeys(v.buffer for v in call.views()))
    return take_lines(Call(op_path(call.op), tuple(args)), outputs, call.op, reads, names, indent)


def take_lines(
    result: _Src,
    outputs: Sequence[tuple[BufferInfo, View] | None],
    op: str,
    reads: Sequence[str],
    names: Mapping[str, str],
    indent: int,
) -> list[str]:
    """`(out, ...) = _take_results(result, [output specs], op, [buffers read])`, as lines (without
    `indent`): each used output `(buffer, the view the result fills)`."""
    specs = _List(tuple("None" if o is None else _spec(*o) for o in outputs))
    bound = [names[ident(b.name)] for b, _ in (o for o in outputs if o is not None)]
    target = "(" + ", ".join(bound) + ("," if len(bound) == 1 else "") + ")"
    read = _List(tuple(names[ident(b)] for b in reads))
    stmt = Call(f"{target} = _take_results", (result, specs, literal(op), read))
    return [line[indent:] for line in _format(stmt, indent)]


def _spec(b: BufferInfo, v: View) -> str:
    """An output's (storage size, shape, stride, offset, dtype), as `_take_results` reads it."""
    return f"({int(b.storage_size)}, {_ints(v.shape)}, {_ints(v.stride)}, {int(v.offset)}, {TORCH_DTYPE[b.dtype]})"


def _arg(a: CallArg, names: Mapping[str, str]) -> _Src:
    if isinstance(a, View):
        return _view(a, names)
    if isinstance(a, EnumArg):
        from fuseopt.ir.aten_ops import ENUMS  # here, not at the top: aten_ops imports torch

        if a.name not in ENUMS.get(a.kind, {}):
            raise UnsafeSourceError(f"{a.name!r} is not a torch {a.kind}")
        return f"torch.{python_name(a.name)}"
    if isinstance(a, tuple):
        return _List(tuple(_arg(x, names) for x in a))
    if a is None or isinstance(a, bool):
        return repr(a)
    if isinstance(a, int):
        return repr(int(a))
    if isinstance(a, float):
        if math.isnan(a):
            return 'float("nan")'
        if math.isinf(a):
            return 'float("inf")' if a > 0 else 'float("-inf")'
        return repr(float(a))
    if isinstance(a, str):
        return literal(a)
    raise UnsafeSourceError(f"a library call argument of type {type(a).__name__}")


def _view(v: View, names: Mapping[str, str]) -> str:
    return f"_view({names[ident(v.buffer)]}, {_ints(v.shape)}, {_ints(v.stride)}, {int(v.offset)})"


def _ints(xs: tuple[int, ...]) -> str:
    return repr(tuple(int(x) for x in xs))


def _flat(s: _Src) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, _List):
        return "[" + ", ".join(_flat(x) for x in s.items) + "]"
    if s.head.endswith("="):  # a keyword argument whose value is a list
        return s.head + _flat(s.items[0])
    return s.head + "(" + ", ".join(_flat(x) for x in s.items) + ")"


def _format(s: _Src, indent: int, suffix: str = "") -> list[str]:
    """`s` at `indent` followed by `suffix` (a comma), split like ruff format when too long."""
    pad = " " * indent
    flat = _flat(s)
    if len(pad) + len(flat) + len(suffix) <= LINE_LENGTH or isinstance(s, str):
        return [pad + flat + suffix]
    if isinstance(s, Call) and s.head.endswith("="):
        inner = _format(s.items[0], indent, suffix)
        return [pad + s.head + inner[0].lstrip(" "), *inner[1:]]
    open_, close = ("[", "]") if isinstance(s, _List) else (s.head + "(", ")")
    body = ", ".join(_flat(x) for x in s.items)
    if len(pad) + 4 + len(body) <= LINE_LENGTH:
        return [pad + open_, pad + "    " + body, pad + close + suffix]
    lines = [pad + open_]
    for x in s.items:
        lines.extend(_format(x, indent + 4, ","))
    return [*lines, pad + close + suffix]
