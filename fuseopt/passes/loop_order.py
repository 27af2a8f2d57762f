"""Loop-order unification: choose loop orders *during and after* fusion, not before it.

The fusion pass calls `LoopOrder.try_pair` on a pair that failed with `index_mismatch` or
`no_shared_data` (in its last round, as Inductor's LOAF). For an unfused node on either side
(the pointwise side first) it tries, in this order:
  - reorder: a permutation of the node's loops (and reduce loops) that makes its access of a
    shared buffer equal to the other side's. Searched over all permutations up to 6 loops (closest
    to the original order first), by stride order beyond that. A node with one read and one write
    whose *read* becomes contiguous is reported as an index inversion;
  - reindex: a pointwise node with numel == numel*rnumel of a reduction is re-factored to the
    reduction's (loops, reduce) shape (docs/cases.md rms_reshape, floordiv_broadcast).
The transformed node is kept only if the legality check then passes; `finish` rolls back any
transformation whose node ended up fused with nothing. `merge_loops` (a pipeline pass after
fusion) merges adjacent loops whose strides chain in every access, so indices flatten.
Every transformation is proven a bijection of the loop box (`loop_transform`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass, field

from fuseopt.analysis.deps import MemoryDep, canonical_dep
from fuseopt.analysis.shapes import split_loops
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.expr import Load, Var
from fuseopt.ir.graph import ComputeNode, Graph, LoopVar, Node
from fuseopt.passes.fusion_state import FusionState, Group
from fuseopt.passes.legality import Verdict, check_fusion
from fuseopt.passes.loop_transform import (
    boundary,
    keeps_reduce_order,
    merge_all,
    mergeable_pairs,
    permute,
    refactor,
)
from fuseopt.passes.options import Options
from fuseopt.plan import Reorder

MAX_EXHAUSTIVE_LOOPS = 6


@dataclass
class _Applied:
    before: tuple[ComputeNode, ...]
    after: tuple[ComputeNode, ...]
    members: frozenset[str]  # the group when the transformation was made
    records: tuple[Reorder, ...]


@dataclass(frozen=True)
class Proposal:
    """A loop transformation of one group under which a pair fuses (not installed yet)."""

    gid: int
    members: tuple[str, ...]  # the group when proposed
    before: tuple[ComputeNode, ...]
    after: tuple[ComputeNode, ...]
    records: tuple[Reorder, ...]


# `_search`'s answer: the verdict, the side transformed (0: the first group), its nodes before and after, records
_Found = tuple[Verdict, int, tuple[ComputeNode, ...], tuple[ComputeNode, ...], tuple[Reorder, ...]] | None


@dataclass(frozen=True)
class _Candidate:
    """A transformation of a whole group, named by what it does to positions, not by any node:
    ("permute", loop order, reduce order) or ("reindex", the reduction shape)."""

    key: tuple[object, ...]
    rank: tuple[object, ...]  # the candidates' order: fewest inversions first, reindex last
    kind: str  # reorder | invert | reindex
    target: str  # what it matches (for the record's detail)


@dataclass
class LoopOrder:
    """The fusion pass's reorder hook; remembers what it changed so unused changes roll back.

    The transformation tried for a pair never depends on which member or side was seen first:
    every member's access of every shared buffer proposes the permutations that make it equal to
    any access of the other group; candidates are keyed by the positions they move and tried in
    one canonical order (the pointwise side, then the smaller group, then fewest inversions, then
    the permutation itself; the side's smallest node name only between sides of equal rank).
    """

    applied: list[_Applied] = field(default_factory=list)
    # (node, transformation) -> the transformed node (None: it cannot take it). Nodes are frozen
    # and kept alive by the entry, so identity names them; a group proposed for again as it grows
    # transforms only its new members.
    _applied_memo: dict[tuple[int, tuple[object, ...]], tuple[ComputeNode, ComputeNode | None]] = field(
        default_factory=dict
    )
    _taken: dict[int, tuple[Graph, frozenset[str]]] = field(default_factory=dict)
    _matches: dict[tuple[object, ...], tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]] = field(
        default_factory=dict
    )
    # `propose`'s searches by the pair's nodes (kept alive, so identity names them), reach and options
    _searched: dict[tuple[object, ...], tuple[tuple[Node, ...], _Found]] = field(default_factory=dict)

    def try_pair(
        self, state: FusionState, g1: Group, g2: Group, opts: Options
    ) -> tuple[Verdict, list[Reorder]] | None:
        """The first candidate (in the canonical order) under which the pair fuses, installed."""
        found = self.propose(state, g1, g2, opts)
        if found is None:
            return None
        v, prop = found
        state.install(prop.after)
        self.applied.append(_Applied(prop.before, prop.after, frozenset(prop.members), prop.records))
        return v, list(prop.records)

    def propose(
        self, state: FusionState, g1: Group, g2: Group, opts: Options
    ) -> tuple[Verdict, Proposal] | None:
        """The first candidate under which the pair fuses, and its verdict; the state is left as
        it was (the fusion pass installs the proposal only when it takes the pair)."""
        if g1.is_library or g2.is_library:
            return None
        # A loop transformation changes how a group indexes its buffers, never which buffers or
        # nodes it has: a pair over the size cap or closing a cycle stays so under every one.
        if len(g1.members) + len(g2.members) > opts.max_fusion_size or state.would_create_cycle(g1, g2):
            return None
        # What the search finds depends on the two groups' nodes as they are (members, their
        # transformations), on which group reaches the other, the detail asked for and the
        # options; nothing else of the state (a cycle through a third group is ruled out above).
        # A plan made again (a replan at the size cap) meets most of its pairs again.
        nodes = (tuple(state.node(m) for m in g1.members), tuple(state.node(m) for m in g2.members))
        reach = state.reach.reaches
        key = (
            tuple(map(id, nodes[0])),
            tuple(map(id, nodes[1])),
            reach(g1.gid, g2.gid),
            reach(g2.gid, g1.gid),
            state.detailed,
            opts,
        )
        hit = self._searched.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], (*nodes[0], *nodes[1]), strict=True)):
            hit = self._searched[key] = ((*nodes[0], *nodes[1]), self._search(state, g1, g2, opts))
        found = hit[1]
        if found is None:
            return None
        v, side, before, after, records = found
        mine = (g1, g2)[side]
        return v, Proposal(mine.gid, tuple(mine.members), before, after, records)

    def _search(self, state: FusionState, g1: Group, g2: Group, opts: Options) -> _Found:
        """`propose`'s search, on the state as it is (see `_Found`)."""
        common = sorted(set(g1.buffer_names()) & set(g2.buffer_names()))
        if not common:
            return None
        # Candidates in the canonical order: by side (the pointwise side, then the smaller group),
        # then by rank, the side's smallest node name last. A side's candidates are searched for
        # only once every candidate of a side before it has failed.
        sides = sorted(
            (
                ((mine.is_reduction, len(mine.members)), index, mine, other)
                for index, (mine, other) in enumerate(((g1, g2), (g2, g1)))
            ),
            key=lambda s: s[0],
        )
        if sides[0][0] == sides[1][0]:
            batches = [sides]
        else:
            batches = [sides[:1], sides[1:]]
        for batch in batches:
            options: list[tuple[tuple[object, ...], int, _Candidate, list[ComputeNode]]] = []
            for side, index, mine, other in batch:
                members = self._uniform_members(state, mine)
                if members is None:
                    continue
                for cand in self._candidates(state, members, other, common):
                    options.append(((side, cand.rank, state.label(mine)), index, cand, members))
            options.sort(key=lambda o: o[0])
            for _, index, cand, members in options:
                after = self._apply(state, cand, members)
                if after is None:
                    continue
                with state.trial(after):
                    v = check_fusion(state, g1, g2, opts)
                if v.ok:
                    recs = tuple(
                        sorted(
                            (_record(b, a, cand) for b, a in zip(members, after, strict=True)),
                            key=lambda r: r.node,
                        )
                    )
                    return v, index, tuple(members), after, recs
        return None

    @staticmethod
    def _uniform_members(state: FusionState, group: Group) -> list[ComputeNode] | None:
        """The group's nodes, if all are compute nodes of one loop structure (a group moves as
        one: every member gets the same transformation, which keeps their row-major positions
        aligned); None otherwise."""
        nodes = [state.node(m) for m in group.members]
        members = [n for n in nodes if isinstance(n, ComputeNode)]
        if len(members) != len(nodes):
            return None
        shape = _shape(members[0])
        if any(_shape(n) != shape for n in members[1:]):
            return None
        return members

    def _candidates(
        self, state: FusionState, members: list[ComputeNode], other: Group, buffers: list[str]
    ) -> list[_Candidate]:
        """Every transformation of the group proposed by any member against any access of other."""
        found: dict[tuple[object, ...], _Candidate] = {}
        wanted = set(buffers)
        found_deps: dict[str, set[MemoryDep]] = {buf: set() for buf in buffers}
        for d in (*other.writes, *other.reads):
            if d.buffer in wanted and isinstance(d, MemoryDep):
                found_deps[d.buffer].add(d)
        targets = {buf: sorted(deps, key=lambda d: d.text()) for buf, deps in found_deps.items()}
        for node in members:
            for buf in buffers:
                if not targets[buf]:
                    continue
                for ld, is_store in _access_indices(node, buf):
                    inv = _is_inversion(node, buf, is_store)
                    for target in targets[buf]:
                        for p, rp in self._matching(node, ld, is_store, target):
                            key: tuple[object, ...] = ("permute", p, rp)
                            old = found.get(key)
                            found[key] = _Candidate(
                                key,
                                (0, _inversions(p) + _inversions(rp), p, rp),
                                "invert" if inv or (old is not None and old.kind == "invert") else "reorder",
                                min(target.text(), old.target) if old is not None else target.text(),
                            )
        lead = members[0]
        shapes: dict[tuple[int, ...], str] = {}  # reduction shape -> its smallest node name
        for m in other.members:
            red = state.node(m)
            if isinstance(red, ComputeNode) and red.kind == "reduction":
                shape = tuple(lv.size for lv in (*red.loops, *red.reduce))
                shapes[shape] = min(shapes.get(shape, m), m)
        sizes = [lv.size for lv in lead.loops]
        for shape, red_name in sorted(shapes.items()):
            if lead.kind == "pointwise" and lead.numel == _prod(shape) and list(shape) != sizes:
                key = ("reindex", shape)
                found[key] = _Candidate(key, (1, 0, shape, ()), "reindex", red_name)
        return sorted(found.values(), key=lambda c: c.rank)

    def _matching(
        self, node: ComputeNode, ld: Load, is_store: bool, target: MemoryDep
    ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        """The (loop order, reduce order) permutations that make this access equal to target
        (memoised by the access's content: many nodes of a graph repeat one access pattern over
        other buffers; the target is an access of the same buffer, so its form decides)."""
        mkey = (ld.index, node.loops, node.reduce, is_store, target.terms, target.const, target.sizes)
        hit = self._matches.get(mkey)
        if hit is None:
            hit = self._matches[mkey] = tuple(_permutations_matching(node, ld, is_store, target))
        return hit

    def _apply(
        self, state: FusionState, cand: _Candidate, members: list[ComputeNode]
    ) -> tuple[ComputeNode, ...] | None:
        """The candidate applied to every member (None when a member cannot take it)."""
        if cand.key[0] == "permute":
            _, p, rp = cand.key
            assert isinstance(p, tuple) and isinstance(rp, tuple)

            def permuted(n: ComputeNode) -> ComputeNode | None:
                reordered = rp != tuple(sorted(rp))
                if n.reduce and reordered and keeps_reduce_order(n):
                    return None  # an argmax/argmin's result is a position in its reduce order
                return permute(n, p, rp if n.reduce else None)

            return self._each(members, cand.key, permuted)
        shape = cand.key[1]
        assert isinstance(shape, tuple)
        taken = self._buffer_names(state.graph) | {lv.name for n in members for lv in n.loops}
        fresh = _fresh_loops(list(shape), taken)
        return self._each(members, ("reindex", fresh), lambda n: refactor(n, fresh))

    def _each(
        self,
        members: list[ComputeNode],
        key: tuple[object, ...],
        fn: Callable[[ComputeNode], ComputeNode | None],
    ) -> tuple[ComputeNode, ...] | None:
        out: list[ComputeNode] = []
        memo = self._applied_memo
        for n in members:
            hit = memo.get((id(n), key))
            if hit is None or hit[0] is not n:
                hit = memo[(id(n), key)] = (n, fn(n))
            if hit[1] is None:
                return None
            out.append(hit[1])
        return tuple(out)

    def _buffer_names(self, graph: Graph) -> frozenset[str]:
        hit = self._taken.get(id(graph))
        if hit is None or hit[0] is not graph:
            hit = self._taken[id(graph)] = (graph, frozenset(b.name for b in graph.buffers))
        return hit[1]

    def finish(self, state: FusionState, reorders: list[Reorder]) -> list[Reorder]:
        """Roll back transformations that led to no fusion; returns the reorders that stand."""
        dropped: set[Reorder] = set()
        for app in reversed(self.applied):
            group = state.group(app.after[0].name)
            unchanged = frozenset(group.members) == app.members
            current = all(state.node(a.name) is a for a in app.after)
            if unchanged and current:
                state.install(app.before)
                dropped.update(app.records)
        return [r for r in reorders if r not in dropped]


def _shape(n: ComputeNode) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(lv.size for lv in n.loops), tuple(lv.size for lv in n.reduce)


def _prod(xs: tuple[int, ...]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _record(before: ComputeNode, after: ComputeNode, cand: _Candidate) -> Reorder:
    if cand.kind == "reindex":
        detail = f"loops {_names(before.loops)} -> {_names(after.loops)} (the shape of {cand.target})"
    else:
        detail = f"loops {_names(before.loops)} -> {_names(after.loops)} to match {cand.target}"
    loops = tuple((lv.name, lv.size) for lv in after.loops)
    return Reorder(before.name, _order_of(before, after), cand.kind, detail, loops)


def _order_of(old: ComputeNode, new: ComputeNode) -> tuple[int, ...]:
    names = [lv.name for lv in old.loops]
    if sorted(lv.name for lv in new.loops) == sorted(names):
        return tuple(names.index(lv.name) for lv in new.loops)
    return tuple(range(len(new.loops)))


def _access_indices(node: ComputeNode, buffer: str) -> list[tuple[Load, bool]]:
    out: list[tuple[Load, bool]] = []
    if node.store.buffer == buffer:
        out.append((node.store, True))
    out.extend((ld, False) for ld in node.reads() if ld.buffer == buffer)
    return out


def _fresh_loops(sizes: list[int], taken: Set[str]) -> tuple[LoopVar, ...]:
    """Loop variables named q0, q1, ... avoiding every name already in use (deterministic)."""
    out: list[LoopVar] = []
    i = 0
    for size in sizes:
        while f"q{i}" in taken:
            i += 1
        out.append(LoopVar(f"q{i}", size))
        i += 1
    return tuple(out)


def _names(loops: tuple[LoopVar, ...]) -> str:
    return "(" + ", ".join(f"{lv.name}={lv.size}" for lv in loops) + ")"


def _is_inversion(old: ComputeNode, buf: str, is_store: bool) -> bool:
    reads = old.read_buffers()
    return not is_store and len(reads) == 1 and reads[0] == buf


def _permutations_matching(
    node: ComputeNode, ld: Load, is_store: bool, target: MemoryDep
) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(loop order, reduce order) pairs, other than the identity, under which the access equals
    target; all of them up to MAX_EXHAUSTIVE_LOOPS loops, the stride order beyond."""
    nl, nr = len(node.loops), len(node.reduce)
    if nl <= MAX_EXHAUSTIVE_LOOPS and nr <= 4:
        pairs: Iterator[tuple[tuple[int, ...], tuple[int, ...]]] = itertools.product(
            itertools.permutations(range(nl)), itertools.permutations(range(nr))
        )
    else:  # many loops: sort by stride (descending) -- Inductor's normalize_with_stride_order
        strides = _strides(ld)
        p = tuple(sorted(range(nl), key=lambda i: (-strides.get(node.loops[i].name, 0), i)))
        rp = tuple(sorted(range(nr), key=lambda i: (-strides.get(node.reduce[i].name, 0), i)))
        pairs = iter([(p, rp)])
    for p, rp in pairs:
        if p == tuple(range(nl)) and rp == tuple(range(nr)):
            continue
        loops = tuple(node.loops[i] for i in p)
        if not is_store:
            loops = (*loops, *(node.reduce[i] for i in rp))
        if canonical_dep(ld.buffer, ld.index, loops) == target:
            yield p, rp


def _strides(ld: Load) -> dict[str, int]:
    f = linear_form(ld.index)
    return {atom.name: abs(k) for atom, k in f.coeffs if isinstance(atom, Var)}


def _inversions(p: tuple[int, ...]) -> int:
    return sum(1 for i in range(len(p)) for j in range(i + 1, len(p)) if p[i] > p[j])


def merge_loops(graph: Graph, kernels: tuple[tuple[str, ...], ...]) -> tuple[Graph, list[Reorder]]:
    """After fusion: merge adjacent loops that chain in every access of a node (indices flatten).

    Merging keeps each node's row-major positions, so nodes of one kernel stay aligned; inside a
    reduction kernel a pointwise node's (numel | rnumel) split is kept.
    """
    records: list[Reorder] = []
    replaced: dict[str, ComputeNode] = {}
    for members in kernels:
        nodes = [n for n in (graph.node(m) for m in members) if isinstance(n, ComputeNode)]
        red = next((n for n in nodes if n.kind == "reduction"), None)
        total = max((n.numel * n.rnumel for n in nodes), default=1)

        # A boundary (in the kernel's points) may go only where every member that has it can
        # merge it too: the members of a kernel then keep one common factorization.
        kept: set[int] = set()
        can: set[int] = set()
        for n in nodes:
            scale = total // (n.numel * n.rnumel)
            positions = set(mergeable_pairs(n, _split_of(n, red)))
            for k in range(1, len(n.loops) + len(n.reduce)):
                (can if k in positions else kept).add(boundary(n, k, scale))
        allowed = can - kept
        for n in nodes:
            new, count = merge_all(n, _split_of(n, red), allowed, total // (n.numel * n.rnumel))
            if count:
                replaced[n.name] = new
                records.append(
                    Reorder(
                        n.name,
                        tuple(range(len(new.loops))),
                        "merge",
                        f"merged {count} loop pair(s): {_names(n.loops)} -> {_names(new.loops)}",
                        tuple((lv.name, lv.size) for lv in new.loops),
                    )
                )
    if not replaced:
        return graph, records
    return graph.replace(nodes=tuple(replaced.get(n.name, n) for n in graph.nodes)), records


def _split_of(n: ComputeNode, red: ComputeNode | None) -> int | None:
    """The x|r boundary a pointwise node keeps inside a reduction kernel (None: no such boundary)."""
    if red is not None and n.kind == "pointwise" and n.numel == red.numel * red.rnumel and red.rnumel > 1:
        return split_loops([lv.size for lv in n.loops], red.numel)
    return None


def normalize_loops(graph: Graph) -> tuple[Graph, list[Reorder]]:
    """Before fusion: order each node's loops by its store's strides, largest first.

    The loop order in a graph file is incidental (what a compiler picked before fusion); with the
    store contiguous in loop order, two graphs that differ only in those choices plan alike.
    Loops of equal stride keep their order; a store that is not affine in the loops is left alone.
    """
    records: list[Reorder] = []
    replaced: dict[str, ComputeNode] = {}
    for n in graph.nodes:
        if not isinstance(n, ComputeNode) or len(n.loops) < 2:
            continue
        strides = _strides(n.store)
        f = linear_form(n.store.index)
        if any(not isinstance(atom, Var) for atom, _ in f.coeffs):
            continue
        order = tuple(sorted(range(len(n.loops)), key=lambda i: (-strides.get(n.loops[i].name, 0), i)))
        if order == tuple(range(len(n.loops))):
            continue
        new = permute(n, order)
        replaced[n.name] = new
        records.append(
            Reorder(
                n.name,
                order,
                "normalize",
                f"loops {_names(n.loops)} -> {_names(new.loops)} (store order)",
                tuple((lv.name, lv.size) for lv in new.loops),
            )
        )
    if not replaced:
        return graph, records
    return graph.replace(nodes=tuple(replaced.get(n.name, n) for n in graph.nodes)), records
