"""Delta debugging for graphs: shrink a graph while a property (the predicate) keeps holding.

Contract: `reduce_graph(graph, predicate)` requires `predicate(graph)` and returns a graph on
which it still holds, that is a valid graph file (it round-trips through the loader), and from
which no single node can be removed without losing the property (ddmin's 1-minimality, over nodes).
Removing nodes keeps the graph valid (`graphedit.keep_nodes`): buffers whose writer is gone become
inputs, untouched buffers are dropped, and at least one output remains. Then, where easy, each
template keeps only its best choice. Loop sizes (dims) are not shrunk: an index's coefficients encode
the strides, so smaller dims need rewritten indices -- not "easy", and left for later.

A predicate that raises on a candidate counts as not holding there (the crash is another bug, not
the property being reduced); the number of such candidates is reported. Predicates (`Predicate` =
Graph -> bool): `diverges` (diff-jit-aot finds a divergence),
`kernels_exceed` (the plan has more than N kernels), `nondeterministic` (some permutation of the
graph plans differently). Everything is deterministic: same graph and predicate, same result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fuseopt.aot.determinism import check_permutations
from fuseopt.aot.diff import diff_finalized
from fuseopt.aot.graphedit import keep_nodes
from fuseopt.errors import InputError
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph, LibraryNode
from fuseopt.ir.serialize import dump_json
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize

Predicate = Callable[[Graph], bool]
# (nodes now, tests run) after every test: for a progress bar.
Progress = Callable[[int, int], None]


def diverges(opts: Options, finalize: str = "append") -> Predicate:
    return lambda g: not diff_finalized(g, opts, finalize).identical


def kernels_exceed(n: int, opts: Options) -> Predicate:
    return lambda g: len(optimize(g, opts).plan.kernels) > n


def nondeterministic(opts: Options, permutations: int = 8, seed: int = 0) -> Predicate:
    def pred(g: Graph) -> bool:
        _, results = check_permutations(g, opts, permutations, seed, stop_early=True)
        return not all(r.ok for r in results)

    return pred


@dataclass(frozen=True)
class Reduction:
    graph: Graph
    nodes_before: int
    tests: int  # predicate evaluations (cached repeats not counted)
    crashes: int = 0  # candidates on which evaluating the predicate raised (counted as not holding)


def is_valid(graph: Graph) -> bool:
    """Does the graph survive the loader (the same checks a file written from it will face)?"""
    try:
        load_text(dump_json(graph), "<reduced>")
    except InputError:
        return False
    return True


class _Tester:
    def __init__(self, graph: Graph, predicate: Predicate, report: Progress | None) -> None:
        self.graph = graph
        self.predicate = predicate
        self.report = report
        self.cache: dict[frozenset[str], bool] = {}
        self.tests = 0
        self.crashes = 0
        self.size = len(graph.nodes)

    def __call__(self, names: Sequence[str]) -> bool:
        key = frozenset(names)
        if key not in self.cache:
            self.tests += 1
            g = keep_nodes(self.graph, key)
            try:
                holds = bool(g.nodes) and self.predicate(g)
            except Exception:  # a different failure on a smaller graph: not this property
                self.crashes += 1
                holds = False
            self.cache[key] = holds and is_valid(g)
            if self.cache[key]:
                self.size = min(self.size, len(key))
            if self.report is not None:
                self.report(self.size, self.tests)
        return self.cache[key]


def _split(items: list[str], n: int) -> list[list[str]]:
    out = []
    start = 0
    for i in range(n):
        end = start + (len(items) - start) // (n - i)
        out.append(items[start:end])
        start = end
    return out


def ddmin(items: list[str], test: Callable[[Sequence[str]], bool]) -> list[str]:
    """Zeller's ddmin: a 1-minimal sublist (order kept) on which `test` holds; test(items) must."""
    n = 2
    while len(items) >= 2:
        chunks = [c for c in _split(items, n) if c]
        for c in chunks:
            if test(c):
                items, n = c, 2
                break
        else:
            for c in chunks:
                drop = set(c)
                rest = [x for x in items if x not in drop]
                if test(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
    return items


def _best_choices_only(graph: Graph) -> Graph:
    nodes = []
    for node in graph.nodes:
        if isinstance(node, LibraryNode) and node.kind == "template" and len(node.choices) > 1:
            best = node.best_choice()
            assert best is not None
            node = dataclasses.replace(node, choices=(best,))
        nodes.append(node)
    return graph.replace(nodes=tuple(nodes))


def reduce_graph(graph: Graph, predicate: Predicate, report: Progress | None = None) -> Reduction:
    """Shrink `graph` while `predicate` holds (see the module doc). Raises ValueError if it does not
    hold on `graph` to begin with."""
    if not predicate(graph):
        raise ValueError("the predicate does not hold on the input graph")
    test = _Tester(graph, predicate, report)
    names = ddmin([n.name for n in graph.nodes], test)
    small = keep_nodes(graph, names)
    simpler = _best_choices_only(small)
    if simpler != small and predicate(simpler):
        small = simpler
    return Reduction(small, len(graph.nodes), test.tests, test.crashes)
