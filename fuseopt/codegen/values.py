"""The emitter's building blocks: values (named temporaries or weak literals) and statements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fuseopt.ir.dtypes import DType

if TYPE_CHECKING:
    from fuseopt.codegen.indexing import Digit
    from fuseopt.codegen.schedule import Placement

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
    # A register window's cell (`codegen.windows.register`): the value is `root + offset`, `text` spelling
    # that out; index arithmetic folds the offset into its constant, so that two cells naming
    # one element write one expression (and the emitter's CSE by text makes them one load).
    root: str | None = None
    offset: int = 0

    def rooted(self) -> tuple[Val, int]:
        """(the value without its cell's offset, the offset)."""
        if self.root is None:
            return self, 0
        return Val(self.root, self.dtype, self.axes, self.level, self.names), self.offset

    def shifted(self, k: int) -> Val:
        """This value (without an offset) plus the constant `k`, kept apart for folding."""
        assert self.root is None and not self.literal
        if k == 0:
            return self
        text = f"{self.text} + {k}" if k > 0 else f"{self.text} - {-k}"
        return Val(text, self.dtype, self.axes, self.level, self.names, root=self.text, offset=k)

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


class NodeCtx:
    """A node being emitted: its placement, its loop variables as digits of the kernel's axes
    (None: a variable the kernel does not run), and their sizes."""

    def __init__(self, p: Placement, digits: dict[str, Digit | None]):
        self.p = p
        self.digits = digits
        self.ranges = p.node.var_sizes
