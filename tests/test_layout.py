"""The layered layout (fuseopt/report/layout.py) on random DAGs: boxes disjoint, every edge routed
from its source's bottom to its target's top without entering any other box, deterministic."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fuseopt.report.layout import LABEL_LINE, Box, Label, Layout, LEdge, LNode, layered, svg_path


def _sample(points: tuple[tuple[int, int], ...]) -> list[tuple[float, float]]:
    """Points along the route as `svg_path` draws it (runs straight, gaps as cubic curves)."""
    out: list[tuple[float, float]] = [points[0]]
    for i in range(1, len(points)):
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        for j in range(1, 21):
            s = j / 20
            if i % 2:
                out.append((x0 + (x1 - x0) * s, y0 + (y1 - y0) * s))
            else:  # control points at the gap's middle height, as svg_path writes them
                m = (y0 + y1) / 2
                r = 1 - s
                x = r**3 * x0 + 3 * r * r * s * x0 + 3 * r * s * s * x1 + s**3 * x1
                y = r**3 * y0 + 3 * r * r * s * m + 3 * r * s * s * m + s**3 * y1
                out.append((x, y))
    return out


def _inside(b: Box, p: tuple[float, float]) -> bool:
    return b.x + 0.5 < p[0] < b.x + b.w - 0.5 and b.y + 0.5 < p[1] < b.y + b.h - 0.5


def _disjoint(a: Box, b: Box) -> bool:
    return a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y


def _check(nodes: list[LNode], edges: list[LEdge], lay: Layout) -> None:
    assert set(lay.boxes) == {n.id for n in nodes}
    for n in nodes:
        b = lay.boxes[n.id]
        assert (b.w, b.h) == (n.w, n.h) and b.x >= 0 and b.y >= 0
        assert b.x + b.w <= lay.width and b.y + b.h <= lay.height
    every = list(lay.boxes.values()) + list(lay.labels.values())
    for i, a in enumerate(every):
        for b in every[i + 1 :]:
            assert _disjoint(a, b), (a, b)
    drawn = [e for e in edges if e.src != e.dst]
    assert [r.edge for r in lay.routes] == drawn
    for r in lay.routes:
        e = r.edge
        src, dst = lay.boxes[e.src], lay.boxes[e.dst]
        assert len(r.points) % 2 == 0 and len(r.points) >= 4
        (x0, y0), (x1, y1) = r.points[0], r.points[-1]
        if src.y < dst.y:  # drawn downwards: out of the bottom, into the top
            assert y0 == src.y + src.h and src.x <= x0 <= src.x + src.w
            assert y1 == dst.y and dst.x <= x1 <= dst.x + dst.w
        own = lay.labels.get((e.src, e.label.key)) if e.label is not None else None
        if e.label is not None:
            assert own is not None and any(x == own.x + LABEL_LINE for x, _ in r.points)
        others = [b for k, b in lay.boxes.items() if k not in (e.src, e.dst)]
        others += [b for b in lay.labels.values() if b is not own]
        pts = _sample(r.points)
        span = Box(
            int(min(x for x, _ in pts)) - 1,
            int(min(y for _, y in pts)) - 1,
            int(max(x for x, _ in pts) - min(x for x, _ in pts)) + 3,
            int(max(y for _, y in pts) - min(y for _, y in pts)) + 3,
        )
        for b in [src, dst, *others]:
            if not _disjoint(b, span):
                assert not any(_inside(b, p) for p in pts), (e, b)
        assert svg_path(r.points).startswith(f"M{x0},{y0}")


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[LNode], list[LEdge]]:
    n = draw(st.integers(1, 18))
    nodes = [LNode(f"v{i}", 2 * draw(st.integers(10, 90)), draw(st.integers(12, 70))) for i in range(n)]
    edges = []
    for j in range(n):
        for i in range(j):
            if draw(st.integers(0, 5)) == 0:
                labelled = draw(st.booleans())
                key = f"b{i}_{draw(st.integers(0, 1))}"
                label = Label(key, 2 * draw(st.integers(10, 50)), 16) if labelled else None
                edges.append(LEdge(f"v{i}", f"v{j}", label))
    if draw(st.booleans()):  # a graph given in another order than its dependencies
        nodes = nodes[::-1]
    return nodes, edges


def _fix_label_sizes(edges: list[LEdge]) -> list[LEdge]:
    """Edges sharing a source and key share one label: give them the first one's size."""
    first: dict[tuple[str, str], Label] = {}
    out = []
    for e in edges:
        if e.label is not None:
            e = LEdge(e.src, e.dst, first.setdefault((e.src, e.label.key), e.label))
        out.append(e)
    return out


@settings(max_examples=40, deadline=None)
@given(dags())
def test_random_dags_lay_out_without_overlaps_and_route_every_edge(
    g: tuple[list[LNode], list[LEdge]],
) -> None:
    nodes, edges = g
    edges = _fix_label_sizes(edges)
    lay = layered(nodes, edges)
    _check(nodes, edges, lay)
    assert layered(nodes, edges) == lay  # deterministic
    for r in lay.routes:  # a DAG is drawn downwards
        assert lay.boxes[r.edge.src].y < lay.boxes[r.edge.dst].y


def test_cycles_and_self_loops_are_still_drawn() -> None:
    nodes = [LNode(n, 60, 30) for n in "abcd"]
    edges = [
        LEdge("a", "b"),
        LEdge("b", "c", Label("x", 30, 16)),
        LEdge("c", "a"),
        LEdge("c", "d"),
        LEdge("d", "d"),
    ]
    lay = layered(nodes, edges)
    _check(nodes, edges, lay)
    ends = {(r.edge.src, r.edge.dst): (r.points[0], r.points[-1]) for r in lay.routes}
    # The edge that closes the cycle is laid out upwards but still runs from c to a.
    (x0, y0), (x1, y1) = ends[("c", "a")]
    c, a = lay.boxes["c"], lay.boxes["a"]
    assert c.y <= y0 <= c.y + c.h and a.y <= y1 <= a.y + a.h


def test_a_chain_is_one_straight_column_and_inputs_sit_above_their_first_reader() -> None:
    chain = [LNode(f"k{i}", 120, 40) for i in range(12)]
    edges = [LEdge(f"k{i}", f"k{i + 1}", Label("buf", 60, 16)) for i in range(11)]
    lay = layered(chain, edges)
    _check(chain, edges, lay)
    assert len({lay.boxes[n.id].x for n in chain}) == 1
    weight = LNode("w", 80, 30)
    fed = layered([weight, *chain], [*edges, LEdge("w", "k9")])
    _check([weight, *chain], [*edges, LEdge("w", "k9")], fed)
    assert fed.boxes["w"].y == fed.boxes["k8"].y  # on k9's previous layer, not at the top
    for r in lay.routes[:11]:
        assert len({x for x, _ in r.points}) <= 2  # port and the label's line: no wandering


def test_barycentre_ordering_uncrosses_a_twisted_bipartite_graph() -> None:
    top = [LNode(f"t{i}", 40, 20) for i in range(5)]
    bottom = [LNode(f"b{i}", 40, 20) for i in range(5)]
    edges = [LEdge(f"t{i}", f"b{4 - i}") for i in range(5)]  # given fully crossed
    lay = layered([*top, *bottom], edges)
    xs = [lay.boxes[f"b{4 - i}"].x for i in range(5)]
    assert xs == sorted(xs)  # each bottom box below its parent: no crossings left
    assert [lay.boxes[f"t{i}"].x for i in range(5)] == sorted(lay.boxes[f"t{i}"].x for i in range(5))
