"""The one error of `fuseopt capture`: the program could not be captured, or uses what FORMAT v1 lacks."""

from __future__ import annotations

from fuseopt.errors import Diagnostic, InputError


class CaptureError(InputError):
    """torch.compile could not capture the program as one graph, or Inductor produced something the
    graph format cannot express (an op, an extern kernel, an aliasing view): exit 2.

    `node` names the Inductor node (or buffer) concerned, when there is one.
    """

    def __init__(self, message: str, *, node: str | None = None, file: str = "", code: str = "capture"):
        text = f"{node}: {message}" if node else message
        super().__init__([Diagnostic(text, file=file, code=code)])
        self.message = message
        self.node = node
        self.details: list[str] = []  # torch's log and exception chain, shown with --verbose


# What a capture says when an expression is past the format's limits (`code="limit"`: the capture
# is then tried again with Inductor's reductions not unrolled).
LIMIT_MESSAGE = (
    "an expression of the captured graph is past the format's limits for one expression "
    "(4096 characters, 64 levels, 1024 nodes; docs/format.md): Inductor's loop body has no "
    "shared values in the format's text (a small reduction unrolled repeats its operands; a "
    "concatenation of many pieces is a chain of one branch a piece)."
)
