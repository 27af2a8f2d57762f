"""Synthetic graphs for planner benchmarks, shaped like real programs.

`make_graph(n, seed)` returns a docs/format.md document (dict) with n nodes in blocks of about 16
nodes (like layers of a model). Each block has its own parameters and reads the previous block's
output; inside a block: pointwise chains, transposed-layout producers and consumers (loop-order
work), row reductions with epilogues and broadcast consumers (reduction fusion), and horizontal
siblings sharing an input. Deterministic for a seed.
"""

from __future__ import annotations

import random
from typing import Any


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
    read: set[str] = set()
    for nd in nodes:
        for b in buffers:
            if b + "[" in nd["value"]:
                read.add(b)
    for b, spec in buffers.items():
        if spec.get("role") != "input" and b not in read:
            spec["role"] = "output"
    return {"format": "fuseopt-graph/1", "name": f"synthetic_{n}", "buffers": buffers, "nodes": nodes}
