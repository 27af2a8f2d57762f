"""Reachability between the fusion pass's groups, from a topological order kept across fusions.

Up to MAX_BITSET_NODES nodes, each group also keeps the nodes its members reach as a bitset (a
sound yes without a search; n * n / 2 bits at most); beyond that memory is O(groups + edges) and
no transitive closure is stored. Every path a -> b runs through
groups placed between a and b in the order, so `reaches(a, b)` searches forward from a through
that window only. A fusion re-sorts only the window between its two sides (Pearce and Kelly's
dynamic topological order, applied to contracting two groups): the later side's ancestors in the
window first, then the fused group, then the earlier side's descendants in the window; every
other group keeps its place. Queries and fusions cost O(the groups and edges of their window) --
a handful for the planner's candidates, which are neighbours in dependency depth -- and answers
are memoised (a no until the next fusion, a yes for good: contraction only adds paths). The
answers never depend on the order itself, only the cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol


class _Node(Protocol):
    succ: set[int]
    pred: set[int]


# Largest graph whose node-to-node reachability is kept as bitsets: up to n * n / 2 bits (25 MB
# at 20,000 nodes); beyond it every question is a search.
MAX_BITSET_NODES = 20_000


class Reach:
    def __init__(self, groups: Mapping[int, _Node], order: Iterable[int]):
        self.groups = groups
        self.pos: dict[int, int] = {g: i for i, g in enumerate(order)}  # a topological order
        # answers memoised: paths only grow as groups contract (a path through either of two
        # groups runs through their union), so a yes stays a yes; a no holds until the next fusion
        self.known: dict[tuple[int, int], bool] = {}
        self.reached: set[tuple[int, int]] = set()
        # A sound yes without a search: the groups start as single nodes, and a path between two
        # nodes stays a path between their groups (a node path maps to a group path: no group
        # can be left and re-entered in a DAG). `below[g]`: the nodes its members reach, as bits;
        # `bits[g]`: its members. Contraction ORs both.
        self.below: dict[int, int] = {}
        self.bits: dict[int, int] = {}
        if len(self.pos) <= MAX_BITSET_NODES:
            for g in sorted(self.pos, key=self.pos.__getitem__, reverse=True):
                below = 0
                for n in groups[g].succ:
                    below |= self.below[n] | (1 << n)
                self.below[g] = below
                self.bits[g] = 1 << g

    def reaches(self, a: int, b: int) -> bool:
        """Is there a path a -> ... -> b (a != b)?"""
        pb = self.pos[b]
        if a == b or self.pos[a] >= pb or not self.groups[a].succ or not self.groups[b].pred:
            return False
        if (a, b) in self.reached or (self.below and self.below[a] & self.bits[b]):
            return True
        hit = self.known.get((a, b))
        if hit is None:
            hit = self.known[(a, b)] = self._find(a, b)
            if hit:
                self.reached.add((a, b))
        return hit

    def _find(self, a: int, b: int) -> bool:
        """A depth-first search for b from a, inside the window, looking at each group's
        successors for b before going deeper."""
        pos, groups = self.pos, self.groups
        pb = pos[b]
        seen: set[int] = set()
        stack = [a]
        while stack:
            succ = groups[stack.pop()].succ
            if b in succ:
                return True
            for n in succ:
                if n not in seen and pos[n] < pb:
                    seen.add(n)
                    stack.append(n)
        return False

    def reaches_around(self, a: int, b: int) -> bool:
        """Is there a path a -> other -> ... -> b through a group other than a and b? (One forward
        search from a's other successors, inside the window, ending where it meets b.)"""
        pos, groups = self.pos, self.groups
        pb = pos[b]
        stack = [s for s in groups[a].succ if s != b and pos[s] < pb]
        seen = set(stack)
        while stack:
            for n in groups[stack.pop()].succ:
                if n == b:
                    return True
                if n not in seen and pos[n] < pb:
                    seen.add(n)
                    stack.append(n)
        return False

    def ancestors_between(self, b: int, a: int) -> set[int]:
        """The groups placed after a that reach b (b's ancestors in the window a..b)."""
        return self._search(b, self.pos[a], forward=False)

    def _search(self, start: int, bound: int, *, forward: bool, stop: int | None = None) -> set[int]:
        """Groups reached from `start` (forward: successors placed before `bound`; backward:
        predecessors placed after it), `stop` included when met (the search ends there)."""
        pos, groups = self.pos, self.groups
        seen: set[int] = set()
        stack = [start]
        while stack:
            g = stack.pop()
            for n in groups[g].succ if forward else groups[g].pred:
                if n == stop:
                    seen.add(n)
                    return seen
                if n not in seen and (pos[n] < bound if forward else pos[n] > bound):
                    seen.add(n)
                    stack.append(n)
        return seen

    def contract(self, keep: int, gone: int) -> None:
        """`gone` is about to become part of `keep` (no path between them through a third group):
        re-sort the window between them so that the fused group has a valid place. Call before
        the groups' edges are merged."""
        first, second = (keep, gone) if self.pos[keep] < self.pos[gone] else (gone, keep)
        lo, hi = self.pos[first], self.pos[second]
        after = self._search(first, hi, forward=True)  # descendants of first inside the window
        after.discard(second)
        before = self._search(second, lo, forward=False)  # ancestors of second inside it
        before.discard(first)
        pos = self.pos
        pool = sorted([lo, hi, *(pos[g] for g in before), *(pos[g] for g in after)])
        seq = [*sorted(before, key=pos.__getitem__), keep]
        for g, p in zip(seq, pool, strict=False):  # each keeps or lowers its place
            pos[g] = p
        rest = sorted(after, key=pos.__getitem__)
        for g, p in zip(rest, pool[len(pool) - len(rest) :], strict=True):  # each keeps or raises it
            pos[g] = p
        del pos[gone]
        self.known.clear()
        if self.below:
            self.below[keep] |= self.below.pop(gone)
            self.bits[keep] |= self.bits.pop(gone)
