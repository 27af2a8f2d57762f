"""The stable scoring's greedy loop: one priority queue instead of Inductor's rescoring rounds.

Same legality, same candidates (pairs of groups sharing a buffer, each paired with its
`pair_window` nearest users in (dependency depth, name) order), but after a fusion only the pairs
of the new group are scored again. A phase enumerates every candidate and drains the queue;
phases repeat until one fuses nothing (a fusion elsewhere can make an earlier rejection legal),
then one phase may transform loops (the loop-order hook), then phases repeat again.

Nothing here reads list order: walks are by (depth, name), ties in the queue by node names.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable

from fuseopt.passes.fusion_state import FusionState, Group
from fuseopt.passes.legality import REORDER_REASONS, Verdict, check_fusion
from fuseopt.passes.options import Options
from fuseopt.passes.scoring import Score, stable_score
from fuseopt.plan import Decision, Reorder

GroupKey = tuple[int, str]


class _BufferIndex:
    """For each buffer, its user groups sorted by group key (kept current across fusions)."""

    def __init__(self, state: FusionState, key: Callable[[Group], GroupKey]):
        self.key = key
        self.lists: dict[str, list[tuple[GroupKey, int]]] = {}
        self.keys: dict[int, GroupKey] = {}
        for g in state.groups.values():
            if g.kind == "extern":
                continue
            self.keys[g.gid] = key(g)
            for b in g.buffer_names():
                self.lists.setdefault(b, []).append((self.keys[g.gid], g.gid))
        for lst in self.lists.values():
            lst.sort()

    def replace(self, a: Group, b_gid: int, old_buffers: set[str]) -> None:
        """Group a absorbed b_gid: drop both old entries, add a's new one."""
        old_a = self.keys.pop(a.gid, None)
        old_b = self.keys.pop(b_gid, None)
        for buf in old_buffers:
            lst = self.lists.get(buf, [])
            for entry in ((old_a, a.gid), (old_b, b_gid)):
                if entry[0] is None:
                    continue
                i = bisect.bisect_left(lst, entry)  # type: ignore[arg-type]
                if i < len(lst) and lst[i] == entry:
                    del lst[i]
        self.keys[a.gid] = self.key(a)
        for buf in a.buffer_names():
            bisect.insort(self.lists.setdefault(buf, []), (self.keys[a.gid], a.gid))

    def neighbours(self, buf: str, g: Group, window: int) -> list[int]:
        lst = self.lists.get(buf, [])
        i = bisect.bisect_left(lst, (self.keys[g.gid], g.gid))
        lo, hi = max(0, i - window), min(len(lst), i + 1 + window)
        return [gid for _, gid in lst[lo:hi] if gid != g.gid]


def stable_fuse(
    state: FusionState,
    opts: Options,
    levels: dict[str, int],
    reject: Callable[[Group, Group, Verdict], None],
    decisions: list[Decision],
    reorder: object | None,
    reorders: list[Reorder],
) -> None:
    def key(g: Group) -> GroupKey:
        return (min(levels[m] for m in g.members), g.min_name)

    index = _BufferIndex(state, key)
    heap: list[tuple[tuple[int, ...], tuple[str, ...], int, int, int, int, Score, str]] = []

    def consider(g1: Group, g2: Group, hook: object | None) -> None:
        v = check_fusion(state, g1, g2, opts)
        if not v.ok and hook is not None and v.reason in REORDER_REASONS:
            tried = hook.try_pair(state, g1, g2, opts)  # type: ignore[attr-defined]
            if tried is not None:
                v, applied = tried
                reorders.extend(applied)
        if not v.ok:
            reject(g1, g2, v)
            return
        if not state.before(g1, g2):
            g1, g2 = g2, g1
        s = stable_score(state, g1, g2, v.memory, levels)
        item = (
            tuple(-t for t in s.terms),
            s.tiebreak,
            g1.gid,
            state.version[g1.gid],
            g2.gid,
            state.version[g2.gid],
            s,
            v.kind,
        )
        heapq.heappush(heap, item)

    def sweep(hook: object | None) -> None:
        seen: set[tuple[int, int]] = set()
        for buf in sorted(index.lists):
            lst = index.lists[buf]
            for i, (_, a) in enumerate(lst):
                for _, b in lst[i + 1 : i + 1 + opts.pair_window]:
                    pair = (a, b) if a < b else (b, a)
                    if pair in seen:
                        continue
                    seen.add(pair)
                    consider(state.groups[a], state.groups[b], hook)

    def drain(phase: int) -> int:
        fused = 0
        while heap:
            _, _, ga, va, gb, vb, score, _kind = heapq.heappop(heap)
            if state.version.get(ga) != va or state.version.get(gb) != vb:
                continue  # stale: one side changed since this pair was scored
            g1, g2 = state.groups[ga], state.groups[gb]
            v = check_fusion(state, g1, g2, opts)
            if not v.ok:
                reject(g1, g2, v)
                continue
            pair = (state.label(g1), state.label(g2))
            old_buffers = set(g1.buffer_names()) | set(g2.buffer_names())
            merged = state.fuse(g1, g2)
            absorbed = gb if merged.gid == ga else ga
            decisions.append(Decision(len(decisions), pair, "fuse", score.to_json(), phase, v.kind))
            fused += 1
            index.replace(merged, absorbed, old_buffers)
            seen: set[int] = set()
            for buf in merged.buffer_names():
                for other in index.neighbours(buf, merged, opts.pair_window):
                    if other not in seen:
                        seen.add(other)
                        consider(merged, state.groups[other], None)
        return fused

    phase = 0

    def settle() -> None:
        nonlocal phase
        for _ in range(opts.max_rounds):
            sweep(None)
            fused = drain(phase)
            phase += 1
            if not fused or len(state.groups) == 1:
                return

    settle()
    if reorder is not None and len(state.groups) > 1:
        sweep(reorder)
        if drain(phase):
            phase += 1
            settle()
