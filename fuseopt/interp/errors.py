"""Run-time failures of the reference interpreter, located at the node that failed."""

from __future__ import annotations

from fuseopt.errors import Diagnostic, InputError


class InterpError(InputError):
    """A graph that passed static validation failed a run-time check (exit 2: the input is wrong).

    Raised for out-of-bounds indirect or masked loads, ops torch rejects (integer division by zero,
    mismatched matmul shapes, ...), and inputs that do not fit their buffers. The pointer names the
    node (`/nodes/3`) and the message starts with its name; the CLI adds the file.
    """

    node: str | None = None  # the failing node's name (None: not about one node)

    def __init__(self, message: str, *, node: str | None = None, pointer: str = "", code: str = "runtime"):
        text = f"node {node!r}: {message}" if node is not None else message
        super().__init__([Diagnostic(text, pointer=pointer, code=code)])
        self.node = node
