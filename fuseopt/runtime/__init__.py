"""Running generated Triton modules: import from a file and call, and check against the interpreter."""

from fuseopt.runtime.backend import triton_backend
from fuseopt.runtime.compare import compare_buffer, compare_with_reference
from fuseopt.runtime.module import load_module, run_module

__all__ = ["compare_buffer", "compare_with_reference", "load_module", "run_module", "triton_backend"]
