"""Capture real PyTorch programs as fuseopt graphs, with Inductor's own fusion plan alongside.

`fuseopt.capture(fn, *example_inputs)` compiles `fn` with torch.compile (Inductor), converts the
scheduler's nodes as created (before fusion) into a docs/format.md graph and records Inductor's kernels
in `graph.meta["inductor"]`. The package itself is callable, so that `fuseopt.capture(...)` is this
function whichever of `import fuseopt` or `import fuseopt.capture` ran first. torch is imported when
a capture runs, not when this package is imported.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from fuseopt.capture.driver import Capture, capture, capture_program
from fuseopt.capture.errors import CaptureError

__all__ = ["Capture", "CaptureError", "capture", "capture_program"]


class _CallableModule(types.ModuleType):
    def __call__(self, fn: Any, *example_inputs: Any, **kwargs: Any) -> Any:
        return capture(fn, *example_inputs, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
