"""Regenerate the golden plans after a deliberate planner change:

    python -m tests.update_golden

Writes tests/golden/<sample>.<mode>.json for every sample (modes: stable, inductor, off), exactly
as `fuseopt optimize SAMPLE --format json [--scoring inductor | --no-loop-order]` prints them.
Review the diff before committing it.
"""

from __future__ import annotations

import json
import os

from fuseopt.io.load import load_graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from tests.planning import ROOT, sample_name, sample_paths

GOLDEN = os.path.join(ROOT, "tests", "golden")
MODES = {"stable": Options(), "inductor": Options(scoring="inductor"), "off": Options(loop_order=False)}


def golden_path(sample: str, mode: str) -> str:
    return os.path.join(GOLDEN, f"{sample}.{mode}.json")


def render(path: str, mode: str) -> str:
    return (
        json.dumps(optimize(load_graph(path), MODES[mode]).plan.to_json(), indent=2, ensure_ascii=False)
        + "\n"
    )


def main() -> None:
    os.makedirs(GOLDEN, exist_ok=True)
    for path in sample_paths():
        for mode in MODES:
            with open(golden_path(sample_name(path), mode), "w", encoding="utf-8") as f:
                f.write(render(path, mode))
    print(f"wrote golden plans to {GOLDEN}")


if __name__ == "__main__":
    main()
