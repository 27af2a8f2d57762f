"""Loop-order unification: choose loop orders *during and after* fusion, not before it.

The fusion pass calls `LoopOrder.try_pair` on a pair that failed with `index_mismatch` or
`no_shared_data` (in its last round, as Inductor's LOAF). For an unfused node on either side
(the pointwise side first) it tries, in this order:
  - reorder: a permutation of the node's loops (and reduce loops) that makes its access of a
    shared buffer equal to the other side's. Searched over all permutations up to 6 loops (closest
    to the original order first), by stride order beyond that. A node with one read and one write
    whose *read* becomes contiguous is reported as an index inversion;
  - reindex: a pointwise node with numel == numel*rnumel of a reduction is re-factored to the
    reduction's (loops, reduce) shape (CASES.md rms_reshape, floordiv_broadcast).
The transformed node is kept only if the legality check then passes; `finish` rolls back any
transformation whose node ended up fused with nothing. `merge_loops` (a pipeline pass after
fusion) merges adjacent loops whose strides chain in every access, so indices flatten.
Every transformation is proven a bijection of the loop box (`loop_transform`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from fuseopt.analysis.deps import MemoryDep, canonical_dep
from fuseopt.analysis.shapes import split_loops
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.expr import Load, Var, walk
from fuseopt.ir.graph import ComputeNode, Graph, LoopVar
from fuseopt.passes.fusion_state import FusionState, Group
from fuseopt.passes.legality import Verdict, check_fusion
from fuseopt.passes.loop_transform import boundary, merge_all, mergeable_pairs, permute, refactor
from fuseopt.passes.options import Options
from fuseopt.plan import Reorder

MAX_EXHAUSTIVE_LOOPS = 6


@dataclass
class _Applied:
    before: tuple[ComputeNode, ...]
    after: tuple[ComputeNode, ...]
    members: frozenset[str]  # the group when the transformation was made
    records: tuple[Reorder, ...]


@dataclass
class LoopOrder:
    """The fusion pass's reorder hook; remembers what it changed so unused changes roll back."""

    applied: list[_Applied] = field(default_factory=list)

    def try_pair(
        self, state: FusionState, g1: Group, g2: Group, opts: Options
    ) -> tuple[Verdict, list[Reorder]] | None:
        common = set(g1.buffer_names()) & set(g2.buffer_names())
        if not common or g1.is_library or g2.is_library:
            return None
        sides = [(g1, g2), (g2, g1)]
        # Prefer transforming the pointwise side (Inductor reorders only pointwise nodes).
        sides.sort(key=lambda s: (s[0].is_reduction, len(s[0].members)))
        for mine, other in sides:
            nodes = [state.node(m) for m in mine.members]
            if not all(isinstance(n, ComputeNode) for n in nodes):
                continue
            members = [n for n in nodes if isinstance(n, ComputeNode)]
            sizes = {(tuple(lv.size for lv in n.loops), tuple(lv.size for lv in n.reduce)) for n in members}
            # A group moves as one: every member gets the same transformation, which keeps their
            # row-major positions aligned. That needs one loop structure across the group.
            if len(sizes) != 1:
                continue
            lead = next((n for n in members if (set(n.read_buffers()) | {n.output}) & common), members[0])
            saved = state.version[mine.gid]
            for new, kind, detail in _candidates(state, lead, other, sorted(common)):
                after = tuple(_same_transform(lead, new, n) for n in members)
                if any(a is None for a in after):
                    continue
                done = tuple(a for a in after if a is not None)
                state.install(done)
                v = check_fusion(state, g1, g2, opts)
                if v.ok:
                    recs = tuple(
                        Reorder(
                            b.name, _order_of(b, a), kind, detail, tuple((lv.name, lv.size) for lv in a.loops)
                        )
                        for b, a in zip(members, done, strict=True)
                    )
                    self.applied.append(_Applied(tuple(members), done, frozenset(mine.members), recs))
                    return v, list(recs)
                state.install(members, version=saved)
        return None

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


def _same_transform(lead_old: ComputeNode, lead_new: ComputeNode, node: ComputeNode) -> ComputeNode | None:
    """Apply to `node` the transformation that took lead_old to lead_new (same loop structure)."""
    if node is lead_old:
        return lead_new
    old_names = [lv.name for lv in lead_old.loops]
    new_names = [lv.name for lv in lead_new.loops]
    if sorted(new_names) == sorted(old_names):  # a permutation: same positions for every member
        order = [old_names.index(n) for n in new_names]
        rnames = [lv.name for lv in lead_old.reduce]
        rorder = [rnames.index(lv.name) for lv in lead_new.reduce] if lead_old.reduce else None
        return permute(node, order, rorder)
    return refactor(node, lead_new.loops)


def _order_of(old: ComputeNode, new: ComputeNode) -> tuple[int, ...]:
    names = [lv.name for lv in old.loops]
    if sorted(lv.name for lv in new.loops) == sorted(names):
        return tuple(names.index(lv.name) for lv in new.loops)
    return tuple(range(len(new.loops)))


def _target_dep(group: Group, buffer: str) -> MemoryDep | None:
    for d in (*group.writes, *group.reads):
        if d.buffer == buffer and isinstance(d, MemoryDep):
            return d
    return None


def _access_indices(node: ComputeNode, buffer: str) -> list[tuple[Load, bool]]:
    out: list[tuple[Load, bool]] = []
    if node.store.buffer == buffer:
        out.append((node.store, True))
    out.extend((ld, False) for ld in walk(node.value) if isinstance(ld, Load) and ld.buffer == buffer)
    return out


def _candidates(
    state: FusionState, node: ComputeNode, other: Group, buffers: list[str]
) -> Iterator[tuple[ComputeNode, str, str]]:
    seen: set[tuple[tuple[LoopVar, ...], tuple[LoopVar, ...]]] = {(node.loops, node.reduce)}
    for buf in buffers:
        target = _target_dep(other, buf)
        if target is None:
            continue
        for ld, is_store in _access_indices(node, buf):
            loops = node.loops if is_store else (*node.loops, *node.reduce)
            for new in _permutations_matching(node, ld, target, loops):
                key = (new.loops, new.reduce)
                if key in seen:
                    continue
                seen.add(key)
                kind = "invert" if _is_inversion(node, new, buf, is_store) else "reorder"
                yield new, kind, f"loops {_names(node.loops)} -> {_names(new.loops)} to match {target.text()}"
    red = next((state.node(m) for m in other.members if state.node(m).kind == "reduction"), None)
    if node.kind == "pointwise" and isinstance(red, ComputeNode) and node.numel == red.numel * red.rnumel:
        shape = [lv.size for lv in (*red.loops, *red.reduce)]
        if [lv.size for lv in node.loops] != shape:
            taken = {b.name for b in state.graph.buffers} | {lv.name for lv in node.loops}
            fresh = _fresh_loops(shape, taken)
            reindexed = refactor(node, fresh)
            if reindexed is not None and (reindexed.loops, reindexed.reduce) not in seen:
                yield (
                    reindexed,
                    "reindex",
                    f"loops {_names(node.loops)} -> {_names(reindexed.loops)} (the shape of {red.name})",
                )


def _fresh_loops(sizes: list[int], taken: set[str]) -> tuple[LoopVar, ...]:
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


def _is_inversion(old: ComputeNode, new: ComputeNode, buf: str, is_store: bool) -> bool:
    reads = old.read_buffers()
    return not is_store and len(reads) == 1 and reads[0] == buf


def _permutations_matching(
    node: ComputeNode, ld: Load, target: MemoryDep, loops: tuple[LoopVar, ...]
) -> Iterator[ComputeNode]:
    nl, nr = len(node.loops), len(node.reduce)
    if nl <= MAX_EXHAUSTIVE_LOOPS and nr <= 4:
        perms = sorted(itertools.permutations(range(nl)), key=lambda p: (_inversions(p), p))
        rperms = sorted(itertools.permutations(range(nr)), key=lambda p: (_inversions(p), p))
        for p, rp in itertools.product(perms, rperms):
            if p == tuple(range(nl)) and rp == tuple(range(nr)):
                continue
            cand = permute(node, p, rp if nr else None)
            cand_loops = cand.loops if ld is node.store else (*cand.loops, *cand.reduce)
            if canonical_dep(ld.buffer, ld.index, cand_loops) == target:
                yield cand
        return
    # Many loops: sort by stride (descending) -- Inductor's normalize_with_stride_order.
    strides = _strides(ld, loops)
    p = tuple(sorted(range(nl), key=lambda i: (-strides.get(node.loops[i].name, 0), i)))
    rp = tuple(sorted(range(nr), key=lambda i: (-strides.get(node.reduce[i].name, 0), i)))
    cand = permute(node, p, rp if nr else None)
    cand_loops = cand.loops if ld is node.store else (*cand.loops, *cand.reduce)
    if canonical_dep(ld.buffer, ld.index, cand_loops) == target:
        yield cand


def _strides(ld: Load, loops: tuple[LoopVar, ...]) -> dict[str, int]:
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
        strides = _strides(n.store, n.loops)
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
