"""The stable scoring's greedy loop: one priority queue instead of Inductor's rescoring rounds.

Same legality, same candidates (pairs of groups sharing a buffer, each paired with its
`pair_window` nearest users in (dependency depth, name) order), but after a fusion only the pairs
of the new group are scored again (`_BufferIndex` keeps each buffer's user groups sorted, so this
costs what the new group shares, not the graph). Queue entries carry both groups' version stamps:
an entry whose group changed since it was scored is stale and dropped when popped. A phase
enumerates every candidate and drains the queue; phases repeat until one fuses nothing (a fusion
elsewhere can make an earlier rejection legal), then phases may transform loops. A pair that
fails for a reason a loop transformation may cure is queued as it is, scored as it would be once
cured (the score needs only memory > 0); the loop-order hook's `propose` (`ReorderHook`) searches
for the transformation only when the pair comes off the queue still current (`take`; most queued
pairs go stale first), and the transformation is installed only if the pair then fuses. A pair no
transformation cures is not searched again until one of its groups changes.

`seeds` are node pairs fused before any scoring, in their given order, each only if legal then
(`fusion.fuse` uses them to replan when --max-fusion-size bound: a topological fill that packs
chains up to the cap, and nodes stranded next to a full kernel joined to it first).

Nothing here reads list order: walks are by (depth, name), ties in the queue by node names, seeds
come from depth and names.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING

from fuseopt.passes.fusion_state import FusionState, Group
from fuseopt.passes.legality import REORDER_REASONS, Verdict, check_fusion
from fuseopt.passes.loop_order import Proposal
from fuseopt.passes.options import Options
from fuseopt.passes.scoring import Score, stable_score, stable_terms
from fuseopt.plan import Decision, Reorder

if TYPE_CHECKING:
    from fuseopt.passes.fusion import ReorderHook

GroupKey = tuple[int, str]


class _BufferIndex:
    """For each buffer used by two groups or more, its user groups sorted by group key, and for
    each group the buffers it shares so (kept current across fusions). A buffer left with one
    user group has no neighbours to offer and leaves the index, so a kernel that keeps growing
    costs what it absorbs and what it shares, never the whole of its own buffers."""

    def __init__(self, state: FusionState, key: Callable[[Group], GroupKey]):
        self.lists: dict[str, list[tuple[GroupKey, int]]] = {}
        self.keys: dict[int, GroupKey] = {}
        for g in state.groups.values():
            if g.kind == "extern":
                continue
            self.keys[g.gid] = key(g)
            for b in g.buffer_names():
                self.lists.setdefault(b, []).append((self.keys[g.gid], g.gid))
        self.shared: dict[int, set[str]] = {gid: set() for gid in self.keys}
        for b, lst in list(self.lists.items()):
            if len(lst) < 2:
                del self.lists[b]
                continue
            lst.sort()
            for _, gid in lst:
                self.shared[gid].add(b)

    def replace(self, a: int, b: int) -> None:
        """Group a absorbed group b: b's entries become a's, and a's move where a's key changed.
        A key is (least depth, least name): the merged group's is the two keys' least parts."""
        old_a, old_b = self.keys.pop(a), self.keys.pop(b)
        new = (min(old_a[0], old_b[0]), min(old_a[1], old_b[1]))
        self.keys[a] = new
        entry = (new, a)
        mine, theirs = self.shared.pop(a), self.shared.pop(b)
        if new != old_a:
            for buf in mine:
                self._remove(buf, (old_a, a))
                self._insert(buf, entry)
        for buf in theirs:
            self._remove(buf, (old_b, b))
            self._insert(buf, entry)
        if len(mine) < len(theirs):
            mine, theirs = theirs, mine
        mine |= theirs
        for buf in theirs:  # now shared by nobody else: no neighbours to find there
            lst = self.lists[buf]
            if len(lst) < 2:
                del self.lists[buf]
                mine.discard(buf)
        self.shared[a] = mine

    def _remove(self, buf: str, entry: tuple[GroupKey, int]) -> None:
        lst = self.lists[buf]
        i = bisect.bisect_left(lst, entry)
        if i < len(lst) and lst[i] == entry:
            del lst[i]

    def _insert(self, buf: str, entry: tuple[GroupKey, int]) -> None:
        lst = self.lists[buf]
        i = bisect.bisect_left(lst, entry)
        if i == len(lst) or lst[i] != entry:
            lst.insert(i, entry)

    def neighbours(self, g: Group, window: int) -> list[int]:
        """The groups within `window` of g in the lists of the buffers it shares (buffers by name)."""
        out: dict[int, None] = {}
        for buf in sorted(self.shared[g.gid]):
            lst = self.lists[buf]
            i = bisect.bisect_left(lst, (self.keys[g.gid], g.gid))
            lo, hi = max(0, i - window), min(len(lst), i + 1 + window)
            out.update((gid, None) for _, gid in lst[lo:hi] if gid != g.gid)
        return list(out)


def _may_transform(g1: Group, g2: Group, opts: Options) -> bool:
    """Could a loop transformation make the pair fuse? Not over the size cap, nor with a library
    node (a transformation changes indices, never members); the rest is the hook's to find."""
    return not (g1.is_library or g2.is_library) and len(g1.members) + len(g2.members) <= opts.max_fusion_size


def stable_fuse(
    state: FusionState,
    opts: Options,
    levels: dict[str, int],
    reject: Callable[[Group, Group, Verdict], None],
    decisions: list[Decision],
    reorder: ReorderHook | None,
    reorders: list[Reorder],
    seeds: tuple[tuple[str, str], ...] = (),
) -> None:
    """Greedy fusion by stable score. `seeds` are pairs of nodes fused first, before any scoring
    (`fusion.fuse` passes the nodes a first plan stranded at the size cap with the kernel member
    they share data with, so that they join it before it fills up)."""

    def key(g: Group) -> GroupKey:
        return (min(levels[m] for m in g.members), g.min_name)

    index: _BufferIndex  # built once the seeds are fused (it is what a fresh build after them gives)
    # (negated score terms, transformed, tie-break names, gid, version, gid, version, pending): the
    # score is rebuilt from its terms when a pair is taken (a fan of 20,000 users queues over a
    # million pairs); pending -1, or the pair's verdict (in `pending`) before the loop
    # transformation it needs, searched for when the pair is taken.
    heap: list[tuple[tuple[int, ...], int, tuple[str, ...], int, int, int, int, int]] = []
    pending: list[Verdict] = []  # a queued pair's verdict before the loop transformation it needs
    no_cure: set[tuple[int, int, int, int]] = set()  # pairs (as stamped) no transformation cures

    def _stamps(g1: Group, g2: Group) -> tuple[int, int, int, int]:
        lo, hi = (g1, g2) if g1.gid < g2.gid else (g2, g1)
        return lo.gid, state.version[lo.gid], hi.gid, state.version[hi.gid]

    transforms: ReorderHook | None = None  # the loop-order hook, once plain fusion has settled

    def consider(g1: Group, g2: Group) -> None:
        v = check_fusion(state, g1, g2, opts)
        pid = -1
        if not v.ok:
            if (
                transforms is None
                or v.reason not in REORDER_REASONS
                or not _may_transform(g1, g2, opts)
                or _stamps(g1, g2) in no_cure
            ):
                reject(g1, g2, v)
                return
            # A loop transformation may cure it: queued as it is, the transformation searched for
            # only if the pair comes off the queue still current (most are stale by then). The
            # score is the one it would have: it needs memory > 0 only, which a cure brings.
            pid = len(pending)
            pending.append(v)
        if not state.before(g1, g2):
            g1, g2 = g2, g1
        (t0, t1, t2, t3), names = stable_terms(state, g1, g2, v.memory if v.ok else 1, levels)
        item = (
            (-t0, -t1, -t2, -t3),
            int(pid >= 0),  # at equal scores, a pair that needs no loop transformation first
            names,
            g1.gid,
            state.version[g1.gid],
            g2.gid,
            state.version[g2.gid],
            pid,
        )
        heapq.heappush(heap, item)

    def sweep() -> None:
        seen: set[tuple[int, int]] = set()
        for buf in sorted(index.lists):
            lst = index.lists[buf]
            for i, (_, a) in enumerate(lst):
                for _, b in lst[i + 1 : i + 1 + opts.pair_window]:
                    pair = (a, b) if a < b else (b, a)
                    if pair in seen:
                        continue
                    seen.add(pair)
                    consider(state.groups[a], state.groups[b])

    def take(g1: Group, g2: Group, pid: int) -> Verdict:
        """The pair's verdict as it is now; a pair queued for a loop transformation gets it
        searched for now, installed, and kept only if the pair then fuses."""
        if pid < 0:
            return check_fusion(state, g1, g2, opts)
        assert transforms is not None
        found = transforms.propose(state, g1, g2, opts)
        if found is None:
            # No transformation cures the pair as it is now, nor will one in a later phase:
            # legality only worsens while neither group changes.
            no_cure.add(_stamps(g1, g2))
            return pending[pid]
        return _install(g1, g2, found[1])

    def _install(g1: Group, g2: Group, prop: Proposal) -> Verdict:
        saved = state.version[prop.gid]
        state.install(prop.after)
        v = check_fusion(state, g1, g2, opts)
        if v.ok:
            reorders.extend(prop.records)
        else:
            state.install(prop.before, version=saved)
        return v

    def drain(phase: int) -> int:
        fused = 0
        while heap:
            neg, _, tiebreak, ga, va, gb, vb, pid = heapq.heappop(heap)
            if state.version.get(ga) != va or state.version.get(gb) != vb:
                continue  # stale: one side changed since this pair was scored
            g1, g2 = state.groups[ga], state.groups[gb]
            v = take(g1, g2, pid)
            if not v.ok:
                reject(g1, g2, v)
                continue
            pair = (state.label(g1), state.label(g2))
            merged = state.fuse(g1, g2)
            absorbed = gb if merged.gid == ga else ga
            score = Score("stable", tuple(-t for t in neg), tiebreak)
            decisions.append(Decision(len(decisions), pair, "fuse", score.to_json(), phase, v.kind))
            fused += 1
            index.replace(merged.gid, absorbed)
            for other in index.neighbours(merged, opts.pair_window):
                consider(merged, state.groups[other])
        return fused

    # Phases: every candidate pair is scored and the queue drained; phases repeat until one fuses
    # nothing (a fusion elsewhere can make an earlier rejection legal). Loop transformations are
    # proposed only once plain fusion has settled (a transformation changes how a node walks
    # memory: it is worth it where nothing else fuses), then the phases repeat with them.
    for a, b in seeds:
        g1, g2 = state.group(a), state.group(b)
        if g1.gid == g2.gid:
            continue
        v = check_fusion(state, g1, g2, opts)
        if not v.ok and reorder is not None and v.reason in REORDER_REASONS:
            found = reorder.propose(state, g1, g2, opts)
            if found is not None:
                v = _install(g1, g2, found[1])
        if not v.ok:
            continue
        if not state.before(g1, g2):
            g1, g2 = g2, g1
        seed_score = stable_score(state, g1, g2, v.memory, levels)
        pair = (state.label(g1), state.label(g2))
        state.fuse(g1, g2)
        decisions.append(Decision(len(decisions), pair, "fuse", seed_score.to_json(), 0, v.kind))

    index = _BufferIndex(state, key)
    phase = 0
    for hook in (None, reorder) if reorder is not None else (None,):
        transforms = hook
        for _ in range(opts.max_rounds):
            sweep()
            fused = drain(phase)
            phase += 1
            if not fused or len(state.groups) == 1:
                break
        if len(state.groups) == 1:
            return
