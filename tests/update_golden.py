"""Regenerate the golden files after a deliberate planner or code generation change:

    python tests/update_golden.py            # the golden plans (or: python -m tests.update_golden)
    python tests/update_golden.py --kernels  # the golden kernel checks

Plans: writes tests/golden/<sample>.<mode>.json for every sample (modes: stable, inductor, off),
exactly as `fuseopt optimize SAMPLE --format json [--scoring inductor | --no-loop-order]` prints them.
Kernels: for every tests/golden/kernels/<name>.json, writes <name>.check next to it, the check
lines that tests/kernel_checks.py derives from the module `fuseopt optimize --emit triton` writes.
Review the diff before committing it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

if __name__ == "__main__" and not __package__:  # run as a file: import `tests` from the checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuseopt.codegen import emit_module  # noqa: E402
from fuseopt.io.load import load_graph  # noqa: E402
from fuseopt.passes.options import Options  # noqa: E402
from fuseopt.passes.pipeline import Stage, optimize  # noqa: E402
from tests.kernel_checks import render as render_checks  # noqa: E402
from tests.planning import ROOT, sample_name, sample_paths  # noqa: E402

GOLDEN = os.path.join(ROOT, "tests", "golden")
KERNELS = os.path.join(GOLDEN, "kernels")
MODES = {"stable": Options(), "inductor": Options(scoring="inductor"), "off": Options(loop_order=False)}


def golden_path(sample: str, mode: str) -> str:
    return os.path.join(GOLDEN, f"{sample}.{mode}.json")


def render(path: str, mode: str) -> str:
    return (
        json.dumps(optimize(load_graph(path), MODES[mode]).plan.to_json(), indent=2, ensure_ascii=False)
        + "\n"
    )


# -- golden kernels -------------------------------------------------------------------------------
def kernel_graphs() -> list[str]:
    """The graphs of the golden kernels, by path."""
    return sorted(glob.glob(os.path.join(KERNELS, "*.json")))


def check_path(graph_path: str) -> str:
    return os.path.splitext(graph_path)[0] + ".check"


def planned(graph_path: str) -> Stage:
    """The graph planned as `fuseopt optimize` plans it (default options)."""
    return optimize(load_graph(graph_path))


def kernel_source(graph_path: str) -> str:
    """The module `fuseopt optimize GRAPH -o DIR` writes to DIR/kernels.py (default options)."""
    stage = planned(graph_path)
    return emit_module(stage.graph, stage.plan)


def render_kernel_checks(graph_path: str) -> str:
    name = os.path.splitext(os.path.basename(graph_path))[0]
    with open(graph_path, encoding="utf-8") as f:
        description = json.load(f).get("description", "")
    title = [
        f"{name}: {description}" if description else name,
        "Derived from the generated module by `python tests/update_golden.py --kernels` (rules:",
        "tests/kernel_checks.py); review the diff, do not edit by hand.",
        "",
    ]
    return render_checks(kernel_source(graph_path), title)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Regenerate the golden plans, or the golden kernel checks.")
    parser.add_argument("--kernels", action="store_true", help="write the golden kernel checks instead")
    args = parser.parse_args(argv)
    if args.kernels:
        for path in kernel_graphs():
            with open(check_path(path), "w", encoding="utf-8") as f:
                f.write(render_kernel_checks(path))
        print(f"wrote golden kernel checks to {KERNELS}")
        return
    os.makedirs(GOLDEN, exist_ok=True)
    for path in sample_paths():
        for mode in MODES:
            with open(golden_path(sample_name(path), mode), "w", encoding="utf-8") as f:
                f.write(render(path, mode))
    print(f"wrote golden plans to {GOLDEN}")


if __name__ == "__main__":
    main()
