"""Whole writes: every non-input buffer is produced whole, each element exactly once, by its writer.

This is Inductor's invariant (a buffer is fully produced by its node), proven statically so that no
element is left to the allocator (the interpreter would read zeros, generated code garbage). Two
checks, both exact or refusing:

- `layout_problem`: a non-input buffer puts its logical elements at distinct storage positions (no
  stride 0 on a dim of size > 1, no two index tuples at one position). Proven by the extent test on
  its strides in ascending order; a layout that fails it is enumerated when small.
- `store_problem`: a compute node's store index, over its `loops` box, is a bijection onto the
  buffer's logical elements `{offset + sum(stride_k * d_k)}`. An affine index and the layout are
  both normalised to mixed-radix digits (size-1 dims dropped, a digit whose stride is another's
  stride x size merged into it, negative coefficients reflected); equal (offset, digits) prove it.
  Anything else -- other digits, or `//`, `%`, `min`, `max` in the index -- is enumerated exactly
  when the box has at most `ENUMERATE_LIMIT` points; beyond that, definite failures are still found
  (point count, an unused loop, the range) and what is left is refused as unprovable.

Library outputs are written whole through their strides, so for them the layout check suffices;
an extension-1.1 output view must cover its buffer exactly (`view_cover_problem`: the view's
positions are the buffer's element positions, each once), and a view read from a written buffer
must read only its elements (`view_read_problem`), never storage no one writes. So must a compute
node's load whose value counts (`read_problem`: not under a `masked` body or a `where` branch,
which may discard it), where its affine index can be enumerated; an indirect or larger one is
left to run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from fuseopt.ir.bounds import interval, linear_form
from fuseopt.ir.expr import Binary, Const, Expr, Load, Masked, Unary, Var, Where, walk
from fuseopt.ir.graph import BufferInfo, ComputeNode, LoopVar, View

# Points (and buffer elements) validation enumerates at most: a few int64 arrays of this length.
ENUMERATE_LIMIT = 1 << 22

Digits = tuple[tuple[int, int], ...]  # (stride, size) pairs, canonical
# Index operators the enumerator evaluates (the store grammar: + - * // % min max, literals, loops).
_NUMPY_OPS = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "floordiv": "floor_divide",  # Python's //, as the interpreter's torch.floor_divide
    "mod": "remainder",  # Python's %, as torch.remainder
    "minimum": "minimum",
    "maximum": "maximum",
}
_INT64_SAFE = 2**62


def digits(pairs: Iterable[tuple[int, int]]) -> Digits:
    """(stride, size) pairs in canonical mixed-radix form: size-1 dims dropped, chains merged
    ((s, n) and (s*n, m) become (s, n*m)), sorted. Merging keeps the multiset of positions
    sum(stride * d), so two maps with equal digits (and offsets) address the same positions equally
    often; the converse does not hold ({0,2,4} + {0,3,6,9} = {0,2,...,10} + {0,3})."""
    out: list[list[int]] = []
    ends: dict[int, int] = {}  # stride * size of a merged digit -> its position in `out`
    for s, n in sorted(p for p in pairs if p[1] > 1):
        j = ends.pop(s, None)
        if j is None:
            out.append([s, n])
            j = len(out) - 1
        else:
            out[j][1] *= n
        ends[out[j][0] * out[j][1]] = j
    return tuple(sorted((s, n) for s, n in out))


def buffer_form(b: BufferInfo) -> tuple[int, Digits]:
    return b.offset, _layout_digits(b.stride, b.shape)


@lru_cache(maxsize=4096)
def _layout_digits(stride: tuple[int, ...], shape: tuple[int, ...]) -> Digits:
    # A graph's buffers share a few layouts; the layout and the store checks both ask for them.
    return digits(zip(stride, shape, strict=True))


def affine_form(index: Expr, loops: Sequence[LoopVar]) -> tuple[int, Digits] | None:
    """(lowest position, digits) of an index affine in the loops, or None if it is not affine."""
    f = linear_form(index)
    sizes = {lv.name: lv.size for lv in loops}
    coeffs: dict[str, int] = {}
    for atom, k in f.coeffs:
        if not isinstance(atom, Var) or atom.name not in sizes:
            return None
        coeffs[atom.name] = k
    const = f.const
    pairs = []
    for lv in loops:
        k = coeffs.get(lv.name, 0)
        if k < 0:  # v -> size-1-v is a bijection of the loop: reflect it
            const += k * (lv.size - 1)
            k = -k
        pairs.append((k, lv.size))
    return const, digits(pairs)


@lru_cache(maxsize=4096)
def _store_form(index: Expr, loops: tuple[LoopVar, ...]) -> tuple[int, Digits] | None:
    """`affine_form` of a store, memoised: nodes repeat a few store indices over the same loops.
    Keys are typed trees (spans take no part; typing makes structural equality exact)."""
    return affine_form(index, loops)


# -- layouts ------------------------------------------------------------------------------------


def layout_problem(b: BufferInfo) -> str | None:
    """Why a non-input buffer's layout cannot hold one distinct value per element (None if it can)."""
    for k, (n, s) in enumerate(zip(b.shape, b.stride, strict=True)):
        if s == 0 and n > 1:
            return (
                f"{b.name!r} is written, but dim {k} has stride 0 and size {n}: its {n} elements along "
                "that dim share one storage position (only inputs may broadcast); give it a stride"
            )
    extent = 0
    for s, n in buffer_form(b)[1]:
        if s <= extent:
            break
        extent += (n - 1) * s
    else:
        return None
    if b.numel > ENUMERATE_LIMIT:
        return (
            f"cannot prove that the layout of {b.name!r} (shape {list(b.shape)}, stride "
            f"{list(b.stride)}) gives each of its {b.numel} elements its own storage position: its strides interleave and it is "
            f"too large to enumerate (more than {ENUMERATE_LIMIT}); use a dense layout (a permutation "
            "of row-major strides, padding allowed)"
        )
    import numpy as np

    pos = _positions(np, b)
    order = np.argsort(pos, kind="stable")
    ordered = pos[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    if not len(same):
        return None
    k = int(same[np.argmin(order[1:][same])])  # the collision whose later element comes first
    a, c = (np.unravel_index(int(order[i]), b.shape) for i in (k, k + 1))
    return (
        f"{b.name!r} is written, but its layout (shape {list(b.shape)}, stride {list(b.stride)}) puts "
        f"elements {_idx(a)} and {_idx(c)} at one storage position ({int(ordered[k])}); each element "
        "of a written buffer needs its own"
    )


# -- views of library calls ------------------------------------------------------------------------


def view_bounds_problem(v: View, b: BufferInfo) -> str | None:
    """Why view `v` does not lie inside `b`'s storage (None if it does)."""
    if len(v.shape) != len(v.stride):
        return f"the view's stride has {len(v.stride)} entries but its shape has {len(v.shape)}"
    if v.extent > b.storage_size:
        return (
            f"the view (shape {list(v.shape)}, stride {list(v.stride)}, offset {v.offset}) reaches storage "
            f"position {v.extent - 1}, outside {b.name!r}'s storage of {b.storage_size} elements"
        )
    return None


def view_read_problem(v: View, b: BufferInfo) -> str | None:
    """Why a view read from written buffer `b` touches storage that is not one of its elements."""
    if b.dense:  # a dense layout: every position from offset is one
        if v.offset >= b.offset:
            return None
        return _not_elements(v, b, v.offset)
    if v.numel > ENUMERATE_LIMIT or b.numel > ENUMERATE_LIMIT:
        return (
            f"cannot prove that the view reads only elements of {b.name!r} (its layout has gaps and "
            f"the view has more than {ENUMERATE_LIMIT} elements to enumerate)"
        )
    import numpy as np

    elements = np.sort(_positions(np, b))
    pos = _positions(np, _as_buffer(v, b))
    slot = np.minimum(np.searchsorted(elements, pos), len(elements) - 1)
    outside = np.flatnonzero(elements[slot] != pos)
    return None if not len(outside) else _not_elements(v, b, int(pos[outside[0]]))


def view_cover_problem(v: View, b: BufferInfo) -> str | None:
    """Why output view `v` does not write each element of `b` exactly once (None if it does).
    Assumes `b`'s layout passed `layout_problem` and `v` lies inside the storage."""
    if v.offset == b.offset and digits(zip(v.stride, v.shape, strict=True)) == buffer_form(b)[1]:
        return None
    shown = f"(shape {list(v.shape)}, stride {list(v.stride)}, offset {v.offset})"
    if v.numel != b.numel:
        return (
            f"the output view {shown} has {v.numel} elements but {b.name!r} has {b.numel}: an output view "
            "covers its buffer exactly (each element written once)"
        )
    if v.numel > ENUMERATE_LIMIT:
        return (
            f"cannot prove that the output view {shown} covers {b.name!r} exactly: its digits differ from "
            f"the layout's and it has more than {ENUMERATE_LIMIT} elements to enumerate"
        )
    import numpy as np

    got = np.sort(_positions(np, _as_buffer(v, b)))
    want = np.sort(_positions(np, b))
    bad = np.flatnonzero(got != want)
    if not len(bad):
        return None
    return (
        f"the output view {shown} does not cover {b.name!r} exactly (storage position {int(want[bad[0]])} "
        "is not written once): an output view covers its buffer exactly, each element once"
    )


def _as_buffer(v: View, b: BufferInfo) -> BufferInfo:
    return BufferInfo(b.name, v.shape, v.stride, v.offset, b.dtype, b.role)


def _not_elements(v: View, b: BufferInfo, position: int) -> str:
    return (
        f"the view (shape {list(v.shape)}, stride {list(v.stride)}, offset {v.offset}) reads storage "
        f"position {position}, which is not an element of {b.name!r} (shape {list(b.shape)}, stride "
        f"{list(b.stride)}, offset {b.offset}): nothing writes it"
    )


def read_problem(node: ComputeNode, ld: Load, b: BufferInfo) -> str | None:
    """Why `node`'s load `ld` of written buffer `b` reads storage that is not one of its elements
    (a gap of its layout, which nothing writes): None where it does not, or where that cannot be
    shown by enumerating its index over the node's box. Assumes the load stays inside the storage."""
    if b.dense:  # dense from the offset: only a read below it misses
        r = interval(ld.index, node.var_sizes)
        if r is not None and r[0] >= b.offset:
            return None  # else enumerated below: an interval may reach lower than the index does
    loops = (*node.loops, *node.reduce)
    points = 1
    for lv in loops:
        points *= lv.size
    if points > ENUMERATE_LIMIT or b.numel > ENUMERATE_LIMIT or not _enumerable(ld.index, loops):
        return None
    if any(_unsafe(e, node.var_sizes) for e in walk(ld.index)):
        return None
    import numpy as np

    axes = {
        lv.name: np.arange(lv.size, dtype=np.int64).reshape(
            tuple(lv.size if j == i else 1 for j in range(len(loops)))
        )
        for i, lv in enumerate(loops)
    }
    pos = np.unique(np.asarray(_evaluate(np, ld.index, axes, np.int64)).reshape(-1))
    elements = np.sort(_positions(np, b))
    slot = np.minimum(np.searchsorted(elements, pos), len(elements) - 1)
    outside = np.flatnonzero(elements[slot] != pos)
    return None if not len(outside) else _read_gap(ld, b, int(pos[outside[0]]))


def counted_loads(e: Expr) -> list[Load]:
    """The loads of `e` whose values count wherever they run: not inside a `masked` body (which
    runs only where its condition holds) or a `where` branch (whose value one side discards)."""
    if isinstance(e, Load):
        return [e, *counted_loads(e.index)]
    if isinstance(e, Masked):
        return counted_loads(e.cond) + counted_loads(e.other)
    if isinstance(e, Where):
        return counted_loads(e.cond)
    return [ld for c in e.children() for ld in counted_loads(c)]


def _read_gap(ld: Load, b: BufferInfo, position: int) -> str:
    return (
        f"the load of {b.name!r} reads storage position {position}, which is not an element of {b.name!r} "
        f"(shape {list(b.shape)}, stride {list(b.stride)}, offset {b.offset}): nothing writes it (read it "
        "under masked() where its value is not wanted)"
    )


# -- stores ---------------------------------------------------------------------------------------


def store_problem(node: ComputeNode, b: BufferInfo) -> str | None:
    """Why `node`'s store does not write each element of `b` exactly once (None if it does).

    Assumes `b`'s layout passed `layout_problem` and the store stays inside the storage."""
    index = node.store.index
    form = _store_form(index, node.loops)
    want = buffer_form(b)
    if form == want:
        return None
    n, m = node.numel, b.numel
    if n <= ENUMERATE_LIMIT and m <= ENUMERATE_LIMIT and _enumerable(index, node.loops):
        return _enumerated(node, b)
    counted = _count_problem(node, b)
    if counted is not None:
        return counted
    if form is not None:
        definite = _affine_problem(node, b, form)
        if definite is not None:
            return definite
        why = (
            f"its index's digits (stride x size: {_show(form[1])}, from {form[0]}) differ from the "
            f"layout's ({_show(want[1])}, from {want[0]})"
        )
    else:
        why = "its index is not affine in the loops (it uses //, %, min or max)"
    if n > ENUMERATE_LIMIT:
        why += f", and its {n} points are more than {ENUMERATE_LIMIT} to enumerate"
    return (
        f"cannot prove that the store writes each element of {b.name!r} exactly once: {why}; write "
        f"the store affinely with the buffer's own strides, one loop per dim of its shape {list(b.shape)}: "
        f"{_suggest(b)} "
        "(split a loop in two rather than index it with // and %)"
    )


def _count_problem(node: ComputeNode, b: BufferInfo) -> str | None:
    n, m = node.numel, b.numel
    if n == m:
        return None
    what = "some of its elements are never written" if n < m else "some of its elements are written twice"
    return f"the store's loops cover {n} points but {b.name!r} has {m} elements, so {what}"


def _affine_problem(node: ComputeNode, b: BufferInfo, form: tuple[int, Digits]) -> str | None:
    """Definite failures of an affine store with as many points as elements, found without
    enumerating: an unused loop, or a range that misses the buffer's first or last element."""
    f = linear_form(node.store.index)
    used = {a.name for a, _ in f.coeffs if isinstance(a, Var)}
    for lv in node.loops:
        if lv.size > 1 and lv.name not in used:
            return (
                f"the store index does not use loop {lv.name!r} (size {lv.size}), so every element of "
                f"{b.name!r} it writes is written {lv.size} times"
            )
    lo = form[0]
    hi = lo + sum((n - 1) * s for s, n in form[1])
    first = b.offset
    last = b.offset + sum((n - 1) * s for n, s in zip(b.shape, b.stride, strict=True))
    if lo > first:
        return _never(b, tuple(0 for _ in b.shape), first)
    if hi < last:
        return _never(b, tuple(n - 1 for n in b.shape), last)
    if lo < first:
        return _gap(b, lo, "")
    if hi > last:
        return _gap(b, hi, "")
    return None


def _enumerable(index: Expr, loops: Sequence[LoopVar]) -> bool:
    names = {lv.name for lv in loops}
    for e in walk(index):
        if isinstance(e, Var):
            if e.name not in names:
                return False
        elif isinstance(e, Const):
            if type(e.value) is not int:
                return False
        elif isinstance(e, Binary):
            if e.op not in _NUMPY_OPS:
                return False
        elif not (isinstance(e, Unary) and e.op == "neg"):
            return False
    return True


def _enumerated(node: ComputeNode, b: BufferInfo) -> str | None:
    """The exact answer, from the store's position at every point of the box."""
    import numpy as np

    loops = node.loops
    box = tuple(lv.size for lv in loops)
    ranges = {lv.name: lv.size for lv in loops}
    wide = any(_unsafe(e, ranges) for e in walk(node.store.index))
    dtype: Any = object if wide else np.int64  # exact Python ints where int64 could overflow
    axes = {
        lv.name: np.arange(lv.size, dtype=np.int64)
        .astype(dtype)
        .reshape(tuple(lv.size if j == i else 1 for j in range(len(loops))))
        for i, lv in enumerate(loops)
    }
    # Positions are inside the storage (the bounds check ran first), so they fit int64.
    pos = np.broadcast_to(_evaluate(np, node.store.index, axes, dtype), box).reshape(-1).astype(np.int64)
    logical = _positions(np, b)
    order = np.argsort(logical, kind="stable")
    ordered = logical[order]
    slot = np.searchsorted(ordered, pos)
    clipped = np.minimum(slot, len(ordered) - 1)
    inside = (slot < len(ordered)) & (ordered[clipped] == pos)
    summary = (
        ""
        if node.numel == b.numel
        else f" (the loops cover {node.numel} points, {b.name!r} has {b.numel} elements)"
    )
    if not inside.all():
        k = int(np.argmin(inside))
        return _gap(b, int(pos[k]), f" (at {_point(loops, np.unravel_index(k, box))})") + summary
    element = order[clipped]
    counts = np.bincount(element, minlength=b.numel)
    bad = counts != 1
    if not bad.any():
        return None
    e = int(np.argmax(bad))
    idx = tuple(int(i) for i in np.unravel_index(e, b.shape)) if b.shape else ()
    if counts[e] == 0:
        return _never(b, idx, int(logical[e])) + summary
    at = np.flatnonzero(element == e)[:2]
    points = " and ".join(_point(loops, np.unravel_index(int(p), box)) for p in at)
    return (
        f"the store writes element {_idx(idx)} of {b.name!r} (storage position {int(logical[e])}) "
        f"{int(counts[e])} times, at {points}; its writer must write each element exactly once" + summary
    )


def _unsafe(e: Expr, ranges: dict[str, int]) -> bool:
    r = interval(e, ranges)
    return r is None or r[0] <= -_INT64_SAFE or r[1] >= _INT64_SAFE


def _evaluate(np: Any, e: Expr, axes: dict[str, Any], dtype: Any) -> Any:
    if isinstance(e, Var):
        return axes[e.name]
    if isinstance(e, Const):
        return np.array(e.value, dtype=dtype)
    if isinstance(e, Unary):
        return np.negative(_evaluate(np, e.x, axes, dtype))
    assert isinstance(e, Binary)  # _enumerable said so
    fn = getattr(np, _NUMPY_OPS[e.op])
    return fn(_evaluate(np, e.a, axes, dtype), _evaluate(np, e.b, axes, dtype))


def _positions(np: Any, b: BufferInfo) -> Any:
    """Storage position of each logical element, row-major over the shape (int64)."""
    pos = np.full((1,) * len(b.shape), b.offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(b.shape, b.stride, strict=True)):
        step = np.arange(n, dtype=np.int64) * s
        pos = pos + step.reshape(tuple(n if j == k else 1 for j in range(len(b.shape))))
    return np.broadcast_to(pos, b.shape).reshape(-1)


# -- messages -------------------------------------------------------------------------------------


def _never(b: BufferInfo, idx: tuple[int, ...], position: int) -> str:
    return (
        f"the store does not write {b.name!r} whole: element {_idx(idx)} (storage position {position}) "
        "is never written; every element of a non-input buffer must be written exactly once by its writer"
    )


def _gap(b: BufferInfo, position: int, where: str) -> str:
    return (
        f"the store writes storage position {position}{where}, which is not an element of {b.name!r} "
        f"(shape {list(b.shape)}, stride {list(b.stride)}, offset {b.offset}): a writer writes exactly the "
        "buffer's elements"
    )


def _idx(idx: Iterable[Any]) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def _point(loops: Sequence[LoopVar], coords: Iterable[Any]) -> str:
    return ", ".join(f"{lv.name}={int(c)}" for lv, c in zip(loops, coords, strict=True)) or "the only point"


def _show(ds: Digits) -> str:
    return ", ".join(f"{s} x {n}" for s, n in ds) or "none"


def _suggest(b: BufferInfo) -> str:
    terms = [
        f"{s}*d{k}" if s != 1 else f"d{k}"
        for k, (n, s) in enumerate(zip(b.shape, b.stride, strict=True))
        if n > 1
    ]
    if b.offset:
        terms.append(str(b.offset))
    return f"{b.name}[{' + '.join(terms) or '0'}]"
