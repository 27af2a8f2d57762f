"""Memory dependencies of nodes, in a canonical form that compares across nodes.

A `MemoryDep` is Inductor's: a buffer, an index over positional variables c0, c1, ... and their
sizes. Canonicalisation (like Inductor's `normalize=True` `canonicalize`): the index is put in
normal form over its loop variables first (`index_form`: `16*(v % 6) + 96*(v // 6)` is `16*v`,
`v % 1` is 0, nested `//` and `%` one digit); size-1 loops are dropped; adjacent loops whose
strides chain (stride_outer == stride_inner * size_inner) are merged, so `x[10*i0 + i1]` over
(10, 10) equals `x[c0]` over (100,); trailing unused variables are dropped (a reduction's read of
a per-row value equals the row-wise write). Two equal deps address the same element at the same
row-major position of their loop boxes; they serve the memory scores and the loop-order search,
while whether a fused read may share a kernel is `access_match`'s to say. Indirect indexing and
extern/template nodes give whole-buffer `StarDep`s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from fuseopt.analysis.index_form import Digit, index_form
from fuseopt.ir.expr import Expr, Load, walk
from fuseopt.ir.graph import ComputeNode, Graph, LibraryNode, LoopVar, Node


@dataclass(frozen=True, slots=True)
class MemoryDep:
    buffer: str
    terms: tuple[tuple[str, int], ...]  # (canonical var or atom text, coefficient), sorted
    const: int
    sizes: tuple[int, ...]
    # Elements touched: product of the sizes of the variables the index uses (Inductor's get_numel).
    numel: int = field(init=False, compare=False, repr=False)
    _hash: int = field(init=False, compare=False, repr=False)
    _text: str = field(init=False, compare=False, repr=False, default="")

    def __post_init__(self) -> None:
        used = self.used_vars()
        n = 1
        for i, s in enumerate(self.sizes):
            if f"c{i}" in used:
                n *= s
        object.__setattr__(self, "numel", n)
        # Deps are dictionary keys in every legality check: hash once.
        object.__setattr__(self, "_hash", hash((self.buffer, self.terms, self.const, self.sizes)))

    def __hash__(self) -> int:
        return self._hash

    def used_vars(self) -> set[str]:
        out: set[str] = set()
        for name, _ in self.terms:
            if name.startswith("c") and name[1:].isdigit():
                out.add(name)
            else:
                out.update(_CANON_VAR.findall(name))
        return out

    def index_text(self) -> str:
        parts: list[str] = []
        for name, k in self.terms:
            atom = name if name.isidentifier() else f"({name})"
            parts.append(atom if k == 1 else f"-{atom}" if k == -1 else f"{k}*{atom}")
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts).replace("+ -", "- ")

    def text(self) -> str:
        if not self._text:  # the sort key of every mismatch detail: render once
            object.__setattr__(self, "_text", f"{self.buffer}[{self.index_text()}] over {list(self.sizes)}")
        return self._text


@dataclass(frozen=True, slots=True)
class StarDep:
    """A whole-buffer dependency (indirect indexing, extern/template nodes)."""

    buffer: str

    def text(self) -> str:
        return f"{self.buffer}[*]"


Dep = MemoryDep | StarDep
_CANON_VAR = re.compile(r"\bc\d+\b")


@dataclass(frozen=True, slots=True)
class NodeDeps:
    """Reads and writes of one node (reads keep one entry per distinct dep, in first-use order)."""

    node: str
    reads: tuple[Dep, ...]
    writes: tuple[Dep, ...]
    # Every dep read or written, for membership tests (the legality check names the member of a
    # group that has a dependency).
    all: frozenset[Dep] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all", frozenset((*self.reads, *self.writes)))

    def buffers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([d.buffer for d in self.reads] + [d.buffer for d in self.writes]))


def canonical_dep(buffer: str, index: Expr, loops: Sequence[LoopVar], *, merge: bool = True) -> Dep:
    """The canonical MemoryDep of `buffer[index]` over `loops` (outer first)."""
    form = _canonical(index, tuple(loops), merge)
    return StarDep(buffer) if form is None else _memory_dep(buffer, form)


@lru_cache(maxsize=65536)
def _memory_dep(buffer: str, form: _Form) -> MemoryDep:
    """One MemoryDep object for equal dependencies (the planner asks about the same accesses of
    transformed nodes again and again): built once, and compared by identity first."""
    return MemoryDep(buffer, *form)


# (terms, const, sizes) of a MemoryDep, or None for an indirect index (a StarDep)
_Form = tuple[tuple[tuple[str, int], ...], int, tuple[int, ...]]


@lru_cache(maxsize=65536)
def _canonical(index: Expr, loops: tuple[LoopVar, ...], merge: bool) -> _Form | None:
    """The canonical form of an index over loops, whatever buffer it addresses (the nodes of a
    graph repeat a few access patterns over many buffers)."""
    if any(isinstance(n, Load) for n in walk(index)):
        return None
    # The index in normal form over its loop variables (`index_form`: each variable its own
    # base), so that equal functions compare equal: `16*(v % 6) + 96*(v // 6)` is `16*v`,
    # `v % 1` is 0, nested // and % are one digit. Size-1 loops are dropped (0 everywhere).
    sizes = {lv.name: lv.size for lv in loops if lv.size != 1}
    digits = {lv.name: (Digit(lv.name, 1, None) if lv.size != 1 else None) for lv in loops}
    form = index_form(index, digits, sizes)
    loops = tuple(lv for lv in loops if lv.size != 1)
    coeff: dict[str, int] = {}
    locked: set[str] = set(form.atom_bases)
    for d, k in form.digits:
        if d.div == 1 and d.mod is None:
            coeff[d.base] = k
        else:
            locked.add(d.base)

    # Each loop: (names folded into it outer->inner with their sizes, size, stride); merging keeps
    # the row-major position, so a merged variable m of (i, j) is i*size_j + j.
    dims: list[tuple[tuple[str, ...], int, int | None]] = [
        ((lv.name,), lv.size, None if lv.name in locked else coeff.get(lv.name, 0)) for lv in loops
    ]
    if merge:
        changed = True
        while changed:
            changed = False
            for k in range(len(dims) - 1, 0, -1):
                (on, osz, ost), (inn, isz, ist) = dims[k - 1], dims[k]
                if ost is not None and ist is not None and ist * isz == ost:
                    dims[k - 1 : k + 1] = [(on + inn, osz * isz, ist)]
                    changed = True
                    break
    # Drop trailing unused dims.
    while dims and dims[-1][2] == 0:
        dims.pop()
    terms: dict[str, int] = {}
    renames: dict[str, str] = {}
    for pos, (names, _size, stride) in enumerate(dims):
        cname = f"c{pos}"
        if stride:
            terms[cname] = stride
        if len(names) == 1:
            renames[names[0]] = cname
    if locked:
        # The digits and atoms of the locked variables again, over their canonical names (the
        # others appear only linearly, in the strides above: they get names no term can take).
        named = {v: renames[v] if v in locked else f"~{v}" for v in sizes}
        again = index_form(
            index,
            {v: (Digit(named[v], 1, None) if v in named else None) for v in digits},
            {named[v]: n for v, n in sizes.items()},
        )
        for d, k in again.digits:
            if not d.base.startswith("~"):
                terms[d.text()] = terms.get(d.text(), 0) + k
        for a, k in again.atoms:
            terms[a] = terms.get(a, 0) + k
    sorted_terms = tuple(sorted(((n, k) for n, k in terms.items() if k != 0), key=_term_key))
    return sorted_terms, form.const, tuple(size for _, size, _ in dims)


def _term_key(t: tuple[str, int]) -> tuple[int, int, str]:
    name = t[0]
    if name.startswith("c") and name[1:].isdigit():
        return (0, int(name[1:]), "")
    return (1, 0, name)


def node_deps(node: Node, *, merge: bool = True) -> NodeDeps:
    """Reads and writes of a node. A reduction's reads range over loops+reduce, its write over loops."""
    if isinstance(node, LibraryNode):
        # Whole-buffer dependencies: a library call's views are opaque to fusion (it never fuses).
        stars = tuple(StarDep(b) for b in node.read_buffers())
        return NodeDeps(node.name, stars, tuple(StarDep(o) for o in node.outputs))
    assert isinstance(node, ComputeNode)
    all_loops = (*node.loops, *node.reduce)
    reads: dict[Dep, None] = {}
    for ld in node.reads():
        reads[canonical_dep(ld.buffer, ld.index, all_loops, merge=merge)] = None
    write = canonical_dep(node.store.buffer, node.store.index, node.loops, merge=merge)
    return NodeDeps(node.name, tuple(reads), (write,))


def graph_deps(graph: Graph, *, merge: bool = True) -> dict[str, NodeDeps]:
    return {n.name: node_deps(n, merge=merge) for n in graph.nodes}


def dep_bytes(dep: Dep, graph: Graph) -> int:
    buf = graph.buffer(dep.buffer)
    n = buf.numel if isinstance(dep, StarDep) else dep.numel
    return n * buf.dtype.itemsize
