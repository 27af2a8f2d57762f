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
from tests.test_codegen_samples import NAMES, PATHS, name_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Emits every sample (unfused, planner-fused if the planner is there, autotuned) and prints one
# digest of all of it.
_SCRIPT = """
import glob, hashlib, os, sys
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_graph
from tests.strategies import unfused_plan
try:
    from fuseopt.passes.pipeline import optimize
except ImportError:
    optimize = None
h = hashlib.sha256()
for path in sys.argv[1:]:
    g = load_graph(path)
    h.update(emit_module(g, unfused_plan(g)).encode())
    h.update(emit_module(g, unfused_plan(g), autotune=True).encode())
    if optimize is not None:
        st = optimize(g)
        h.update(emit_module(st.graph, st.plan).encode())
print(h.hexdigest())
"""


@pytest.mark.parametrize("name", NAMES)
def test_same_text_twice(name: str) -> None:
    g = load_graph(next(p for p in PATHS if name_of(p) == name))
    plan = unfused_plan(g)
    assert emit_module(g, plan) == emit_module(g, plan)
    assert emit_module(g, plan, autotune=True) == emit_module(g, plan, autotune=True)


def test_same_text_across_hash_seeds() -> None:
    digests = set()
    for seed in ("0", "1", "2"):
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
    assert len(digests) == 1, digests
    local = hashlib.sha256()
    assert len(next(iter(digests))) == len(local.hexdigest())
