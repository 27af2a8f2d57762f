"""Pydantic models of FORMAT.md v1: the single source of truth for the input's shape.

They check structure only (types, names, ranges); expressions stay text here and are parsed, and
the graph checked as a whole, by `fuseopt.ir.build`. `schemas/graph.schema.json` is generated
from `Graph` (`fuseopt schema`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag

from fuseopt.ir.dtypes import DType

FORMAT_ID = "fuseopt-graph/1"
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
GRAPH_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
MAX_LOOP_SIZE = 2**31 - 1
MAX_INT = 2**63 - 1
# Caps beyond FORMAT.md's, so that hostile files fail fast with a located error instead of
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
    """A flat storage with a logical shape/stride/offset (FORMAT.md "Buffer")."""

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
        """offset + sum((shape[i]-1)*stride[i]) + 1, per FORMAT.md."""
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


class ExternNode(_Frozen):
    name: Name
    kind: Literal["extern"]
    op: Name
    inputs: tuple[Name, ...] = Field(min_length=1)
    output: Name


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
    """A fuseopt graph (FORMAT.md). Order of `buffers` and `nodes` is significant."""

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
