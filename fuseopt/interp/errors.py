"""Run-time failures of the reference interpreter, located at the node that failed."""

from __future__ import annotations

from fuseopt.errors import Diagnostic, InputError


class InterpError(InputError):
    """A graph that passed static validation failed a run-time check (exit 2: the input is wrong).

    Raised for out-of-bounds indirect or masked loads, integer division by zero (code
    `zero-division`), an index whose exact value would leave int64 (`overflow`: indices are never
    wrapped), ops torch rejects (mismatched matmul shapes, ...), and inputs that do not fit their
    buffers. The pointer names the node's field (`/nodes/3/value`) and the message starts with the
    node's name, then the expression and the point of the box where it failed; the CLI adds the
    file.
    """

    node: str | None = None  # the failing node's name (None: not about one node)

    def __init__(self, message: str, *, node: str | None = None, pointer: str = "", code: str = "runtime"):
        text = f"node {node!r}: {message}" if node is not None else message
        super().__init__([Diagnostic(text, pointer=pointer, code=code)])
        self.node = node
