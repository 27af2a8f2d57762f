"""Triton code generation: a fusion Plan over a Graph -> a standalone module of Triton kernels.

`emit_module`/`write_module` are the entry points; `split_loops` is the loop-split rule the planner
shares with the emitter (how a pointwise node runs inside a reduction kernel).
"""

from fuseopt.codegen.common import CodegenError
from fuseopt.codegen.indexing import split_loops
from fuseopt.codegen.tiling import CodegenOptions
from fuseopt.codegen.triton import emit_module, write_module

__all__ = ["CodegenError", "CodegenOptions", "emit_module", "split_loops", "write_module"]
