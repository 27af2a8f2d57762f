"""What running a graph may cost, checked before anything is allocated.

Validation and planning take any size the format allows (real models are big, and planning never
allocates per element); running a graph -- the reference interpreter, the random inputs, the
generated module's `call` -- allocates every buffer's storage and visits every point of every
loop box. A tiny file can declare a 2**40-element offset or a 2**31 - 1 loop, so a run is refused
up front, with a located error, when either total is over its limit:

    memory  the bytes of every buffer's storage, inputs included (storage_size x itemsize), and
            of every output's and library result's logical elements (written out densely):
            4 GiB by default (`fuseopt run --max-memory`)
    points  the points of every node's loop box, summed (numel x rnumel; a library call counts
            its multiply-adds): 2**30 by default (`fuseopt run --max-points`), about a minute
            of the reference interpreter

The interpreter's own temporaries are not counted: it evaluates at most `DEFAULT_CHUNK_ELEMS`
points at a time (a few hundred MB), and a summary or a random input widens one buffer at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fuseopt.errors import Diagnostic, InputError
from fuseopt.io.locate import escape_pointer_part
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, Node

DEFAULT_MAX_MEMORY = 4 * 2**30
DEFAULT_MAX_POINTS = 2**30


@dataclass(frozen=True)
class Limits:
    """The most a run may allocate (bytes of buffer storage) and visit (loop-box points)."""

    max_memory: int = DEFAULT_MAX_MEMORY
    max_points: int = DEFAULT_MAX_POINTS


DEFAULT_LIMITS = Limits()


def _contraction(shapes: list[tuple[int, ...]]) -> int:
    """The length of a matrix product's inner dimension: the last of its first matrix operand's."""
    mat = shapes[-2] if len(shapes) >= 2 else ()
    return mat[-1] if mat else 1


# A library call's points per element of its output, by op (unknown ops: one).
_LIBRARY_WORK: dict[str, Callable[[list[tuple[int, ...]]], int]] = {
    "mm": _contraction,
    "bmm": _contraction,
    "addmm": _contraction,  # [bias, mat1, mat2]
}


def node_points(graph: Graph, node: Node) -> int:
    if isinstance(node, ComputeNode):
        return node.numel * node.rnumel
    assert isinstance(node, LibraryNode)
    work = _LIBRARY_WORK.get(node.op)
    per = work([graph.buffer(b).shape for b in node.inputs]) if work is not None else 1
    return graph.buffer(node.output).numel * max(1, per)


def buffer_bytes(graph: Graph) -> dict[str, int]:
    """The bytes a run allocates for each buffer: its storage, and for an output or a library
    call's result its logical elements too (summaries and `--save` write an output out densely,
    torch returns a result densely; a zero-stride buffer's storage is small, its elements not)."""
    dense = {b.name for b in graph.outputs} | {
        o for n in graph.nodes if isinstance(n, LibraryNode) for o in n.outputs
    }
    return {
        b.name: (b.storage_size + (b.numel if b.name in dense else 0)) * b.dtype.itemsize
        for b in graph.buffers
    }


def check_limits(graph: Graph, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise InputError (code "limit", exit 2) when running `graph` would go over `limits`; the
    diagnostics point at the largest buffer or node."""
    problems: list[Diagnostic] = []
    sizes = buffer_bytes(graph)
    memory = sum(sizes.values())
    if memory > limits.max_memory and graph.buffers:
        big = max(graph.buffers, key=lambda b: sizes[b.name])
        problems.append(
            Diagnostic(
                f"running graph {graph.name!r} needs {_bytes(memory)} for its buffers, inputs included; "
                f"the limit is {_bytes(limits.max_memory)} (--max-memory). The largest, {big.name!r}, "
                f"needs {_bytes(sizes[big.name])} ({big.storage_size} {big.dtype.value} elements of "
                f"storage, {big.numel} logical)",
                f"/buffers/{escape_pointer_part(big.name)}",
                code="limit",
            )
        )
    points = [node_points(graph, n) for n in graph.nodes]
    total = sum(points)
    if total > limits.max_points:
        i = max(range(len(points)), key=lambda k: (points[k], -k))
        problems.append(
            Diagnostic(
                f"running graph {graph.name!r} visits {total} loop points (numel x rnumel, summed over "
                f"nodes); the limit is {limits.max_points} (--max-points). The largest, node "
                f"{graph.nodes[i].name!r}, visits {points[i]}",
                f"/nodes/{i}",
                code="limit",
            )
        )
    if problems:
        raise InputError(problems)


def _bytes(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


_SIZE = re.compile(r"([0-9]+(?:\.[0-9]*)?)\s*(?:([kmgt])i?)?b?", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str) -> int:
    """Bytes from `4GiB`, `4G`, `512 MiB`, `1.5GiB` or `1048576` (units are binary: G is GiB).
    Raises ValueError on anything else, and on zero."""
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a size: write bytes, or a number with KiB, MiB, GiB or TiB")
    unit = _UNITS[(m[2] or "").lower()]
    n = int(float(m[1]) * unit) if "." in m[1] else int(m[1]) * unit
    if n < 1:
        raise ValueError(f"{text!r} is not a positive size")
    return n
