"""The reference interpreter: the oracle every pass and every generated kernel is checked against.

`make_inputs(graph, seed)` builds deterministic input storages, `run_graph(graph, inputs)` returns the
flat storage of every buffer, and `logical_view(graph, name, storage)` shows one as its logical tensor.

The names are imported on first use, not with the package: `fuseopt.interp.limits` (what a run
may cost) needs no torch, and the command line reads its defaults without importing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fuseopt.util import lazy_exports

if TYPE_CHECKING:
    from fuseopt.interp.errors import InterpError
    from fuseopt.interp.inputs import make_inputs
    from fuseopt.interp.limits import DEFAULT_LIMITS, Limits, check_limits
    from fuseopt.interp.run import DEFAULT_CHUNK_ELEMS, logical_outputs, logical_view, run_graph

_MODULE_OF = {
    "DEFAULT_CHUNK_ELEMS": "fuseopt.interp.run",
    "DEFAULT_LIMITS": "fuseopt.interp.limits",
    "InterpError": "fuseopt.interp.errors",
    "Limits": "fuseopt.interp.limits",
    "check_limits": "fuseopt.interp.limits",
    "logical_outputs": "fuseopt.interp.run",
    "logical_view": "fuseopt.interp.run",
    "make_inputs": "fuseopt.interp.inputs",
    "run_graph": "fuseopt.interp.run",
}
__all__ = [
    "DEFAULT_CHUNK_ELEMS",
    "DEFAULT_LIMITS",
    "InterpError",
    "Limits",
    "check_limits",
    "logical_outputs",
    "logical_view",
    "make_inputs",
    "run_graph",
]

__getattr__ = lazy_exports(__name__, _MODULE_OF)
