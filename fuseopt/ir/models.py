"""Pydantic models of docs/format.md v1: the single source of truth for the input's shape.

They check structure only (types, names, ranges); expressions stay text here and are parsed, and
the graph checked as a whole, by `fuseopt.ir.build`. `schemas/graph.schema.json` is generated
from `Graph` (`fuseopt schema`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from fuseopt.ir.dtypes import DType

FORMAT_ID = "fuseopt-graph/1"
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
GRAPH_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
MAX_LOOP_SIZE = 2**31 - 1
MAX_INT = 2**63 - 1
# Caps beyond docs/format.md's, so that hostile files fail fast with a located error instead of
# exhausting time or memory (files are also capped at 16 MiB by the loader). Real graphs are far
# below them: torch tensors have at most a handful of dims, Inductor graphs thousands of nodes.
MAX_DIMS = 32  # entries of a loops/reduce list, and dims of a buffer's shape/stride
MAX_ITEMS = 1_000_000  # buffers, and nodes
MAX_CHOICES = 1024  # autotuning candidates of one template
# Template choice names: free text on one line, i.e. no C0/C1 control characters and no U+2028 or
# U+2029 (lone surrogates never get this far: pydantic rejects them in every string).
CHOICE_NAME_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]+$"
_LINE_BREAKING = re.compile(r"[\u0000-\u001f\u007f-\u009f\u2028\u2029]")

Name = Annotated[str, Field(pattern=NAME_PATTERN)]
LoopSize = Annotated[int, Field(ge=1, le=MAX_LOOP_SIZE, strict=True)]
Loop = tuple[Name, LoopSize]
Loops = Annotated[tuple[Loop, ...], Field(max_length=MAX_DIMS)]
Expression = Annotated[str, Field(min_length=1, max_length=4096)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class Buffer(_Frozen):
    """A flat storage with a logical shape/stride/offset (docs/format.md "Buffers")."""

    shape: Annotated[
        tuple[Annotated[int, Field(ge=1, le=MAX_INT, strict=True)], ...], Field(max_length=MAX_DIMS)
    ]
    stride: (
        Annotated[
            tuple[Annotated[int, Field(ge=0, le=MAX_INT, strict=True)], ...], Field(max_length=MAX_DIMS)
        ]
        | None
    ) = Field(default=None, description="Default: contiguous row-major.")
    offset: Annotated[int, Field(ge=0, le=MAX_INT, strict=True)] = 0
    dtype: DType
    role: Literal["input", "output", "intermediate"] = "intermediate"

    def strides(self) -> tuple[int, ...]:
        if self.stride is not None:
            return self.stride
        out: list[int] = []
        acc = 1
        for s in reversed(self.shape):
            out.append(acc)
            acc *= s
        return tuple(reversed(out))

    def storage_size(self) -> int:
        """offset + sum((shape[i]-1)*stride[i]) + 1, per docs/format.md."""
        return self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.strides(), strict=False)) + 1

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


class PointwiseNode(_Frozen):
    name: Name
    kind: Literal["pointwise"] = "pointwise"
    loops: Loops = Field(
        description="Ordered, outermost first; the node's initial loop order (at most 32 loops)."
    )
    store: Expression = Field(description="buffer[index] over `loops` variables only.")
    value: Expression


class ReductionNode(_Frozen):
    name: Name
    kind: Literal["reduction"] = "reduction"
    loops: Loops
    reduce: Loops = Field(min_length=1)
    store: Expression
    value: Expression = Field(description="Exactly one top-level reduction call.")


def _one_line(name: str) -> str:
    bad = _LINE_BREAKING.search(name)
    if bad is not None:
        raise ValueError(
            f"a choice name is one line of text: no control characters or line separators "
            f"(found {bad.group()!r} at character {bad.start()})"
        )
    return name


class Choice(_Frozen):
    """An autotuning candidate. `name` is free text on one line (no control characters or line
    separators), such as `triton_mm_4` or `extern_mm`; generated code holds it only as a string
    literal."""

    name: Annotated[
        str,
        Field(min_length=1, max_length=128, json_schema_extra={"pattern": CHOICE_NAME_PATTERN}),
        AfterValidator(_one_line),
    ]
    time_us: Annotated[float, Field(ge=0, allow_inf_nan=False)]


# -- extension 1.1: library calls of ATen operators on views ----------------------------------
# `namespace.name.overload`, namespace aten or prims; no `__` anywhere (dunder operators such as
# `aten.__and__` have functional spellings, `bitwise_and`). Only ever looked up in torch's
# registry by these parts, never evaluated (`fuseopt.ir.aten_ops`).
ATEN_OP_PATTERN = r"^(aten|prims)\.[a-z_][a-z0-9_]{0,63}\.[A-Za-z_][A-Za-z0-9_]{0,63}$"
OP_PATTERN = (
    r"^([A-Za-z_][A-Za-z0-9_]{0,63}|(aten|prims)\.[a-z_][a-z0-9_]{0,63}\.[A-Za-z_][A-Za-z0-9_]{0,63})$"
)
MAX_ARGS = 64  # positional arguments, keyword arguments and results of one call, each
MAX_ARG_LIST = 1024  # items of one list argument (a Tensor[] of a concatenation, an int[] of sizes)
MAX_ARG_LEAVES = 4096  # literals and views of one call, all lists included
MAX_ARG_STRING = 256  # characters of a string argument (`approximate: "tanh"`)
MAX_ARG_DEPTH = 2  # a list of lists at most


def _no_dunder(name: str) -> str:
    if "__" in name:
        raise ValueError(f"{name!r}: a name of a library call may not contain '__'")
    return name


OpName = Annotated[str, Field(pattern=OP_PATTERN, max_length=160), AfterValidator(_no_dunder)]
KwargName = Annotated[str, Field(pattern=NAME_PATTERN), AfterValidator(_no_dunder)]
ViewDims = Annotated[
    tuple[Annotated[int, Field(ge=1, le=MAX_INT, strict=True)], ...], Field(max_length=MAX_DIMS)
]
ViewStrides = Annotated[
    tuple[Annotated[int, Field(ge=0, le=MAX_INT, strict=True)], ...], Field(max_length=MAX_DIMS)
]


class TensorView(_Frozen):
    """A tensor argument or result: `buffer` as declared, or a view of its storage (`shape`,
    `stride` and an absolute storage `offset`). Its dtype is the buffer's."""

    buffer: Name
    shape: ViewDims | None = None
    stride: ViewStrides | None = None
    offset: Annotated[int, Field(ge=0, le=MAX_INT, strict=True)] = 0

    @model_validator(mode="after")
    def _both_or_neither(self) -> TensorView:
        if (self.shape is None) != (self.stride is None):
            raise ValueError("a view gives both shape and stride, or neither (the buffer as declared)")
        if self.shape is None and self.offset:
            raise ValueError(
                "offset belongs to a view with shape and stride; without them the view is the buffer as declared"
            )
        if self.shape is not None and self.stride is not None and len(self.shape) != len(self.stride):
            raise ValueError(
                f"a view's stride has {len(self.stride)} entries but its shape has {len(self.shape)}"
            )
        return self


class _ArgError(ValueError):
    """A bad argument value, and where inside it (list indices, then a view's field)."""

    def __init__(self, message: str, loc: tuple[int | str, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.loc = message, loc


def _arg(value: Any) -> Any:
    """The validator of one argument: an error inside a list or view is located there
    (`args/0/1/shape`), not at the whole argument."""
    try:
        return _arg_value(value)
    except _ArgError as exc:
        if not exc.loc:
            raise ValueError(exc.message) from None
        detail = InitErrorDetails(
            type=PydanticCustomError("value_error", "Value error, {message}", {"message": exc.message}),
            loc=exc.loc,
            input=value,
        )
        raise ValidationError.from_exception_data("Arg", [detail]) from None


def _arg_value(value: Any, depth: int = 0) -> Any:
    """A literal or view of a library call, checked (strings are data: only their length counts)."""
    if value is None or isinstance(value, bool | int | float):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise _ArgError(f"integer {value} is out of range (|v| < 2**63)")
        return value
    if isinstance(value, str):
        if len(value) > MAX_ARG_STRING:
            raise _ArgError(
                f"a string argument has at most {MAX_ARG_STRING} characters, this one {len(value)}"
            )
        return value
    if isinstance(value, dict | TensorView):
        try:
            return value if isinstance(value, TensorView) else TensorView.model_validate(value)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            msg = str(first["msg"]).removeprefix("Value error, ")
            raise _ArgError(f"not a tensor view: {msg}", tuple(first["loc"])) from None
    if isinstance(value, list | tuple):
        if depth >= MAX_ARG_DEPTH:
            raise _ArgError(f"arguments nest lists at most {MAX_ARG_DEPTH} deep")
        if len(value) > MAX_ARG_LIST:
            raise _ArgError(f"a list argument has at most {MAX_ARG_LIST} items, this one {len(value)}")
        out = []
        for j, v in enumerate(value):
            try:
                out.append(_arg_value(v, depth + 1))
            except _ArgError as exc:
                raise _ArgError(exc.message, (j, *exc.loc)) from None
        return tuple(out)
    raise _ArgError(
        f"an argument is null, a bool, an int, a float, a string, a tensor view or a list of these, not {type(value).__name__}"
    )


def _leaves(value: Any) -> int:
    return sum(_leaves(v) for v in value) if isinstance(value, tuple) else 1


_VIEW_SCHEMA: dict[str, Any] = TensorView.model_json_schema(mode="validation")
_LEAF_SCHEMA: list[dict[str, Any]] = [
    _VIEW_SCHEMA,
    {"type": "null"},
    {"type": "boolean"},
    {"type": "integer"},
    {"type": "number"},
    {"type": "string", "maxLength": MAX_ARG_STRING},
]
_ARG_SCHEMA: dict[str, Any] = {
    "anyOf": [
        *_LEAF_SCHEMA,
        {
            "type": "array",
            "maxItems": MAX_ARG_LIST,
            "items": {
                "anyOf": [
                    *_LEAF_SCHEMA,
                    {"type": "array", "maxItems": MAX_ARG_LIST, "items": {"anyOf": _LEAF_SCHEMA}},
                ]
            },
        },
    ],
    "description": (
        "A literal (null, bool, int, float, string), a tensor view, or a list of these (lists nest two "
        "deep). Where the operator takes a float or a Scalar, the strings 'inf', '-inf' and 'nan' are "
        "those floats (JSON has no literal for them)."
    ),
}
Arg = Annotated[Any, PlainValidator(_arg), WithJsonSchema(_ARG_SCHEMA)]
Output = Name | TensorView | None


class ExternNode(_Frozen):
    """A library call. v1: `op` is mm, bmm or addmm with `inputs`/`output` (buffers, whole).
    Extension 1.1: `op` names a functional ATen operator (`aten.convolution.default`) called with
    `args`/`kwargs` (views and literals, in the operator's schema) and writing `outputs`."""

    name: Name
    kind: Literal["extern"]
    op: OpName
    inputs: tuple[Name, ...] | None = Field(default=None, min_length=1)
    output: Name | None = None
    args: Annotated[tuple[Arg, ...], Field(max_length=MAX_ARGS)] | None = Field(
        default=None, description="Extension 1.1: the operator's positional arguments, in schema order."
    )
    kwargs: Annotated[dict[KwargName, Arg], Field(max_length=MAX_ARGS)] | None = Field(
        default=None, description="Extension 1.1: keyword arguments by schema name."
    )
    outputs: Annotated[tuple[Output, ...], Field(min_length=1, max_length=MAX_ARGS)] | None = Field(
        default=None,
        description="Extension 1.1: one entry per tensor result, in result order: a buffer, a view, or null (unused).",
    )

    @model_validator(mode="after")
    def _bounded(self) -> ExternNode:
        leaves = sum(_leaves(v) for v in (*(self.args or ()), *(self.kwargs or {}).values()))
        if leaves > MAX_ARG_LEAVES:
            raise ValueError(f"a call has at most {MAX_ARG_LEAVES} literals and views, this one {leaves}")
        return self

    def is_call(self) -> bool:
        """Whether the node uses extension 1.1's fields (args/kwargs/outputs)."""
        return self.args is not None or self.kwargs is not None or self.outputs is not None


class TemplateNode(_Frozen):
    name: Name
    kind: Literal["template"]
    op: Name
    inputs: tuple[Name, ...] = Field(min_length=1)
    output: Name
    choices: tuple[Choice, ...] = Field(min_length=1, max_length=MAX_CHOICES)
    epilogue_fusion: Annotated[bool, Field(strict=True)] = False  # not 1, not 'yes'


def _node_kind(data: Any) -> str:
    """`kind` is optional for compute nodes: reduction iff `reduce` is present."""
    if isinstance(data, dict):
        kind = data.get("kind")
        if kind is None:
            return "reduction" if "reduce" in data else "pointwise"
        return kind if isinstance(kind, str) else "?"
    return getattr(data, "kind", "?")


Node = Annotated[
    Annotated[PointwiseNode, Tag("pointwise")]
    | Annotated[ReductionNode, Tag("reduction")]
    | Annotated[ExternNode, Tag("extern")]
    | Annotated[TemplateNode, Tag("template")],
    Discriminator(
        _node_kind,
        custom_error_type="invalid_kind",
        custom_error_message="kind must be one of pointwise, reduction, extern, template",
    ),
]


class Graph(_Frozen):
    """A fuseopt graph (docs/format.md). Order of `buffers` and `nodes` is significant."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://fuseopt.dev/schemas/graph.schema.json",
        },
        title="fuseopt graph, format version 1",
    )

    format: Literal["fuseopt-graph/1"]
    name: Annotated[str, Field(pattern=GRAPH_NAME_PATTERN)]
    description: Annotated[str, Field(max_length=65536)] | None = None
    buffers: dict[Name, Buffer] = Field(
        max_length=MAX_ITEMS, description="Ordered mapping; the order is significant (at most 1,000,000)."
    )
    nodes: tuple[Node, ...] = Field(
        max_length=MAX_ITEMS, description="Program order; significant (at most 1,000,000)."
    )
    meta: dict[str, Any] = Field(default_factory=dict, description="Free-form; preserved, ignored by passes.")
