"""Issue #23: stable plans do not depend on the hash seed. Random graphs, each also under random
valid node and buffer orders, are planned in fresh processes with different PYTHONHASHSEED values
(children import this fuseopt, as `fuseopt check-determinism` does); every process prints the
same bytes for each file, the same as this process, and every order of a graph the same plan."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import fuseopt
from fuseopt.aot.determinism import permuted
from fuseopt.io.load import load_text
from fuseopt.ir.serialize import dump_json
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from tests.fixtures.graphgen import make_graph

# The bootstrap of fuseopt.aot.determinism (`fuseopt_command`): drop -c's cwd entry, put the
# directory holding this process's fuseopt first; then plan every file named on the command line
# with the size cap given first, and print the plans as one JSON list of their JSON texts.
_CHILD = """\
import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
sys.path.insert(0, sys.argv[1])
import json
from fuseopt.io.load import load_graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
texts = []
for arg in sys.argv[2:]:
    size, path = arg.split(":", 1)
    plan = optimize(load_graph(path), Options(max_fusion_size=int(size))).plan
    texts.append(json.dumps(plan.to_json(), indent=2))
print(json.dumps(texts))
"""
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(fuseopt.__file__)))


def _plan_text(path: Path, size: int) -> str:
    return json.dumps(
        optimize(load_text(path.read_text(), str(path)), Options(max_fusion_size=size)).plan.to_json(),
        indent=2,
    )


def _files(tmp: Path, graphs: int, orders: int, seed: int) -> list[tuple[str, int, Path]]:
    """(graph id, size cap, file) for `graphs` graphgen graphs and `orders` permutations of each."""
    rng = random.Random(seed)
    out = []
    for i in range(graphs):
        n = rng.randint(6, 40)
        rows, cols = rng.choice([(8, 16), (16, 8), (4, 4)])
        size = rng.choice([3, 8, 64])
        g = load_text(json.dumps(make_graph(n, rng.randrange(2**20), rows=rows, cols=cols)), "g.json")
        for j in range(orders + 1):
            variant = g if j == 0 else permuted(g, random.Random(rng.randrange(2**20)))
            path = tmp / f"g{i}_order{j}.json"
            path.write_text(dump_json(variant))
            out.append((f"g{i}", size, path))
    return out


def _check(tmp: Path, graphs: int, orders: int, hash_seeds: list[int], seed: int) -> None:
    files = _files(tmp, graphs, orders, seed)
    args = [f"{size}:{path}" for _, size, path in files]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, ROOT, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(s)},
            cwd=tmp,  # a directory without fuseopt: the child must import this one
        )
        for s in hash_seeds
    ]
    here = [_plan_text(path, size) for _, size, path in files]
    for s, proc in zip(hash_seeds, procs, strict=True):
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-2000:]
        got = json.loads(stdout)
        for (_, _, path), mine, theirs in zip(files, here, got, strict=True):
            assert theirs == mine, f"PYTHONHASHSEED={s}: the plan of {path.name} differs from this process's"
    by_graph: dict[str, set[str]] = {}
    for (gid, _, _), text in zip(files, here, strict=True):
        doc = json.loads(text)
        doc.pop("graph_sha256")  # the hash of the file's bytes, which an order changes
        by_graph.setdefault(gid, set()).add(json.dumps(doc, sort_keys=True))
    assert all(len(v) == 1 for v in by_graph.values()), [g for g, v in by_graph.items() if len(v) > 1]


def test_plans_are_byte_identical_under_hash_seeds_and_orders(tmp_path: Path) -> None:
    """6 graphs x 3 orders, 2 fresh processes (hash seeds 1 and 4242) and this one."""
    _check(tmp_path, graphs=6, orders=2, hash_seeds=[1, 4242], seed=23)


@pytest.mark.slow
def test_plans_are_byte_identical_under_hash_seeds_and_orders_sweep(tmp_path: Path) -> None:
    """40 graphs x 4 orders, 4 fresh processes (hash seeds 0, 1, 2**16 and 2**32 - 1)."""
    _check(tmp_path, graphs=40, orders=3, hash_seeds=[0, 1, 2**16, 2**32 - 1], seed=2312)
