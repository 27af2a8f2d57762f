"""Triton code generation: a fusion Plan over a Graph -> a standalone module of Triton kernels.

`emit_module`/`write_module` are the entry points; `split_loops` is the loop-split rule the planner
shares with the emitter (how a pointwise node runs inside a reduction kernel).

The entry points are imported on first use, not with the package: `fuseopt optimize --emit none`
needs none of them (the target's defaults are `fuseopt.targets`), and importing a submodule
runs this file first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fuseopt.util import lazy_exports

if TYPE_CHECKING:
    from fuseopt.codegen.common import CodegenError
    from fuseopt.codegen.indexing import split_loops
    from fuseopt.codegen.tiling import CodegenOptions
    from fuseopt.codegen.triton import emit_module, write_module

__all__ = ["CodegenError", "CodegenOptions", "emit_module", "split_loops", "write_module"]

_MODULE_OF = {
    "CodegenError": "fuseopt.codegen.common",
    "CodegenOptions": "fuseopt.codegen.tiling",
    "emit_module": "fuseopt.codegen.triton",
    "split_loops": "fuseopt.codegen.indexing",
    "write_module": "fuseopt.codegen.triton",
}

__getattr__ = lazy_exports(__name__, _MODULE_OF)
