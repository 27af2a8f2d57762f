"""Is a plan a function of the graph alone? Plan it under permutations and in fresh processes.

Contract: `check_permutations` plans the graph as given (the reference) and under `n` random
permutations that keep it valid: a random topological order of the nodes (every reader still after
its writer) and a random order of the buffer list; the permutations are a pure function of
`seed`. Plans are compared as `compare.compare_plans` does (kernels as node sets, decisions as the
node sets they fused, with their scores); kernel names are positional, so they are not compared
here. `check_processes` runs `fuseopt optimize --format json` in fresh processes (importing this
process's fuseopt, see `fuseopt_command`) with different PYTHONHASHSEED values and requires
byte-identical plans (and generated kernels.py, when code generation exists in this build).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuseopt.aot.compare import Comparison, compare_plans
from fuseopt.aot.diff import node_orders
from fuseopt.ir.graph import Graph, Node
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan

DETERMINISM_FORMAT = "fuseopt-determinism/1"
LABELS = ("reference", "variant")
Tick = Callable[[], None]


def random_topological_order(graph: Graph, rng: random.Random) -> tuple[Node, ...]:
    """A uniformly chosen ready node at each step (Kahn's algorithm): any valid program order."""
    writer = graph.writer()
    index = {n.name: i for i, n in enumerate(graph.nodes)}
    preds: dict[str, set[str]] = {}
    succs: dict[str, list[str]] = {n.name: [] for n in graph.nodes}
    for n in graph.nodes:
        ps = {writer[b] for b in n.read_buffers() if b in writer and writer[b] != n.name}
        preds[n.name] = ps
        for p in sorted(ps, key=index.__getitem__):
            succs[p].append(n.name)
    ready = [n.name for n in graph.nodes if not preds[n.name]]
    out: list[Node] = []
    while ready:
        name = ready.pop(rng.randrange(len(ready)))
        out.append(graph.node(name))
        for s in succs[name]:
            preds[s].discard(name)
            if not preds[s]:
                ready.append(s)
        ready.sort(key=index.__getitem__)
    assert len(out) == len(graph.nodes), "program order had a cycle"
    return tuple(out)


def permuted(graph: Graph, rng: random.Random) -> Graph:
    nodes = random_topological_order(graph, rng)
    buffers = list(graph.buffers)
    rng.shuffle(buffers)
    return graph.replace(nodes=nodes, buffers=tuple(buffers))


def permutation_rng(seed: int, i: int) -> random.Random:
    return random.Random(seed * 1_000_003 + i)


@dataclass(frozen=True)
class VariantResult:
    label: str
    kind: str  # permutation | process
    ok: bool
    comparison: Comparison | None = None
    difference: str = ""  # for processes: the first differing line, or why the run failed
    node_order: tuple[str, ...] = ()
    buffer_order: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        if self.ok:
            return "same plan"
        cmp = self.comparison
        if cmp is not None and cmp.divergence is not None:
            d = cmp.divergence
            return f"decision {d.step} differs: {d.summary}"
        if cmp is not None and cmp.kernels_differ:
            return "different kernels"
        return self.difference

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "kind": self.kind, "ok": self.ok, "summary": self.summary}
        if self.node_order:
            out["node_order"] = list(self.node_order)
            out["buffer_order"] = list(self.buffer_order)
        if self.comparison is not None and not self.ok:
            out["comparison"] = self.comparison.to_json(LABELS)
        if self.difference:
            out["difference"] = self.difference
        return out


@dataclass(frozen=True)
class DeterminismReport:
    graph: str
    options: dict[str, Any]
    seed: int
    reference: Plan
    variants: tuple[VariantResult, ...]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.variants)

    @property
    def first_failure(self) -> VariantResult | None:
        return next((v for v in self.variants if not v.ok), None)

    def to_json(self) -> dict[str, Any]:
        first = self.first_failure
        return {
            "format": DETERMINISM_FORMAT,
            "graph": self.graph,
            "options": self.options,
            "seed": self.seed,
            "deterministic": self.ok,
            "first_difference": first.label if first is not None else None,
            "variants": [v.to_json() for v in self.variants],
        }


def _same(cmp: Comparison) -> bool:
    return not cmp.kernels_differ and cmp.divergence is None


def compare_variant(reference_graph: Graph, reference: Plan, variant: Graph, opts: Options) -> Comparison:
    plan = optimize(variant, opts).plan
    orders = None
    if opts.scoring == "inductor":
        orders = (node_orders(reference_graph, opts), node_orders(variant, opts))
    return compare_plans(reference, plan, orders=orders, labels=LABELS)


def check_permutations(
    graph: Graph, opts: Options, n: int, seed: int, tick: Tick | None = None, *, stop_early: bool = False
) -> tuple[Plan, list[VariantResult]]:
    reference = optimize(graph, opts).plan
    out: list[VariantResult] = []
    for i in range(n):
        g = permuted(graph, permutation_rng(seed, i))
        orders = (tuple(x.name for x in g.nodes), tuple(b.name for b in g.buffers))
        try:
            cmp = compare_variant(graph, reference, g, opts)
        except Exception as exc:  # the reference planned fine: a crash here is a finding
            out.append(VariantResult(f"permutation {i}", "permutation", False, None, _crash(exc), *orders))
        else:
            out.append(VariantResult(f"permutation {i}", "permutation", _same(cmp), cmp, "", *orders))
        if tick is not None:
            tick()
        if stop_early and not out[-1].ok:
            break
    return reference, out


def _crash(exc: Exception) -> str:
    """'planning raised AssertionError (fuseopt/passes/legality.py:235 in _library_rule): ...'."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = ""
    if tb:
        frame = tb[-1]
        where = f" ({Path(frame.filename).name}:{frame.lineno} in {frame.name})"
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"planning raised {type(exc).__name__}{where}" + (f": {msg}" if msg else "")


def _first_line_difference(a: str, b: str, what: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end of file>"
        y = lb[i] if i < len(lb) else "<end of file>"
        if x != y:
            return f"{what} line {i + 1}: {x.strip()!r} vs {y.strip()!r}"
    return f"{what} differs"


# A child started as `python -m fuseopt` imports whatever `fuseopt/` its working directory holds
# (sys.path[0] is the cwd), which need not be this one; Python 3.10 has no -P. The bootstrap drops
# -c's cwd entry and puts the directory holding this process's `fuseopt` package first.
_BOOTSTRAP = """\
import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
sys.path.insert(0, sys.argv[1])
from fuseopt.cli.main import main
main(sys.argv[2:])
"""


def fuseopt_command(*args: str) -> list[str]:
    """argv that runs `fuseopt ARGS...` in a fresh interpreter on the same fuseopt as this process,
    whatever the child's working directory holds."""
    import fuseopt

    root = os.path.dirname(os.path.dirname(os.path.abspath(fuseopt.__file__)))
    return [sys.executable, "-c", _BOOTSTRAP, root, *args]


def optimize_command(path: str, opts: Options, out_dir: str) -> list[str]:
    cmd = fuseopt_command("optimize", path, "--format", "json", "-o", out_dir)
    cmd += ["--scoring", opts.scoring, "--max-fusion-size", str(opts.max_fusion_size)]
    if not opts.loop_order:
        cmd.append("--no-loop-order")
    return cmd


def check_processes(
    path: str,
    opts: Options,
    reference_json: str,
    hash_seeds: Sequence[int],
    tick: Tick | None = None,
    timeout: float = 600.0,
) -> list[VariantResult]:
    """Plan the file at `path` in one fresh process per PYTHONHASHSEED value, in parallel.

    Each plan must equal `reference_json` byte for byte; each kernels.py (written when this build
    has code generation) must equal the first process's.
    """
    results: list[VariantResult] = []
    reference_source: str | None = None
    with tempfile.TemporaryDirectory(prefix="fuseopt-determinism-") as tmp:
        procs = []
        for s in hash_seeds:
            out_dir = str(Path(tmp) / f"seed{s}")
            env = {**os.environ, "PYTHONHASHSEED": str(s)}
            procs.append(
                (
                    s,
                    out_dir,
                    subprocess.Popen(
                        optimize_command(path, opts, out_dir),
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        env=env,
                    ),
                )
            )
        for s, out_dir, proc in procs:
            label = f"PYTHONHASHSEED={s}"
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                results.append(
                    VariantResult(label, "process", False, difference=f"timed out after {timeout:.0f} s")
                )
                continue
            if tick is not None:
                tick()
            if proc.returncode != 0:
                tail = stderr.strip().splitlines()[-1:] or ["(no output)"]
                results.append(
                    VariantResult(label, "process", False, difference=f"exit {proc.returncode}: {tail[0]}")
                )
                continue
            if stdout != reference_json:
                results.append(
                    VariantResult(
                        label,
                        "process",
                        False,
                        difference=_first_line_difference(reference_json, stdout, "plan"),
                    )
                )
                continue
            src_path = Path(out_dir) / "kernels.py"
            if src_path.exists():
                src = src_path.read_text(encoding="utf-8")
                if reference_source is None:
                    reference_source = src
                elif src != reference_source:
                    results.append(
                        VariantResult(
                            label,
                            "process",
                            False,
                            difference=_first_line_difference(reference_source, src, "kernels.py"),
                        )
                    )
                    continue
            results.append(VariantResult(label, "process", True))
    return results


def codegen_available() -> bool:
    """Whether this build emits Triton (then process runs compare kernels.py too)."""
    try:
        from fuseopt.codegen.triton import emit_module  # noqa: F401
    except ImportError:
        return False
    return True
