"""Synthetic graphs for planner benchmarks, shaped like real programs.

`make_graph(n, seed)` returns a docs/format.md document (dict) with n nodes in blocks of about 16
nodes (like layers of a model). Each block has its own parameters and reads the previous block's
output; inside a block: pointwise chains, transposed-layout producers and consumers (loop-order
work), row reductions with epilogues and broadcast consumers (reduction fusion), and horizontal
siblings sharing an input. Deterministic for a seed.

`make_transposed(n, seed)` is the loop-order-heavy family: a chain in which every other node walks
the transposed layout (its store and loads disagree with its neighbours' row-major loop order, so
nearly every candidate pair needs a loop permutation to fuse), with a row reduction every 3 to 5
nodes whose result a broadcast consumer subtracts, and now and then a skip read of an older
buffer. `make_mixed(n, seed)` interleaves blocks of both families. `FAMILIES` names the three.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

_READ = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[")


def make_graph(n: int, seed: int = 0, rows: int = 64, cols: int = 128) -> dict[str, Any]:
    rng = random.Random(seed)
    buffers: dict[str, Any] = {"x": {"shape": [rows, cols], "dtype": "float32", "role": "input"}}
    nodes: list[dict[str, Any]] = []
    carry = "x"  # the block input
    i = 0
    block = 0
    while len(nodes) < n:
        w, xt = f"w{block}", f"xt{block}"
        buffers[w] = {"shape": [cols], "dtype": "float32", "role": "input"}
        buffers[xt] = {"shape": [rows, cols], "stride": [1, rows], "dtype": "float32", "role": "input"}
        recent = [carry]
        rowbufs: list[str] = []
        for _ in range(16):
            if len(nodes) >= n:
                break
            kind = rng.choice(["pw", "pw", "pwt", "red", "bcast", "sib"])
            src = rng.choice(recent[-3:])
            i += 1
            name = f"b{i}"
            if kind == "pw" or (kind == "bcast" and not rowbufs):
                buffers[name] = {"shape": [rows, cols], "dtype": "float32"}
                nodes.append(
                    {
                        "name": f"n{i}",
                        "loops": [["i0", rows], ["i1", cols]],
                        "store": f"{name}[{cols}*i0 + i1]",
                        "value": f"relu({src}[{cols}*i0 + i1] * 2 + {xt}[i0 + {rows}*i1])",
                    }
                )
                recent.append(name)
            elif kind == "pwt":
                buffers[name] = {"shape": [rows, cols], "stride": [1, rows], "dtype": "float32"}
                nodes.append(
                    {
                        "name": f"n{i}",
                        "loops": [["i0", cols], ["i1", rows]],
                        "store": f"{name}[i1 + {rows}*i0]",
                        "value": f"sigmoid({src}[{cols}*i1 + i0]) + {w}[i0]",
                    }
                )
                recent.append(name)
            elif kind == "red":
                buffers[name] = {"shape": [rows], "dtype": "float32"}
                nodes.append(
                    {
                        "name": f"n{i}",
                        "loops": [["i0", rows]],
                        "reduce": [["r0", cols]],
                        "store": f"{name}[i0]",
                        "value": f"sum({src}[{cols}*i0 + r0] * {w}[r0])",
                    }
                )
                rowbufs.append(name)
            elif kind == "bcast":
                r = rng.choice(rowbufs)
                buffers[name] = {"shape": [rows, cols], "dtype": "float32"}
                nodes.append(
                    {
                        "name": f"n{i}",
                        "loops": [["i0", rows], ["i1", cols]],
                        "store": f"{name}[{cols}*i0 + i1]",
                        "value": f"{src}[{cols}*i0 + i1] - {r}[i0]",
                    }
                )
                recent.append(name)
            else:  # a sibling of the last node: reads the same input, different op
                buffers[name] = {"shape": [rows, cols], "dtype": "float32"}
                nodes.append(
                    {
                        "name": f"n{i}",
                        "loops": [["i0", rows], ["i1", cols]],
                        "store": f"{name}[{cols}*i0 + i1]",
                        "value": f"tanh({src}[{cols}*i0 + i1])",
                    }
                )
                recent.append(name)
        carry = recent[-1]
        block += 1
    return _finish(f"synthetic_{n}", buffers, nodes)


def _finish(name: str, buffers: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Every non-input buffer that no node reads becomes a graph output."""
    read = {m for nd in nodes for m in _READ.findall(nd["value"])}
    for b, spec in buffers.items():
        if spec.get("role") != "input" and b not in read:
            spec["role"] = "output"
    return {"format": "fuseopt-graph/1", "name": name, "buffers": buffers, "nodes": nodes}


class _Chain:
    """The transposed-chain builder: appends nodes, tracks the latest buffer and its layout."""

    def __init__(self, rng: random.Random, rows: int, cols: int) -> None:
        self.rng, self.rows, self.cols = rng, rows, cols
        self.buffers: dict[str, Any] = {}
        self.nodes: list[dict[str, Any]] = []
        self.layout: dict[str, str] = {}  # buffer -> "row" | "col" (stride [1, rows])
        self.recent: list[str] = []

    def read(self, buf: str, transposed_loops: bool) -> str:
        """buf[element (r, c)] with r, c the loop variables of a row-major (i0=r, i1=c) or a
        transposed (i0=c, i1=r) node."""
        r, c = ("i1", "i0") if transposed_loops else ("i0", "i1")
        if self.layout[buf] == "row":
            return f"{buf}[{self.cols}*{r} + {c}]"
        return f"{buf}[{r} + {self.rows}*{c}]"

    def add_input(self, name: str, layout: str) -> None:
        spec: dict[str, Any] = {"shape": [self.rows, self.cols], "dtype": "float32", "role": "input"}
        if layout == "col":
            spec["stride"] = [1, self.rows]
        self.buffers[name] = spec
        self.layout[name] = layout
        self.recent.append(name)

    def pointwise(self, name: str, transposed: bool, value: str) -> None:
        rows, cols = self.rows, self.cols
        spec: dict[str, Any] = {"shape": [rows, cols], "dtype": "float32"}
        if transposed:
            spec["stride"] = [1, rows]
            loops, store = [["i0", cols], ["i1", rows]], f"{name}[i1 + {rows}*i0]"
        else:
            loops, store = [["i0", rows], ["i1", cols]], f"{name}[{cols}*i0 + i1]"
        self.buffers[name] = spec
        self.layout[name] = "col" if transposed else "row"
        self.nodes.append({"name": "n" + name[1:], "loops": loops, "store": store, "value": value})
        self.recent.append(name)


def _transposed_block(ch: _Chain, start: int, count: int, tag: str) -> int:
    """`count` nodes of the transposed chain from node number `start`; returns the next number."""
    rng, rows, cols = ch.rng, ch.rows, ch.cols
    yt, w = f"yt{tag}", f"w{tag}"
    ch.add_input(yt, "col")
    ch.buffers[w] = {"shape": [cols], "dtype": "float32", "role": "input"}
    ch.recent.pop()  # the input is read by name below, not as a chain link
    i = start
    until_red = rng.randint(3, 5)
    end = start + count
    while i < end:
        src = ch.recent[-1]
        until_red -= 1
        if until_red == 0 and i + 1 < end:
            until_red = rng.randint(3, 5)
            red, out = f"b{i}", f"b{i + 1}"
            ch.buffers[red] = {"shape": [rows], "dtype": "float32"}
            ch.nodes.append(
                {
                    "name": f"n{i}",
                    "loops": [["i0", rows]],
                    "reduce": [["r0", cols]],
                    "store": f"{red}[i0]",
                    "value": f"sum({ch.read(src, False).replace('i1', 'r0')})",
                }
            )
            ch.pointwise(out, False, f"{ch.read(src, False)} - {red}[i0]")
            i += 2
            continue
        transposed = (i - start) % 2 == 1
        skip = ch.recent[-rng.randint(2, 4)] if len(ch.recent) > 4 and rng.random() < 0.2 else None
        op = rng.choice(["sin", "tanh", "sigmoid", "relu"])
        k = rng.randint(1, 9)

        text = f"{op}({ch.read(src, transposed)}) + {ch.read(yt, transposed)} * {k}"
        if transposed:
            text += f" + {w}[i0]"
        if skip is not None:
            text += f" + {ch.read(skip, transposed)}"
        ch.pointwise(f"b{i}", transposed, text)
        i += 1
    return i


def make_transposed(n: int, seed: int = 0, rows: int = 64, cols: int = 128) -> dict[str, Any]:
    """The loop-order-heavy family (module docstring): n nodes in blocks of 16."""
    ch = _Chain(random.Random(seed), rows, cols)
    ch.add_input("x", "row")
    i, block = 1, 0
    while len(ch.nodes) < n:
        i = _transposed_block(ch, i, min(16, n - len(ch.nodes)), str(block))
        block += 1
    return _finish(f"transposed_{n}", ch.buffers, ch.nodes)


def make_mixed(n: int, seed: int = 0, rows: int = 64, cols: int = 128) -> dict[str, Any]:
    """Blocks of 16 drawn from both families (graphgen's blocks and the transposed chain), each
    block reading the previous one's last row-major [rows, cols] output; deterministic for a seed."""
    rng = random.Random(seed)
    out: dict[str, Any] = {"x": {"shape": [rows, cols], "dtype": "float32", "role": "input"}}
    nodes: list[dict[str, Any]] = []
    carry = "x"
    block = 0
    while len(nodes) < n:
        count = min(16, n - len(nodes))
        family = make_graph if rng.random() < 0.5 else make_transposed
        part = family(count, rng.randrange(1 << 30), rows, cols)
        rename = {b: f"m{block}_{b}" for b in part["buffers"]}
        rename["x"] = carry
        for b, spec in part["buffers"].items():
            if b != "x":
                out[rename[b]] = {k: v for k, v in spec.items() if k != "role" or v == "input"}
        pat = re.compile(r"\b(" + "|".join(sorted(map(re.escape, rename), key=len, reverse=True)) + r")\[")
        nodes.extend(
            dict(
                nd,
                name=f"m{block}_{nd['name']}",
                store=_rename(pat, rename, nd["store"]),
                value=_rename(pat, rename, nd["value"]),
            )
            for nd in part["nodes"]
        )
        written = [nd["store"].split("[", 1)[0] for nd in part["nodes"]]
        row_major = [
            b
            for b in written
            if "stride" not in part["buffers"][b] and part["buffers"][b]["shape"] == [rows, cols]
        ]
        if row_major:
            carry = rename[row_major[-1]]
        block += 1
    return _finish(f"mixed_{n}", out, nodes)


def _rename(pat: re.Pattern[str], rename: dict[str, str], text: str) -> str:
    return pat.sub(lambda m: rename[m.group(1)] + "[", text)


FAMILIES: dict[str, Callable[..., dict[str, Any]]] = {
    "graphgen": make_graph,
    "transposed": make_transposed,
    "mixed": make_mixed,
}
