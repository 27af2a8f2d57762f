"""Does a fused read address exactly the element its producer writes at the same point?

The one decision the planner (vertical fusion), the verifier and code generation all ask. A
kernel iterates numel x rnumel points (a pointwise kernel: rnumel 1), numbered row-major by one
flat position P; each node runs at every point by its role:

  pointwise / inner  a node of numel*rnumel points: its loops row-major over P
  reduction          its loops and reduce loops row-major over P; its store once a row, at P // rnumel
  epilogue           a node of numel points after the reduction loop: its loops over P // rnumel

so every loop variable is a digit of P (`index_form.Digit`). A read matches a write when both
indices, rewritten over P, have one normal form (`index_form`): then at every point the reader
reads the element the producer wrote there, whatever tile or loop split code generation then
picks (those are digits of P too). An epilogue never reads a value of the reduction loop (an
inner node's or a reduction's input), and an index that is data (indirect) never matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from fuseopt.analysis.index_form import Digit, IndexForm, index_form
from fuseopt.ir.expr import Expr, Load
from fuseopt.ir.graph import ComputeNode, LoopVar

BASE = "p"  # the kernel's flat position, in the forms' texts


class FusedReadMismatch(RuntimeError):
    """Code generation was handed a fused read the shared check rejects: a planner bug, not bad
    input (the planner only fuses reads that `match_read` accepts)."""


@dataclass(frozen=True, slots=True)
class Space:
    """A kernel's iteration space: numel points, each with rnumel reduction points."""

    numel: int
    rnumel: int = 1

    @property
    def points(self) -> int:
        return self.numel * self.rnumel


def space_of(nodes: Iterable[ComputeNode]) -> Space | None:
    """The space of a kernel of these nodes: its (first) reduction's, else the pointwise numel."""
    first: ComputeNode | None = None
    for n in nodes:
        if n.kind == "reduction":
            return Space(n.numel, n.rnumel)
        first = first or n
    return None if first is None else Space(first.numel)


def role(node: ComputeNode, space: Space) -> str | None:
    """pointwise | inner | reduction | epilogue, or None where the node does not fit the space."""
    if node.kind == "reduction":
        return "reduction" if (node.numel, node.rnumel) == (space.numel, space.rnumel) else None
    if space.rnumel == 1:
        return "pointwise" if node.numel == space.numel else None
    if node.numel == space.points:
        return "inner"
    return "epilogue" if node.numel == space.numel else None


@dataclass(frozen=True, slots=True)
class Match:
    """The verdict on one fused read: ok, or why not. `write` and `read` are the two indices over
    the kernel's flat position; `after_loop` says the reader takes a value that exists only once
    the reduction loop is done (a reduction's result, or an epilogue's value)."""

    ok: bool
    reason: str = ""
    write: IndexForm | None = None
    read: IndexForm | None = None
    after_loop: bool = False


def match_read(producer: ComputeNode, load: Load, consumer: ComputeNode, space: Space) -> Match:
    """Does `load` (in `consumer`) read, at every point of `space`, what `producer` stores there?"""
    pr, cr = role(producer, space), role(consumer, space)
    if pr is None or cr is None:
        odd = producer if pr is None else consumer
        return Match(
            False,
            f"{odd.name} ({odd.numel} x {odd.rnumel} points) does not fit a kernel of {space.numel} "
            f"x {space.rnumel}",
        )
    if load.buffer != producer.output:
        return Match(False, f"{consumer.name} reads {load.buffer}, not {producer.name}'s output")
    after = pr in ("reduction", "epilogue")
    if cr == "epilogue" and pr in ("inner", "pointwise") and space.rnumel > 1:
        return Match(
            False, f"epilogue {consumer.name} would read {producer.name}'s value of the reduction loop"
        )
    write = access_form(producer.store.index, producer.loops, _scale(pr, True, space), space.points)
    read = access_form(load.index, _box(consumer), _scale(cr, False, space), space.points)
    if read.indirect or write.indirect:
        return Match(False, f"{consumer.name} reads {load.buffer} with an indirect index", write, read, after)
    if read != write:
        return Match(
            False,
            f"{consumer.name} reads {load.buffer}[{read.text()}] where {producer.name} writes "
            f"{load.buffer}[{write.text()}] (p: the kernel's point)",
            write,
            read,
            after,
        )
    return Match(True, "", write, read, after)


def _box(node: ComputeNode) -> tuple[LoopVar, ...]:
    return (*node.loops, *node.reduce)


def _scale(r: str, store: bool, space: Space) -> int:
    """A node's point in units of the kernel's points (its position is P // scale)."""
    if r == "epilogue" or (r == "reduction" and store):
        return space.rnumel
    return 1


def loop_digits(loops: Sequence[LoopVar], scale: int, extent: int) -> dict[str, Digit | None]:
    """Each loop variable as a digit of P (row-major loops over P // scale; None: size 1)."""
    out: dict[str, Digit | None] = {}
    inner = scale
    for lv in reversed(loops):
        if lv.size == 1:
            out[lv.name] = None
            continue
        top = inner * lv.size >= extent
        out[lv.name] = Digit(BASE, inner, None if top else lv.size)
        inner *= lv.size
    return out


@lru_cache(maxsize=1 << 16)
def access_form(index: Expr, loops: tuple[LoopVar, ...], scale: int, extent: int) -> IndexForm:
    """The normal form of an index over `loops` placed at P // scale in a kernel of `extent` points."""
    return index_form(index, loop_digits(loops, scale, extent), {BASE: extent})
