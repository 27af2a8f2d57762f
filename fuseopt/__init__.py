"""fuseopt: a kernel-graph fusion optimizer with explained decisions (see README.md)."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # `fuseopt.capture(fn, *inputs)`: the fuseopt.capture package is callable. Imported on first use
    # so that `import fuseopt` stays cheap (torch is imported only when a capture runs).
    if name == "capture":
        import fuseopt.capture

        return fuseopt.capture
    raise AttributeError(f"module 'fuseopt' has no attribute {name!r}")
