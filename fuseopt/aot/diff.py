"""`diff-jit-aot` as functions: simulate AOT's two scheduler passes, or compare two dumps or plans.

Contract: `diff_finalized(graph, opts, mode)` plans `graph` (pass 1), finalizes its templates
(`finalize.finalize_templates`), plans the result (pass 2) and compares the plans with
`compare.compare_plans`, pass-2 names mapped back to pass-1 names. `diff_graphs` plans two graph
dumps of one program; `diff_plans` compares two plans. All are pure; nothing is printed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fuseopt.aot.compare import Comparison, compare_plans
from fuseopt.aot.finalize import Finalized, finalize_templates
from fuseopt.ir.graph import Graph, LibraryNode
from fuseopt.passes.fusion import inductor_node_order
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan

DIFF_FORMAT = "fuseopt-diff-jit-aot/1"
LABELS = ("jit", "aot")


@dataclass(frozen=True)
class DiffReport:
    mode: str  # finalize | graphs | plans
    jit: Plan
    aot: Plan
    comparison: Comparison
    options: Mapping[str, Any] = field(default_factory=dict)
    finalized: Finalized | None = None
    node_renames: Mapping[str, str] = field(default_factory=dict)  # jit name -> aot name

    @property
    def identical(self) -> bool:
        return self.comparison.identical

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": DIFF_FORMAT,
            "mode": self.mode,
            "graph": self.jit.graph,
            "options": dict(self.options),
        }
        if self.finalized is not None:
            out["finalize"] = self.finalized.to_json()
        else:
            out["node_renames"] = dict(self.node_renames)
        out.update(self.comparison.to_json(LABELS))
        return out


def node_orders(graph: Graph, opts: Options) -> dict[str, int]:
    """The node-order numbers the planner's proximity term uses (inductor mode)."""
    if opts.scoring != "inductor":
        return {}
    return {name: i for i, name in enumerate(inductor_node_order(graph))}


def _orders(
    jit: Graph, aot: Graph, opts: Options, back: Mapping[str, str]
) -> tuple[dict[str, int], dict[str, int]] | None:
    if opts.scoring != "inductor":
        return None
    oa = node_orders(jit, opts)
    ob = {back.get(n, n): i for n, i in node_orders(aot, opts).items()}
    return oa, ob


def diff_finalized(graph: Graph, opts: Options, mode: str, *, strict_names: bool = False) -> DiffReport:
    fin = finalize_templates(graph, mode)
    jit = optimize(graph, opts).plan
    aot = optimize(fin.graph, opts).plan
    back = {new: old for old, new in fin.node_renames.items()}
    cmp = compare_plans(
        jit, aot, back, orders=_orders(graph, fin.graph, opts, back), labels=LABELS, strict_names=strict_names
    )
    return DiffReport("finalize", jit, aot, cmp, opts.to_json(), fin, dict(fin.node_renames))


def infer_renames(jit: Graph, aot: Graph) -> dict[str, str]:
    """jit node -> aot node for library nodes present under a new name in the AOT dump.

    A node missing from the AOT graph matches the one new AOT node of the same kind and op with
    the same inputs; anything ambiguous is left unmatched (pass `explicit` renames for it).
    """
    new_in_aot = [n for n in aot.nodes if not jit.has_node(n.name)]
    out: dict[str, str] = {}
    for n in jit.nodes:
        if aot.has_node(n.name) or not isinstance(n, LibraryNode):
            continue
        same = [
            m
            for m in new_in_aot
            if isinstance(m, LibraryNode) and (m.kind, m.op, m.inputs) == (n.kind, n.op, n.inputs)
        ]
        if len(same) == 1 and same[0].name not in out.values():
            out[n.name] = same[0].name
    return out


def diff_graphs(
    jit: Graph,
    aot: Graph,
    opts: Options,
    explicit: Mapping[str, str] | None = None,
    *,
    strict_names: bool = False,
) -> DiffReport:
    renames = {**infer_renames(jit, aot), **(explicit or {})}
    back = {new: old for old, new in renames.items()}
    jp, ap = optimize(jit, opts).plan, optimize(aot, opts).plan
    cmp = compare_plans(
        jp, ap, back, orders=_orders(jit, aot, opts, back), labels=LABELS, strict_names=strict_names
    )
    return DiffReport("graphs", jp, ap, cmp, opts.to_json(), None, renames)


def diff_plans(
    jit: Plan, aot: Plan, explicit: Mapping[str, str] | None = None, *, strict_names: bool = False
) -> DiffReport:
    renames = dict(explicit or {})
    back = {new: old for old, new in renames.items()}
    cmp = compare_plans(jit, aot, back, labels=LABELS, strict_names=strict_names)
    return DiffReport("plans", jit, aot, cmp, dict(jit.options), None, renames)
