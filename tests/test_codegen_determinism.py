"""Generated modules are byte-identical for the same graph and plan: twice in one process, and
across interpreter processes with different PYTHONHASHSEED values (set iteration never reaches
the output)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from fuseopt.codegen import emit_module
from fuseopt.io.load import load_graph
from tests.strategies import unfused_plan
from tests.sweeps import FULL
from tests.test_codegen_samples import NAMES, PATHS, name_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Emits every sample (unfused, autotuned, planner-fused) and prints one digest of all of it.
_SCRIPT = "import sys; from tests.test_codegen_determinism import digest; print(digest(sys.argv[1:]))"


def digest(paths: list[str]) -> str:
    from fuseopt.passes.pipeline import optimize

    h = hashlib.sha256()
    for path in paths:
        g = load_graph(path)
        h.update(emit_module(g, unfused_plan(g)).encode())
        h.update(emit_module(g, unfused_plan(g), autotune=True).encode())
        st = optimize(g)
        h.update(emit_module(st.graph, st.plan).encode())
    return h.hexdigest()


@pytest.mark.parametrize("name", NAMES)
def test_same_text_twice(name: str) -> None:
    g = load_graph(next(p for p in PATHS if name_of(p) == name))
    plan = unfused_plan(g)
    assert emit_module(g, plan) == emit_module(g, plan)
    assert emit_module(g, plan, autotune=True) == emit_module(g, plan, autotune=True)


def test_same_text_across_hash_seeds() -> None:
    digests = set()
    for seed in ("0", "1", "2") if FULL else ("1",):  # and this process's own (random) seed below
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT, *PATHS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(out.stdout.strip())
    digests.add(digest(PATHS))  # this process, under pytest's own (random) hash seed
    assert len(digests) == 1, digests
