"""Issue #23: a consistent renaming of nodes and buffers that does not keep their sort order
(every name replaced, in a random permutation) changes the stable plan only through the ties that
names break (docs/format.md, "Determinism and names"): which of several equally scored fusions goes
first. On the captured programs nothing but names changes; on graphgen graphs, full of
identical siblings, how often the kernels change is measured and bounded.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from fuseopt.io.load import load_graph, load_text
from fuseopt.ir.serialize import graph_to_dict
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan
from tests.fixtures.graphgen import make_graph

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CAPTURED = Path(__file__).resolve().parent / "golden" / "captured"


def rename(doc: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], dict[str, str]]:
    """Every node and buffer gets a new name `v<k>`, k a random permutation: sort order not kept."""
    names = sorted({*doc["buffers"], *(n["name"] for n in doc["nodes"])})
    new = [f"v{k:04d}" for k in range(len(names))]
    rng.shuffle(new)
    mapping = dict(zip(names, new, strict=True))

    def sub(x: Any) -> Any:
        if isinstance(x, str):
            return IDENT.sub(lambda t: mapping.get(t.group(0), t.group(0)), x)
        if isinstance(x, list):
            return [sub(y) for y in x]
        return x

    nodes = [{k: (mapping[v] if k == "name" else sub(v)) for k, v in n.items()} for n in doc["nodes"]]
    buffers = {mapping[b]: v for b, v in doc["buffers"].items()}
    return {**doc, "buffers": buffers, "nodes": nodes}, mapping


def _plan(doc: dict[str, Any], opts: Options) -> Plan:
    return optimize(load_text(json.dumps(doc), "g.json"), opts).plan


def _kernels(plan: Plan, mapping: dict[str, str] | None = None) -> list[list[str]]:
    return sorted(sorted(mapping[m] if mapping else m for m in k.nodes) for k in plan.kernels)


def _measure(graphs: int, size: int, seed: int) -> tuple[int, int, int]:
    """(plans whose kernels change under a random renaming, of those with another kernel count or
    byte total, graphs) over graphgen graphs of 4 to 40 nodes at size cap `size`."""
    rng = random.Random(seed)
    changed = worse = 0
    for i in range(graphs):
        doc = make_graph(rng.randint(4, 40), rng.randrange(2**20), rows=8, cols=16)
        renamed, mapping = rename(doc, random.Random(i))
        opts = Options(max_fusion_size=size)
        a, b = _plan(doc, opts), _plan(renamed, opts)
        if _kernels(a, mapping) != _kernels(b):
            changed += 1
            worse += (a.metrics["kernels"], a.metrics["bytes"]) != (b.metrics["kernels"], b.metrics["bytes"])
    return changed, worse, graphs


def test_random_renaming_at_the_default_cap_is_measured() -> None:
    """graphgen graphs are full of identical siblings (equal scores), so names pick among equally
    scored fusions. Measured (docs/format.md): at the default cap 10-15% of graphs plan other kernels
    under a random renaming, 5-8% another kernel count or byte total. A bound, not zero: the
    planner breaks ties by name by design; this guards against it getting worse."""
    changed, worse, graphs = _measure(20, 64, 23)
    assert changed <= graphs // 5 and worse <= graphs // 10, (changed, worse, graphs)


@pytest.mark.slow
@pytest.mark.parametrize("size", [3, 8])
def test_random_renaming_under_small_caps_is_measured(size: int) -> None:
    """Under a small cap, which equal sibling fills a kernel first decides the rest more often
    (docs/format.md: 25-50% of graphs plan other kernels, 25-40% another count or byte total)."""
    changed, worse, graphs = _measure(40, size, 2312 + size)
    assert changed <= graphs * 3 // 5 and worse <= graphs // 2, (changed, worse, graphs)


@pytest.mark.parametrize(
    ("name", "same_kernels"),
    [("det_small", True), ("probe_L64", True), pytest.param("probe_L128", False, marks=pytest.mark.slow)],
)
def test_captured_graphs_under_random_renamings(name: str, same_kernels: bool) -> None:
    """The issue's captured graphs: the same kernel count under every renaming; where the plan is
    one kernel, the same kernels and bytes. probe_L128's two kernels split its 78 nodes where
    names decide (equally scored pairs at the cap; two of three renamings move 512 more bytes), so
    only its kernel count is compared."""
    doc = graph_to_dict(load_graph(str(CAPTURED / f"{name}.yaml")))
    a = _plan(doc, Options())
    for seed in range(3):
        renamed, mapping = rename(doc, random.Random(seed))
        b = _plan(renamed, Options())
        assert a.metrics["kernels"] == b.metrics["kernels"], seed
        if same_kernels:
            assert _kernels(a, mapping) == _kernels(b), seed
            assert dict(a.metrics) == dict(b.metrics), seed
