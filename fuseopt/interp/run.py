"""The reference interpreter's driver: buffers as flat storages, nodes run in program order.

`run_graph` is the oracle every pass and every generated kernel is compared with. A compute node
runs vectorised over its loop box, in chunks of the outer loop dims so peak memory stays bounded; a
library node (extern/template) is run by torch on the logical views of its inputs (an
extension-1.1 call: the ATen op on its `as_strided` views) and its results written through the
output views' strides. Nothing here depends on anything but the graph and the
input storages, so the same inputs give bit-identical storages.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence

import torch

from fuseopt.interp.errors import InterpError
from fuseopt.interp.evaluate import Box, Evaluator, compute_torch_dtype
from fuseopt.interp.inputs import make_inputs
from fuseopt.interp.limits import DEFAULT_LIMITS, Limits, check_limits
from fuseopt.interp.ops import LIBRARY, REDUCE, TORCH_DTYPE, lookup
from fuseopt.interp.plan import plan_node
from fuseopt.ir.aten_ops import overload_of, run_call
from fuseopt.ir.expr import Reduce
from fuseopt.ir.graph import AtenCall, BufferInfo, ComputeNode, Graph, LibraryNode, Node, View

Tensor = torch.Tensor

# Elements of the loop box (loops x reduce) evaluated at once: a few box-sized temporaries of this
# many elements (int64 indices, float32 values) are alive at the peak, i.e. a few hundred MB.
DEFAULT_CHUNK_ELEMS = 1 << 24


def logical_view(graph: Graph, name: str, storage: Tensor) -> Tensor:
    """The buffer's logical tensor: `as_strided(storage, shape, stride, offset)`.

    It shares memory with `storage` when that is a dense 1-D tensor (as every storage the
    interpreter makes is); `storage` may itself be a view (its own offset is added).
    """
    b = graph.buffer(name)
    if storage.dim() != 1 or storage.stride() != (1,):
        storage = storage.reshape(-1).contiguous()
    return torch.as_strided(storage, b.shape, b.stride, storage.storage_offset() + b.offset)


def logical_outputs(graph: Graph, storages: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Logical views of the graph's output buffers, in buffer order."""
    return {b.name: logical_view(graph, b.name, storages[b.name]) for b in graph.outputs}


def run_graph(
    graph: Graph,
    inputs: Mapping[str, Tensor] | None = None,
    seed: int = 0,
    *,
    chunk_elems: int = DEFAULT_CHUNK_ELEMS,
    limits: Limits | None = DEFAULT_LIMITS,
) -> dict[str, Tensor]:
    """Run every node; return the flat storage of every buffer (inputs as given), in buffer order.

    `inputs` maps each input buffer to a 1-D tensor of its storage size and dtype (default:
    `make_inputs(graph, seed)`). Storage elements no node writes stay 0. Raises `InterpError` (an
    `InputError`) naming the node for run-time failures such as an out-of-bounds indirect load,
    and an `InputError` before allocating anything when the run would go over `limits` (None: the
    caller checked them; `fuseopt.interp.limits`).
    """
    if chunk_elems < 1:
        raise ValueError("chunk_elems must be positive")
    if limits is not None:
        check_limits(graph, limits)
    storages = _bind(graph, make_inputs(graph, seed, limits=None) if inputs is None else inputs)
    buffers = {b.name: b for b in graph.buffers}
    for pos, node in enumerate(graph.nodes):
        runner = _NODE_RUNNERS[type(node)]
        runner(node, f"/nodes/{pos}", graph, buffers, storages, chunk_elems)
    return storages


def _bind(graph: Graph, inputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
    wanted = {b.name for b in graph.inputs}
    for name in inputs:
        if name not in wanted:
            raise InterpError(f"{name!r} is not an input buffer of graph {graph.name!r}", code="inputs")
    storages: dict[str, Tensor] = {}
    device = next(iter(inputs.values())).device if inputs else torch.device("cpu")
    for b in graph.buffers:
        dtype = TORCH_DTYPE[b.dtype]
        if b.role != "input":
            storages[b.name] = torch.zeros(b.storage_size, dtype=dtype, device=device)
            continue
        ptr = f"/buffers/{b.name}"
        t = inputs.get(b.name)
        if t is None:
            raise InterpError(f"no storage given for input buffer {b.name!r}", pointer=ptr, code="inputs")
        if t.dim() != 1 or t.numel() != b.storage_size or t.dtype != dtype:
            raise InterpError(
                f"input {b.name!r} must be a 1-D {dtype} storage of {b.storage_size} elements, got a "
                f"{t.dtype} tensor of shape {tuple(t.shape)}",
                pointer=ptr,
                code="inputs",
            )
        # Storages are dense: a strided 1-D view is copied, so indexing and as_strided agree.
        storages[b.name] = t if t.stride() == (1,) else t.contiguous()
    return storages


def chunks(
    sizes: Sequence[int], inner: int, budget: int
) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Split the outer loop box `sizes` (each point worth `inner` elements) into [starts, stops)
    blocks of at most `budget` elements, outermost dims first; a block never splits an inner dim
    unless a single point of the dims outside it is already over budget."""
    k = len(sizes)
    tail = [inner] * (k + 1)  # tail[d]: elements of one point of dims < d
    for d in reversed(range(k)):
        tail[d] = tail[d + 1] * sizes[d]
    if k == 0 or tail[0] <= budget:
        yield (0,) * k, tuple(sizes)
        return
    j = next((d for d in range(k) if tail[d + 1] <= budget), k - 1)
    step = max(1, budget // tail[j + 1])
    rest = tuple(sizes[j + 1 :])
    for prefix in itertools.product(*(range(s) for s in sizes[:j])):
        for a in range(0, sizes[j], step):
            b = min(a + step, sizes[j])
            yield prefix + (a,) + (0,) * len(rest), tuple(p + 1 for p in prefix) + (b,) + rest


def _run_compute(
    node: ComputeNode,
    pointer: str,
    graph: Graph,
    buffers: Mapping[str, BufferInfo],
    storages: Mapping[str, Tensor],
    chunk_elems: int,
) -> None:
    plan = plan_node(node, buffers)
    out = storages[node.output]
    names = tuple(lv.name for lv in (*node.loops, *node.reduce))
    rsizes = tuple(lv.size for lv in node.reduce)
    k, m = len(node.loops), len(node.reduce)
    red = node.value if isinstance(node.value, Reduce) else None
    for starts, stops in chunks([lv.size for lv in node.loops], node.rnumel, chunk_elems):
        box = Box(names, starts + (0,) * m, stops + rsizes)
        ev = Evaluator(node, f"{pointer}/value", storages, box, plan)
        outer = box.shape[:k]
        if red is None:
            value = ev.value(node.value)
        else:
            fn = lookup(REDUCE, red.op, "reduction", node=node.name, pointer=f"{pointer}/value")
            body = ev.value(red.x).broadcast_to(box.shape).reshape(*outer, -1)
            acc = compute_torch_dtype(red.dtype)
            value = ev.call(lambda v, fn=fn, acc=acc: fn(v, acc), red, body)
        idx = ev.index(node.store.index, ev.root)
        idx = idx.broadcast_to(outer + (1,) * m).reshape(outer)
        value = value.broadcast_to(outer)
        out.index_put_((idx.reshape(-1),), value.reshape(-1).to(out.dtype))


def _run_library(
    node: LibraryNode,
    pointer: str,
    graph: Graph,
    buffers: Mapping[str, BufferInfo],
    storages: Mapping[str, Tensor],
    chunk_elems: int,
) -> None:
    if node.call is not None:
        _run_call(node, node.call, pointer, buffers, storages)
        return
    # Templates run the same op as externs: their choices only matter for planning.
    fn = lookup(LIBRARY, node.op, node.kind, node=node.name, pointer=f"{pointer}/op")
    views = [logical_view(graph, name, storages[name]) for name in node.inputs]
    try:
        result = fn(*views)
    except RuntimeError as exc:
        raise InterpError(f"torch.{node.op} failed: {exc}", node=node.name, pointer=pointer) from None
    target = buffers[node.output]
    if tuple(result.shape) != target.shape:
        raise InterpError(
            f"{node.op} of {', '.join(node.inputs)} has shape {list(result.shape)} but its output "
            f"{node.output!r} has shape {list(target.shape)}",
            node=node.name,
            pointer=pointer,
            code="shape",
        )
    try:
        logical_view(graph, node.output, storages[node.output]).copy_(result)
    except RuntimeError as exc:
        raise InterpError(
            f"cannot write the result through {node.output!r}'s strides: {exc}",
            node=node.name,
            pointer=pointer,
        ) from None


def _run_call(
    node: LibraryNode,
    call: AtenCall,
    pointer: str,
    buffers: Mapping[str, BufferInfo],
    storages: Mapping[str, Tensor],
) -> None:
    """An extension-1.1 call: the op on `as_strided` views of the storages; each result checked
    against its output view's shape and dtype, then copied into the output's storage."""

    def view(v: View) -> Tensor:
        return torch.as_strided(storages[v.buffer], v.shape, v.stride, v.offset)

    try:
        results = run_call(overload_of(call.op), call, view)
    except (RuntimeError, ValueError, TypeError, IndexError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InterpError(f"{call.op} failed: {first}", node=node.name, pointer=pointer) from None
    if len(results) != len(call.outputs):
        raise InterpError(
            f"{call.op} returned {len(results)} results, `outputs` has {len(call.outputs)}",
            node=node.name,
            pointer=f"{pointer}/outputs",
            code="shape",
        )
    for j, (r, out) in enumerate(zip(results, call.outputs, strict=True)):
        if out is None:
            continue
        want = TORCH_DTYPE[buffers[out.buffer].dtype]
        if not isinstance(r, Tensor) or tuple(r.shape) != out.shape or r.dtype != want:
            got = f"{list(r.shape)} {r.dtype}" if isinstance(r, Tensor) else type(r).__name__
            raise InterpError(
                f"{call.op}'s result {j} is {got}, but {out.buffer!r} is {list(out.shape)} {want}",
                node=node.name,
                pointer=f"{pointer}/outputs/{j}",
                code="shape",
            )
        view(out).copy_(r)


_NODE_RUNNERS: dict[type[Node], Callable[..., None]] = {
    ComputeNode: _run_compute,
    LibraryNode: _run_library,
}
