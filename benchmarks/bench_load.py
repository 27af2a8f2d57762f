"""Load+validate benchmark: a generated 10,000-node graph, as JSON and as YAML, through `load_graph`.

The graph is a chain of blocks that look like what Inductor hands a scheduler: pointwise nodes on
contiguous and transposed layouts, row reductions (softmax), a channels-last avg_pool2d window
(masked loads), indirect (embedding) loads, clamped and floor-divided indices, argmax, fp16 stores
and a few extern matmuls. Each load runs in a fresh interpreter (cold caches, honest peak RSS);
wall and CPU seconds are both reported because the machine may be shared. Prints one JSON
object; `--save` also writes it to benchmarks/results/load-<date>.json.

    python benchmarks/bench_load.py [--nodes 10000] [--repeat 3] [--save]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import yaml

from fuseopt.io.load import load_graph

ROWS, COLS = 64, 128
N, C, H, W = 2, 64, 35, 35  # channels-last image for the pooling window


def _buf(shape: list[int], dtype: str = "float32", role: str = "intermediate", **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"shape": shape, **kw, "dtype": dtype}
    if role != "intermediate":
        d["role"] = role
    return d


def _block(k: int, prev: str, buffers: dict[str, Any], nodes: list[dict[str, Any]], last: bool) -> str:
    """Ten nodes; returns the name of the buffer the next block reads."""
    p = f"b{k}_"
    rc = [["i0", ROWS], ["i1", COLS]]
    flat = f"{COLS}*i0 + i1"
    buffers[p + "a"] = _buf([ROWS, COLS])
    buffers[p + "at"] = _buf([ROWS, COLS], stride=[1, ROWS])
    buffers[p + "m"] = _buf([ROWS])
    buffers[p + "e"] = _buf([ROWS, COLS])
    buffers[p + "s"] = _buf([ROWS])
    buffers[p + "sm"] = _buf([ROWS, COLS], "float16")
    buffers[p + "pool"] = _buf([N, C, H, W], stride=[H * W * C, 1, W * C, C])
    buffers[p + "g"] = _buf([ROWS, COLS])
    buffers[p + "u"] = _buf([ROWS, COLS], role="output" if last else "intermediate")
    n = len(nodes)
    nodes.append(
        {"name": f"n{n}", "loops": rc, "store": f"{p}a[{flat}]",
         "value": f"relu({prev}[{flat}]) * 2.0 + x[{flat}]"}
    )  # fmt: skip
    nodes.append(
        {"name": f"n{n + 1}", "loops": [["i0", COLS], ["i1", ROWS]], "store": f"{p}at[i1 + {ROWS}*i0]",
         "value": f"3 * {p}a[{COLS}*i1 + i0]"}
    )  # fmt: skip
    nodes.append(
        {"name": f"n{n + 2}", "kind": "reduction", "loops": [["i0", ROWS]], "reduce": [["r0", COLS]],
         "store": f"{p}m[i0]", "value": f"max({p}at[i0 + {ROWS}*r0])"}
    )  # fmt: skip
    nodes.append(
        {"name": f"n{n + 3}", "loops": rc, "store": f"{p}e[{flat}]",
         "value": f"exp({p}a[{flat}] - {p}m[i0])"}
    )  # fmt: skip
    nodes.append(
        {"name": f"n{n + 4}", "loops": [["i0", ROWS]], "reduce": [["r0", COLS]],
         "store": f"{p}s[i0]", "value": f"sum({p}e[{COLS}*i0 + r0])"}
    )  # fmt: skip
    nodes.append(
        {"name": f"n{n + 5}", "loops": rc, "store": f"{p}sm[{flat}]",
         "value": f"{p}e[{flat}] / {p}s[i0]"}
    )  # fmt: skip
    hh, ww = "h + r0//3 - 1", "w + r0%3 - 1"
    nodes.append(
        {"name": f"n{n + 6}", "loops": [["n", N], ["h", H], ["w", W], ["c", C]], "reduce": [["r0", 9]],
         "store": f"{p}pool[c + {C}*w + {W * C}*h + {H * W * C}*n]",
         "value": f"sum(masked(({hh} >= 0) & ({hh} < {H}) & ({ww} >= 0) & ({ww} < {W}), "
         f"img[c + {C}*({ww}) + {W * C}*({hh}) + {H * W * C}*n], 0.0))"}
    )  # fmt: skip
    nodes.append(
        {"name": f"n{n + 7}", "loops": rc, "store": f"{p}g[{flat}]",
         "value": f"emb[{COLS}*ids[i0] + i1] + {p}sm[{COLS}*min(i0 + 1, {ROWS - 1}) + i1]"}
    )  # fmt: skip
    nodes.append(
        {"name": f"n{n + 8}", "loops": rc, "store": f"{p}u[{flat}]",
         "value": f"{p}g[{COLS}*(i0 // 2) + 64*(i1 // 64) + i1 % 64] * 0.5 + where(i1 > 3, 1.0, 0.0)"}
    )  # fmt: skip
    if k % 5 == 4:
        buffers[p + "mm"] = _buf([ROWS, COLS])
        nodes.append({"name": f"n{n + 9}", "kind": "extern", "op": "mm", "inputs": [p + "u", "wmat"],
                      "output": p + "mm"})  # fmt: skip
    else:
        buffers[p + "am"] = _buf([ROWS], "int64", role="output")
        nodes.append(
            {"name": f"n{n + 9}", "loops": [["i0", ROWS]], "reduce": [["r0", COLS]],
             "store": f"{p}am[i0]", "value": f"argmax({p}u[{COLS}*i0 + r0])"}
        )  # fmt: skip
    return p + "u"


def generate(n_nodes: int = 10_000) -> dict[str, Any]:
    buffers: dict[str, Any] = {
        "x": _buf([ROWS, COLS], role="input"),
        "img": _buf([N, C, H, W], stride=[H * W * C, 1, W * C, C], role="input"),
        "ids": _buf([ROWS], "int64", role="input"),
        "emb": _buf([1000, COLS], role="input"),
        "wmat": _buf([COLS, COLS], role="input"),
    }
    nodes: list[dict[str, Any]] = []
    prev = "x"
    blocks = max(1, n_nodes // 10)
    for k in range(blocks):
        prev = _block(k, prev, buffers, nodes, last=k == blocks - 1)
    return {
        "format": "fuseopt-graph/1",
        "name": f"bench{len(nodes)}",
        "description": "generated by benchmarks/bench_load.py",
        "buffers": buffers,
        "nodes": nodes,
    }


class _NoAliasDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Graph files may not hold YAML anchors/aliases; the generator shares lists between nodes."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _peak_rss_kib() -> int:
    """Peak resident set of this process. VmHWM, where Linux has it: ru_maxrss survives exec, so in
    a child it would report the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child(path: str, trace: bool) -> dict[str, Any]:
    """One cold load in this (fresh) process: wall and CPU seconds, peak memory."""
    gc.collect()
    rss_before = _peak_rss_kib()
    if trace:
        tracemalloc.start()
    w0, c0 = time.perf_counter(), time.process_time()
    g = load_graph(path)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    out: dict[str, Any] = {"wall": wall, "cpu": cpu, "nodes": len(g.nodes), "buffers": len(g.buffers)}
    if trace:
        out["peak_traced"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    out["rss_before_kib"] = rss_before
    out["max_rss_kib"] = _peak_rss_kib()
    return out


def _run_child(path: Path, trace: bool) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(path)] + (["--trace"] if trace else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _measure(path: Path, repeat: int) -> dict[str, Any]:
    """`repeat` cold loads, each in a fresh interpreter (no warm caches), plus one traced load."""
    runs = [_run_child(path, trace=False) for _ in range(repeat)]
    traced = _run_child(path, trace=True)
    walls = sorted(r["wall"] for r in runs)
    return {
        "file_bytes": path.stat().st_size,
        "nodes": runs[0]["nodes"],
        "buffers": runs[0]["buffers"],
        "seconds_min": round(walls[0], 3),
        "seconds_median": round(walls[len(walls) // 2], 3),
        "cpu_seconds_min": round(min(r["cpu"] for r in runs), 3),
        "peak_traced_mib": round(traced["peak_traced"] / 2**20, 1),
        "max_rss_mib": round(max(r["max_rss_kib"] for r in runs) / 1024, 1),
        "rss_before_load_mib": round(min(r["rss_before_kib"] for r in runs) / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/load-<date>.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        sys.stdout.write(json.dumps(_child(args.child, args.trace)) + "\n")
        return 0

    doc = generate(args.nodes)
    results: dict[str, Any] = {
        "benchmark": "load",
        "date": _dt.date.today().isoformat(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "yaml_libyaml": bool(getattr(yaml, "__with_libyaml__", False)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        jpath = Path(tmp) / "bench.json"
        ypath = Path(tmp) / "bench.yaml"
        jpath.write_text(json.dumps(doc, indent=1))
        ypath.write_text(
            yaml.dump(doc, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=None, width=120)
        )
        results["json"] = _measure(jpath, args.repeat)
        results["yaml"] = _measure(ypath, args.repeat)
    text = json.dumps(results, indent=2) + "\n"
    sys.stdout.write(text)
    if args.save:
        out = Path(__file__).resolve().parent / "results" / f"load-{results['date']}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
