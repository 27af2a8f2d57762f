"""The reference interpreter: the oracle every pass and every generated kernel is checked against.

`make_inputs(graph, seed)` builds deterministic input storages, `run_graph(graph, inputs)` returns the
flat storage of every buffer, and `logical_view(graph, name, storage)` shows one as its logical tensor.
"""

from fuseopt.interp.errors import InterpError
from fuseopt.interp.inputs import make_inputs
from fuseopt.interp.limits import DEFAULT_LIMITS, Limits, check_limits
from fuseopt.interp.run import DEFAULT_CHUNK_ELEMS, logical_outputs, logical_view, run_graph

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
