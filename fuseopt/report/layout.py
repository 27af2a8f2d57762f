"""Layered (Sugiyama) layout of a directed graph of boxes, with edges routed around the boxes.

`layered(nodes, edges)` ranks the nodes (longest path; a source sits just above its first reader),
puts every edge label and every layer an edge crosses on its own vertex (a label on the layer right
below its source, so a buffer's label is shared by all its readers), orders each layer by
barycentre sweeps (the order with the fewest crossings wins), and places each layer exactly: the
centres closest, in least squares, to the neighbours' centres subject to the boxes' separations
(pool-adjacent-violators, linear per layer). Edges run straight down through their own slots in a
layer and curve only in the gaps between layers, where there are no boxes, so no edge crosses a box
it does not connect. Pure and deterministic: ties go to input order, nothing is random, and the
work is about (nodes + edges x layers crossed) x a fixed number of sweeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GAP_X = 20  # between two boxes of a layer
GAP_THIN = 8  # beside a dummy or a label
GAP_Y = 22  # between two layers (edges curve here)
MARGIN = 12
LABEL_LINE = 3  # the edge passes this far right of its label's left side; the text starts after it
SWEEPS = 8


@dataclass(frozen=True)
class Label:
    """An edge label: edges with the same source and key share one (a buffer read by several)."""

    key: str
    w: int
    h: int


@dataclass(frozen=True)
class LNode:
    id: str
    w: int
    h: int


@dataclass(frozen=True)
class LEdge:
    src: str
    dst: str
    label: Label | None = None


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    w: int
    h: int

    def moved(self, dx: int, dy: int) -> Box:
        return Box(self.x + dx, self.y + dy, self.w, self.h)


@dataclass(frozen=True)
class Route:
    """`points` come in pairs: points[2i] -> points[2i+1] is a straight vertical run inside a layer,
    points[2i+1] -> points[2i+2] a curve through the gap below it (see `svg_path`)."""

    edge: LEdge
    points: tuple[tuple[int, int], ...]

    def moved(self, dx: int, dy: int) -> Route:
        return Route(self.edge, tuple((x + dx, y + dy) for x, y in self.points))


@dataclass(frozen=True)
class Layout:
    width: int
    height: int
    boxes: Mapping[str, Box]
    labels: Mapping[tuple[str, str], Box]  # (source, label key) -> where the label sits
    routes: tuple[Route, ...]  # one per edge, in the input order


# A vertex of the layered graph: ("n", node id) | ("l", "src\0key") | ("d", "edge index:layer").
_V = tuple[str, str]


def _ranks(
    ids: Sequence[str], succ: Mapping[str, list[str]], pred: Mapping[str, list[str]]
) -> dict[str, int]:
    """Longest-path ranks (Kahn, ties to input order), then each source moved down to just above
    its highest successor so inputs sit next to their first reader."""
    index = {n: i for i, n in enumerate(ids)}
    indeg = {n: len(pred[n]) for n in ids}
    rank = dict.fromkeys(ids, 0)
    ready = sorted((n for n in ids if indeg[n] == 0), key=index.__getitem__, reverse=True)
    order: list[str] = []
    while ready:
        n = ready.pop()
        order.append(n)
        fresh = []
        for s in succ[n]:
            rank[s] = max(rank[s], rank[n] + 1)
            indeg[s] -= 1
            if indeg[s] == 0:
                fresh.append(s)
        if fresh:
            ready = sorted([*ready, *fresh], key=index.__getitem__, reverse=True)
    for n in ids:
        if not pred[n] and succ[n]:
            rank[n] = min(rank[s] for s in succ[n]) - 1
    return rank


def _acyclic(ids: Sequence[str], edges: Sequence[LEdge]) -> list[tuple[str, str]]:
    """(upper, lower) per edge: an edge closing a cycle (a depth-first back edge) is laid out reversed."""
    out: dict[str, list[str]] = {n: [] for n in ids}
    for e in edges:
        out[e.src].append(e.dst)
    state = dict.fromkeys(ids, 0)
    back: set[tuple[str, str]] = set()
    for root in ids:
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(out[root]))]
        while stack:
            n, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[n] = 2
                stack.pop()
            elif state[nxt] == 1:
                back.add((n, nxt))
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(out[nxt])))
    return [(e.dst, e.src) if (e.src, e.dst) in back else (e.src, e.dst) for e in edges]


def _crossings(upper: Mapping[_V, int], lower: Mapping[_V, int], links: Sequence[tuple[_V, _V]]) -> int:
    pairs = sorted((upper[a], lower[b]) for a, b in links)
    tree = [0] * (len(lower) + 1)
    total = 0
    for seen, (_, q) in enumerate(pairs):
        i, le = q + 1, 0
        while i > 0:
            le += tree[i]
            i -= i & -i
        total += seen - le  # earlier links ending to the right of q
        i = q + 1
        while i < len(tree):
            tree[i] += 1
            i += i & -i
    return total


def _isotonic(targets: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence closest to `targets` in weighted least squares (PAVA)."""
    blocks: list[list[float]] = []  # [weight, weighted sum, count]
    for t, w in zip(targets, weights, strict=True):
        blocks.append([w, w * t, 1])
        while len(blocks) > 1 and blocks[-2][1] * blocks[-1][0] > blocks[-1][1] * blocks[-2][0]:
            w2, s2, c2 = blocks.pop()
            blocks[-1][0] += w2
            blocks[-1][1] += s2
            blocks[-1][2] += c2
    out: list[float] = []
    for w, s, c in blocks:
        out.extend([s / w] * int(c))
    return out


def layered(nodes: Sequence[LNode], edges: Sequence[LEdge]) -> Layout:
    """The layout of `nodes` (ids unique) and `edges` (between them; self-loops are not drawn)."""
    ids = [n.id for n in nodes]
    size = {("n", n.id): (n.w, n.h) for n in nodes}
    edges = [e for e in edges if e.src != e.dst]
    oriented = _acyclic(ids, edges)
    succ: dict[str, list[str]] = {n: [] for n in ids}
    pred: dict[str, list[str]] = {n: [] for n in ids}
    for a, b in dict.fromkeys(oriented):
        succ[a].append(b)
        pred[b].append(a)
    rank = _ranks(ids, succ, pred)
    lowest = min(rank.values(), default=0)
    layer_of: dict[_V, int] = {("n", n): 2 * (rank[n] - lowest) for n in ids}
    chains: list[list[_V]] = []
    for i, (e, (a, b)) in enumerate(zip(edges, oriented, strict=True)):
        chain: list[_V] = [("n", a)]
        top, bottom = layer_of[("n", a)], layer_of[("n", b)]
        first = top + 1
        if e.label is not None:
            # A reversed edge (a broken, cyclic input) gets a label of its own.
            lv: _V = ("l", f"{e.src}\0{e.label.key}" if a == e.src else f"{e.src}\0{e.label.key}\0{i}")
            if lv not in layer_of:
                layer_of[lv] = first
                size[lv] = (e.label.w, e.label.h)
            chain.append(lv)
            first = layer_of[lv] + 1
        for layer in range(first, bottom):
            dv: _V = ("d", f"{i}:{layer}")
            layer_of[dv] = layer
            size[dv] = (2, 0)
            chain.append(dv)
        chain.append(("n", b))
        chains.append(chain)
    links = list(dict.fromkeys((c[j], c[j + 1]) for c in chains for j in range(len(c) - 1)))
    down: dict[_V, list[_V]] = {v: [] for v in layer_of}
    up: dict[_V, list[_V]] = {v: [] for v in layer_of}
    for va, vb in links:
        down[va].append(vb)
        up[vb].append(va)
    n_layers = max(layer_of.values(), default=-1) + 1
    layers: list[list[_V]] = [[] for _ in range(n_layers)]
    for v in layer_of:  # insertion order: nodes in input order, then labels and dummies by edge
        layers[layer_of[v]].append(v)
    layers = _order(layers, up, down)
    pos = _place(layers, size, up, down)
    return _geometry(layers, pos, size, edges, oriented, chains, down, up)


def _order(layers: list[list[_V]], up: Mapping[_V, list[_V]], down: Mapping[_V, list[_V]]) -> list[list[_V]]:
    def sweep(layers: list[list[_V]], downward: bool) -> list[list[_V]]:
        out = [list(layer) for layer in layers]
        seq = range(1, len(out)) if downward else range(len(out) - 2, -1, -1)
        for li in seq:
            fixed = {v: i for i, v in enumerate(out[li - 1] if downward else out[li + 1])}
            nbrs = up if downward else down

            def key(
                iv: tuple[int, _V], fixed: dict[_V, int] = fixed, nbrs: Mapping[_V, list[_V]] = nbrs
            ) -> float:
                i, v = iv
                ps = [fixed[u] for u in nbrs[v] if u in fixed]
                return sum(ps) / len(ps) if ps else float(i)

            out[li] = [v for _, v in sorted(enumerate(out[li]), key=key)]
        return out

    def cost(layers: list[list[_V]]) -> int:
        total = 0
        for li in range(len(layers) - 1):
            upper = {v: i for i, v in enumerate(layers[li])}
            lower = {v: i for i, v in enumerate(layers[li + 1])}
            total += _crossings(upper, lower, [(a, b) for a in layers[li] for b in down[a]])
        return total

    best, best_cost = layers, cost(layers)
    current = sweep(layers, True)
    for i in range(2 * SWEEPS):
        c = cost(current)
        if c < best_cost:
            best, best_cost = current, c
        if best_cost == 0:
            break
        current = sweep(current, i % 2 == 1)
    return best


def _place(
    layers: list[list[_V]],
    size: Mapping[_V, tuple[int, int]],
    up: Mapping[_V, list[_V]],
    down: Mapping[_V, list[_V]],
) -> dict[_V, float]:
    """Centre x of every vertex: each layer as close as the separations allow to its neighbours."""
    offsets: list[list[float]] = []
    for layer in layers:
        off, acc = [], 0.0
        for j, v in enumerate(layer):
            if j:
                u = layer[j - 1]
                gap = GAP_X if u[0] == "n" and v[0] == "n" else GAP_THIN
                acc += (size[u][0] + size[v][0]) / 2 + gap
            off.append(acc)
        offsets.append(off)
    pos: dict[_V, float] = {v: offsets[li][j] for li, layer in enumerate(layers) for j, v in enumerate(layer)}

    def relax(li: int, sides: Sequence[Mapping[_V, list[_V]]]) -> None:
        targets, weights = [], []
        for j, v in enumerate(layers[li]):
            ns = [pos[u] for side in sides for u in side[v]]
            if ns:
                targets.append(sum(ns) / len(ns) - offsets[li][j])
                weights.append(len(ns) * (1.0 if v[0] == "n" else 4.0))
            else:
                targets.append(pos[v] - offsets[li][j])
                weights.append(0.05)
        for j, y in enumerate(_isotonic(targets, weights)):
            pos[layers[li][j]] = y + offsets[li][j]

    n = len(layers)
    for _ in range(SWEEPS):
        for li in range(1, n):
            relax(li, (up,))
        for li in range(n - 2, -1, -1):
            relax(li, (down,))
    for li in range(n):
        relax(li, (up, down))
    return pos


def _geometry(
    layers: list[list[_V]],
    pos: Mapping[_V, float],
    size: Mapping[_V, tuple[int, int]],
    edges: Sequence[LEdge],
    oriented: Sequence[tuple[str, str]],
    chains: Sequence[list[_V]],
    down: Mapping[_V, list[_V]],
    up: Mapping[_V, list[_V]],
) -> Layout:
    left = min((pos[v] - size[v][0] / 2 for layer in layers for v in layer), default=0.0)
    # Integer centres: rounding moves a centre by at most 1/2, every gap is wider than 1.
    cx = {v: round(p - left) + MARGIN for v, p in pos.items()}
    box: dict[_V, Box] = {}
    tops, bottoms = [], []
    y = MARGIN
    for layer in layers:
        h = max((size[v][1] for v in layer), default=0)
        for v in layer:
            box[v] = Box(cx[v] - size[v][0] // 2, y, size[v][0], size[v][1])
        tops.append(y)
        bottoms.append(y + h)
        y += h + GAP_Y
    height = (y - GAP_Y if layers else 0) + MARGIN
    width = max((b.x + b.w for b in box.values()), default=0) + MARGIN

    def through(v: _V) -> int:
        return box[v].x + LABEL_LINE if v[0] == "l" else cx[v]

    def ports(v: _V, nbrs: list[_V]) -> dict[_V, int]:
        b = box[v]
        if v[0] != "n":
            return dict.fromkeys(nbrs, through(v))
        ordered = sorted(dict.fromkeys(nbrs), key=lambda u: (through(u), u))
        return {u: b.x + (b.w * (i + 1)) // (len(ordered) + 1) for i, u in enumerate(ordered)}

    out_port = {v: ports(v, down[v]) for v in box}
    in_port = {v: ports(v, up[v]) for v in box}
    layer_index = {v: li for li, layer in enumerate(layers) for v in layer}
    routes = []
    for e, (a, _), chain in zip(edges, oriented, chains, strict=True):
        pts: list[tuple[int, int]] = []
        for j, v in enumerate(chain):
            li, b = layer_index[v], box[v]
            x_in = in_port[v][chain[j - 1]] if j else out_port[v][chain[1]]
            x_out = out_port[v][chain[j + 1]] if j + 1 < len(chain) else x_in
            if j == 0:
                pts += [(x_out, b.y + b.h), (x_out, bottoms[li])]
            elif j + 1 == len(chain):
                pts += [(x_in, tops[li]), (x_in, b.y)]
            else:
                pts += [(x_in, tops[li]), (x_out, bottoms[li])]
        if a != e.src:  # laid out reversed: the route still runs from e.src to e.dst
            pts.reverse()
        routes.append(Route(e, tuple(pts)))
    boxes = {v[1]: b for v, b in box.items() if v[0] == "n"}
    labels: dict[tuple[str, str], Box] = {}
    for v, b in box.items():
        if v[0] == "l":
            src, key = v[1].split("\0")[:2]
            labels.setdefault((src, key), b)
    return Layout(width, height, boxes, labels, tuple(routes))


def svg_path(points: Sequence[tuple[int, int]]) -> str:
    """An SVG path for a route: straight runs inside layers, vertical-tangent curves between them."""
    if not points:
        return ""
    parts = [f"M{points[0][0]},{points[0][1]}"]
    for i in range(1, len(points)):
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        if i % 2:
            if (x0, y0) != (x1, y1):
                parts.append(f"L{x1},{y1}")
        else:
            mid2 = y0 + y1  # control points at the gap's middle height (doubled, halved below)
            parts.append(f"C{x0},{mid2 / 2:g} {x1},{mid2 / 2:g} {x1},{y1}")
    return " ".join(parts)
