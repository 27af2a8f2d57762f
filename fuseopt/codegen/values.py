"""The emitter's building blocks: values (named temporaries or weak literals) and statements."""

from __future__ import annotations

from dataclasses import dataclass, field

from fuseopt.ir.dtypes import DType

Literal = int | float | bool


@dataclass(frozen=True)
class Val:
    """A Triton value: a temporary's name, or a Python literal still weakly typed (`const`)."""

    text: str
    dtype: DType  # what the Triton value holds (float32 for float16/bfloat16 arithmetic)
    axes: tuple[str, ...] = ()  # kernel axes it varies along
    level: int = 0  # 0: kernel scope, 1: inside the current reduction loop
    names: tuple[str, ...] = ()  # temporaries the text refers to
    const: Literal | None = None

    @property
    def literal(self) -> bool:
        return self.const is not None


@dataclass
class Stmt:
    text: str
    defines: str | None
    uses: tuple[str, ...]
    effect: bool = False


@dataclass
class LoopBlock:
    header: str
    body: list[Stmt] = field(default_factory=list)
