"""Slices of a concatenation computed into the node that copies them together.

Inductor computes the inputs of a concatenation (`ConcatKernel`) straight into slices of its
output; FORMAT has no aliasing, so each slice is a buffer of its own, and a concatenation a library
call reads is copied from them by a node `<call>_<concatenation>` (`LibraryConverter._materialize`).
That is one more kernel, and one more write and read of every slice, than Inductor's (the partial
rotary embeddings of Phi and Persimmon, ConvBERT's mixed attention heads).

Where a slice's writer is a pointwise node whose store is a row-major placement of its loop
variables in the slice, and the copy is the slice's only reader, the writer's value is computed in
the copy instead, at the copy's point (each loop variable of the writer is the copy's variable of
the same stride, shifted along the concatenated dim), cast to the slice's dtype as its store
would round it; the writer and its buffer go. Nothing else changes: anything else is left as it
is, copied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from fuseopt.capture.layout import Layout
from fuseopt.errors import ExprError
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.expr import Binary, Cast, Const, Expr, Load, Var, to_text, transform, walk
from fuseopt.ir.parser import parse_expr_text


def inline_slices(
    nodes: list[dict[str, Any]],
    copies: Mapping[str, tuple[str, ...]],
    written: Mapping[str, Layout],
    keep: set[str],
) -> dict[str, list[str]]:
    """Inline into each copy node of `copies` (node -> its slices' buffers) the writers of its
    slices that qualify (see the module); `nodes` is changed in place, and the names of the
    writers inlined returned by copy. `keep`: buffers that must stay (graph outputs)."""
    if not copies:
        return {}
    by_name = {d["name"]: d for d in nodes}
    writer = {d["store"].partition("[")[0]: d["name"] for d in nodes if "store" in d}
    inlined: dict[str, list[str]] = {}
    for copy, slices in copies.items():
        doc = by_name[copy]
        value = parse_expr_text(doc["value"])
        sizes = {v: n for v, n in doc["loops"]}
        for b in slices:
            w = by_name.get(writer.get(b, ""))
            if b in keep or w is None or "reduce" in w or "loops" not in w or _readers(nodes, b) != {copy}:
                continue
            try:
                new = _at_copy_point(w, value, b, sizes, written[b])
                if new is not None:
                    parse_expr_text(to_text(new))  # within the format's limits for one expression
            except ExprError:
                new = None
            if new is not None:
                value = new
                inlined.setdefault(copy, []).append(w["name"])
        doc["value"] = to_text(value)
    gone = {w for ws in inlined.values() for w in ws}
    nodes[:] = [d for d in nodes if d["name"] not in gone]
    return inlined


def _readers(nodes: list[dict[str, Any]], buffer: str) -> set[str]:
    """The node documents that read `buffer` (a library call's views and v1 inputs included),
    found in their text: a load is the buffer's name, not part of another name, then `[`."""
    load = re.compile(rf"(?<![\w.]){re.escape(buffer)}\[")
    return {d["name"] for d in nodes if buffer in _reads(d) or load.search(d.get("value", ""))}


def _reads(doc: Mapping[str, Any]) -> set[str]:
    """The buffers a library call document reads (views and v1 inputs)."""
    out = set(doc.get("inputs", ()))

    def visit(x: Any) -> None:
        if isinstance(x, dict) and "buffer" in x:
            out.add(x["buffer"])
        elif isinstance(x, list):
            for y in x:
                visit(y)

    visit(doc.get("args", []))
    visit(list(doc.get("kwargs", {}).values()))
    return out


def _at_copy_point(
    w: Mapping[str, Any], copy_value: Expr, buffer: str, copy_sizes: Mapping[str, int], layout: Layout
) -> Expr | None:
    """`copy_value` with its loads of `buffer` replaced by writer `w`'s value at the copy's point,
    or None where the placement does not match (see the module)."""
    store = parse_expr_text(w["store"])
    assert isinstance(store, Load)
    own = linear_form(store.index)
    w_sizes = {v: n for v, n in w["loops"]}
    strides = {a.name: k for a, k in own.coeffs if isinstance(a, Var)}
    if (
        len(strides) != len(own.coeffs)
        or len(set(strides.values())) != len(strides)
        or set(strides) != set(w_sizes)
    ):
        return None
    loads = {e for e in walk(copy_value) if isinstance(e, Load) and e.buffer == buffer}
    replacement: dict[Load, Expr] = {}
    for ld in loads:
        at = linear_form(ld.index)
        by_stride = {k: a.name for a, k in at.coeffs if isinstance(a, Var)}
        if len(by_stride) != len(at.coeffs) or set(by_stride) != set(strides.values()):
            return None
        shift = at.const - own.const
        mapping: dict[str, Expr] = {}
        for v, k in strides.items():
            x = by_stride[k]
            if w_sizes[v] > copy_sizes[x]:
                return None
            mapping[v] = Var(x)
            if w_sizes[v] < copy_sizes[x] and shift:  # the concatenated dim: shifted by the slice's start
                if shift % k:
                    return None
                delta = shift // k
                mapping[v] = (
                    Binary("add", Var(x), Const(delta)) if delta > 0 else Binary("sub", Var(x), Const(-delta))
                )
                shift = 0
        if shift:
            return None
        replacement[ld] = Cast(transform(parse_expr_text(w["value"]), _renamed(mapping)), layout.dtype)

    def replaced(e: Expr) -> Expr | None:
        return replacement.get(e) if isinstance(e, Load) else None

    return transform(copy_value, replaced)


def _renamed(mapping: Mapping[str, Expr]) -> Callable[[Expr], Expr | None]:
    def rename(e: Expr) -> Expr | None:
        return mapping.get(e.name) if isinstance(e, Var) else None

    return rename
