"""How two plans of the same graph differ: kernels, kernel names, and the first divergent decision.

Plans are compared in a canonical form that does not depend on list order or on which member
names a group: a kernel is the set of its node names, a decision is the unordered pair of node
sets it fused (found by replaying the decisions), its action and its score. Side b's node names are
first mapped into side a's (`renames`, b-name -> a-name), e.g. `buf3_final` -> `buf3`.

Verdict: the plans diverge when a kernel (node set) exists in only one of them -- what the second
pass would ask for that the first never compiled. Kernel names that differ for the same node set
and decisions that differ without changing the kernels are reported too; `strict_names` makes a
name difference a divergence. The first divergent decision names the score term that flipped: the
first term, in the score's order of significance, whose value differs ("proximity -2 vs -1"). With
each side's node-order numbers (Inductor's min/max_order), it also says how the winning pairs'
proximities changed between the sides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fuseopt.plan import Decision, Plan

NodeSet = tuple[str, ...]  # sorted node names


def _key(names: Sequence[str]) -> NodeSet:
    return tuple(sorted(names))


@dataclass(frozen=True)
class CanonDecision:
    step: int
    round: int
    pair: tuple[str, str]  # as recorded (mapped names)
    groups: tuple[NodeSet, NodeSet]  # the two node sets fused, sorted
    action: str
    kind: str
    score: Mapping[str, Any]

    def same_as(self, other: CanonDecision) -> bool:
        return (self.groups, self.action, dict(self.score)) == (other.groups, other.action, dict(other.score))

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "round": self.round,
            "pair": list(self.pair),
            "groups": [list(g) for g in self.groups],
            "action": self.action,
            "kind": self.kind,
            "score": dict(self.score),
        }


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.members: dict[str, list[str]] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        self.members.setdefault(x, [x])
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def group(self, x: str) -> NodeSet:
        return _key(self.members[self.find(x)])

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            self.members[ra] = self.members[ra] + self.members.pop(rb)


def canonical_decisions(decisions: Sequence[Decision], renames: Mapping[str, str]) -> list[CanonDecision]:
    uf = _UnionFind()
    out = []
    for d in decisions:
        a, b = renames.get(d.pair[0], d.pair[0]), renames.get(d.pair[1], d.pair[1])
        g1, g2 = sorted((uf.group(a), uf.group(b)))
        out.append(CanonDecision(d.step, d.round, (a, b), (g1, g2), d.action, d.kind, dict(d.score)))
        uf.union(a, b)
    return out


def groups_at_round_start(decisions: Sequence[CanonDecision], rnd: int, node: str) -> NodeSet:
    """The group `node` was in when round `rnd` scored its candidates."""
    uf = _UnionFind()
    for d in decisions:
        if d.round >= rnd:
            break
        uf.union(d.pair[0], d.pair[1])
    uf.find(node)
    return uf.group(node)


@dataclass(frozen=True)
class KernelRef:
    name: str
    nodes: NodeSet

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "nodes": list(self.nodes)}


@dataclass(frozen=True)
class Flip:
    """The first score term, in order of significance, whose value differs between two scores."""

    term: str
    a: Any
    b: Any

    def text(self) -> str:
        return f"{self.term} {self.a} vs {self.b}"


def flipped_term(a: Mapping[str, Any], b: Mapping[str, Any]) -> Flip | None:
    for k in (*a, *(k for k in b if k not in a)):
        if a.get(k) != b.get(k):
            return Flip(k, a.get(k), b.get(k))
    return None


@dataclass(frozen=True)
class Divergence:
    """The first decision where the sides differ, each side's decision, and the flipped term.

    kind: fusion -- a fuses node sets b never fuses (`b` is b's first decision that fuses any of
    those nodes otherwise, if there is one); score -- the same fusions, scored differently; order --
    the same fusions with the same scores, applied in another order.
    """

    kind: str
    a: CanonDecision | None
    b: CanonDecision | None
    flip: Flip | None
    explanation: tuple[str, ...] = ()

    @property
    def step(self) -> int:
        d = self.a if self.a is not None else self.b
        assert d is not None
        return d.step

    @property
    def summary(self) -> str:
        if self.a is None or self.b is None:
            return "the other side never makes this fusion"
        if self.flip is not None:
            return self.flip.text()
        return "no score term differs: the scores tie, and the order candidates were found in decided"


@dataclass(frozen=True)
class Comparison:
    a_kernels: tuple[KernelRef, ...]
    b_kernels: tuple[KernelRef, ...]
    only_in_a: tuple[KernelRef, ...]
    only_in_b: tuple[KernelRef, ...]
    renamed: tuple[tuple[NodeSet, str, str], ...]  # node set, name in a, name in b
    divergence: Divergence | None
    order_changes: tuple[tuple[str, int, int], ...] = ()  # node (a's name), order in a, order in b
    strict_names: bool = False
    unmatched_a: tuple[str, ...] = ()  # nodes only plan a has (after renames)
    unmatched_b: tuple[str, ...] = ()

    @property
    def kernels_differ(self) -> bool:
        return bool(self.only_in_a or self.only_in_b)

    @property
    def identical(self) -> bool:
        return not self.kernels_differ and not (self.strict_names and self.renamed)

    def to_json(self, labels: tuple[str, str]) -> dict[str, Any]:
        la, lb = labels
        div: dict[str, Any] | None = None
        if self.divergence is not None:
            d = self.divergence
            div = {
                "kind": d.kind,
                "step": d.step,
                la: d.a.to_json() if d.a is not None else None,
                lb: d.b.to_json() if d.b is not None else None,
                "term": d.flip.term if d.flip else None,
                f"{la}_value": d.flip.a if d.flip else None,
                f"{lb}_value": d.flip.b if d.flip else None,
                "summary": d.summary,
                "explanation": list(d.explanation),
            }
        return {
            "identical": self.identical,
            "kernels": {
                la: [k.to_json() for k in self.a_kernels],
                lb: [k.to_json() for k in self.b_kernels],
                f"only_in_{la}": [k.to_json() for k in self.only_in_a],
                f"only_in_{lb}": [k.to_json() for k in self.only_in_b],
                "renamed": [{"nodes": list(s), la: x, lb: y} for s, x, y in self.renamed],
            },
            "unmatched_nodes": {la: list(self.unmatched_a), lb: list(self.unmatched_b)},
            "first_divergent_decision": div,
            "order_changes": [{"node": n, la: x, lb: y} for n, x, y in self.order_changes],
        }


def _kernels(plan: Plan, renames: Mapping[str, str]) -> tuple[KernelRef, ...]:
    return tuple(KernelRef(k.name, _key([renames.get(n, n) for n in k.nodes])) for k in plan.kernels)


def _proximity(orders: Mapping[str, int], g1: NodeSet, g2: NodeSet) -> int | None:
    if not all(n in orders for n in (*g1, *g2)):
        return None
    o1 = [orders[n] for n in g1]
    o2 = [orders[n] for n in g2]
    return -max(abs(min(o1) - max(o2)), abs(min(o2) - max(o1)))


def _pair_text(d: CanonDecision) -> str:
    return f"{d.pair[0]} + {d.pair[1]}"


def _explain(
    a: CanonDecision,
    b: CanonDecision,
    a_decs: Sequence[CanonDecision],
    b_decs: Sequence[CanonDecision],
    orders: tuple[Mapping[str, int], Mapping[str, int]],
    labels: tuple[str, str],
) -> tuple[str, ...]:
    """How each side's winning pair scored on the other side, by the order-dependent term."""
    if "proximity" not in a.score or "proximity" not in b.score:
        return ()
    la, lb = labels
    lines = []
    for mine, decs, label, other_label in ((b, b_decs, lb, la), (a, a_decs, la, lb)):
        g1 = groups_at_round_start(decs, mine.round, mine.pair[0])
        g2 = groups_at_round_start(decs, mine.round, mine.pair[1])
        pa, pb = _proximity(orders[0], g1, g2), _proximity(orders[1], g1, g2)
        if pa is None or pb is None:
            continue
        here, there = (pb, pa) if label == lb else (pa, pb)
        line = (
            f"{_pair_text(mine)} (chosen by {label}): proximity {here} in {label}, {there} in {other_label}"
        )
        rival = a if label == lb else b
        if here != there:
            counter = {**mine.score, "proximity": there}
            if counter == dict(rival.score):
                line += f"; in {other_label} it tied with {_pair_text(rival)}, which was found first"
            else:
                line += f"; in {other_label} it did not beat {_pair_text(rival)}"
        lines.append(line)
    return tuple(lines)


def _rejections(d: CanonDecision, other: Plan, renames: Mapping[str, str], label: str) -> tuple[str, ...]:
    """Why the other plan did not make fusion `d`: its rejections of pairs across d's two groups."""
    g1, g2 = set(d.groups[0]), set(d.groups[1])
    out = []
    for r in other.rejected:
        x, y = (renames.get(n, n) for n in r.pair)
        if (x in g1 and y in g2) or (x in g2 and y in g1):
            out.append(f"{label} rejected {r.pair[0]} / {r.pair[1]}: {r.reason}: {r.detail}")
    if not out:
        out.append(
            f"{label} records no rejection across these groups (never a candidate, or fused otherwise)"
        )
    return tuple(out)


def _nodes(d: CanonDecision) -> set[str]:
    return {*d.groups[0], *d.groups[1]}


def first_divergence(da: Sequence[CanonDecision], db: Sequence[CanonDecision]) -> Divergence | None:
    """Decisions are matched by what they fuse (node sets), not by step, so the same fusions
    applied in another order line up; see `Divergence` for the three kinds."""

    def key(d: CanonDecision) -> tuple[tuple[NodeSet, NodeSet], str]:
        return d.groups, d.action

    in_a = {key(d): d for d in da}
    in_b = {key(d): d for d in db}
    only_b = [d for d in db if key(d) not in in_a]
    x = next((d for d in da if key(d) not in in_b), None)
    if x is not None:
        y = next((d for d in only_b if _nodes(d) & _nodes(x)), only_b[0] if only_b else None)
        return Divergence("fusion", x, y, flipped_term(x.score, y.score) if y is not None else None)
    if only_b:
        return Divergence("fusion", None, only_b[0], None)
    for d in da:
        e = in_b[key(d)]
        if dict(d.score) != dict(e.score):
            return Divergence("score", d, e, flipped_term(d.score, e.score))
    for d, e in zip(da, db, strict=True):
        if key(d) != key(e):
            return Divergence("order", d, e, flipped_term(d.score, e.score))
    return None


def compare_plans(
    a: Plan,
    b: Plan,
    renames: Mapping[str, str] | None = None,
    *,
    orders: tuple[Mapping[str, int], Mapping[str, int]] | None = None,
    labels: tuple[str, str] = ("jit", "aot"),
    strict_names: bool = False,
) -> Comparison:
    """Compare plan `a` with plan `b` (b's node names mapped into a's by `renames`).

    `orders` (node-order numbers of each side, in a's names) lets the report say how proximity
    changed; pass them for inductor-mode plans.
    """
    ren = dict(renames or {})
    ka, kb = _kernels(a, {}), _kernels(b, ren)
    sets_a = {k.nodes: k for k in ka}
    sets_b = {k.nodes: k for k in kb}
    only_a = tuple(k for k in ka if k.nodes not in sets_b)
    only_b = tuple(k for k in kb if k.nodes not in sets_a)
    renamed = tuple(
        (k.nodes, k.name, sets_b[k.nodes].name)
        for k in ka
        if k.nodes in sets_b and sets_b[k.nodes].name != k.name
    )
    da = canonical_decisions(a.decisions, {})
    db = canonical_decisions(b.decisions, ren)
    divergence = first_divergence(da, db)
    if divergence is not None:
        why: tuple[str, ...] = ()
        if divergence.a is not None and divergence.b is not None and orders:
            why = _explain(divergence.a, divergence.b, da, db, orders, labels)
        elif divergence.a is not None:
            why = _rejections(divergence.a, b, ren, labels[1])
        elif divergence.b is not None:
            why = _rejections(divergence.b, a, {}, labels[0])
        divergence = dataclasses.replace(divergence, explanation=why)
    changes: tuple[tuple[str, int, int], ...] = ()
    if orders is not None:
        oa, ob = orders
        changes = tuple(
            (n, oa[n], ob[n]) for n in sorted(oa, key=oa.__getitem__) if n in ob and oa[n] != ob[n]
        )
    nodes_a = [n for k in ka for n in k.nodes]
    nodes_b = [n for k in kb for n in k.nodes]
    unmatched_a = tuple(sorted(set(nodes_a) - set(nodes_b)))
    unmatched_b = tuple(sorted(set(nodes_b) - set(nodes_a)))
    return Comparison(
        ka, kb, only_a, only_b, renamed, divergence, changes, strict_names, unmatched_a, unmatched_b
    )
