"""Golden kernels: the module generated for every graph in tests/golden/kernels/ passes the
FileCheck-style check file next to it (tests/filecheck.py), and the small graphs' modules compute
what the reference interpreter computes (TRITON_INTERPRET=1 on CPU).

The checks hold each kernel's structure (strategy, grid shape, loops and reductions, along which
axis every load and store is contiguous, masks, eviction hints), not its text nor its tuning.
After a deliberate change to code generation, regenerate them and review the diff:

    python tests/update_golden.py --kernels

Graphs named `*_full` (the benchmark workloads at their tuned sizes, and shapes too large for the
interpreter) are generated and checked, never run.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.filecheck import FileCheckError
from tests.filecheck import check as filecheck
from tests.kernel_checks import abstract, index_pattern, render
from tests.strategies import check as run_against_reference
from tests.update_golden import KERNELS, ROOT, check_path, kernel_graphs, kernel_source, planned

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on NaN/inf lanes

GENERATE_ONLY = "_full"  # name suffix of the graphs that are too large to run
PATHS = kernel_graphs()


def name_of(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def test_every_graph_has_its_check_file() -> None:
    graphs = {name_of(p) for p in PATHS}
    checks = {name_of(p) for p in os.listdir(KERNELS) if p.endswith(".check")}
    assert len(graphs) >= 30 and graphs == checks, (
        f"graphs without checks: {sorted(graphs - checks)}, checks without graphs: {sorted(checks - graphs)}"
    )


@pytest.mark.parametrize("path", PATHS, ids=name_of)
def test_kernels_match_their_checks(path: str) -> None:
    with open(check_path(path), encoding="utf-8") as f:
        checks = f.read()
    source = kernel_source(path)
    try:
        filecheck(
            checks,
            source,
            checks_name=os.path.relpath(check_path(path), ROOT),
            input_name=f"{name_of(path)}.py",
        )
    except FileCheckError as e:
        raise FileCheckError(
            f"{e}\nif the change is deliberate: python tests/update_golden.py --kernels"
        ) from None
    filecheck(render(source, [name_of(path)]), source)  # the rules hold on the code they read


def test_index_patterns_name_the_unit_stride_term() -> None:
    """A load's check says along which axis it is contiguous: a bare name among the index's terms
    (an axis index before a digit, a digit before a temporary), whatever else the sum holds."""
    cases = {  # index: (its unit-stride term, {another index: whether the check accepts it})
        "(8192 * yindex + xindex)": ("xindex", {"(xindex + 8192 * yindex)": True, "(xindex - 3)": True}),
        "(xindex + 32768 * r0_index)": ("xindex", {"(4 * r0_index + xindex + 3)": True, "2 * xindex": False}),
        "flat_y_x - 6912": ("flat_y_x", {"flat_y_x": True, "(flat_y_x + 96)": True, "(2 * flat_y_x)": False}),
        "(16 * tmp0 + xindex)": ("xindex", {"(xindex + 16 * tmp3)": True, "(xindex * 16 + tmp0)": False}),
        "(64 * x1 + x0)": ("x[0-9]+", {"(x3 + 64 * x1)": True, "(64 * x1 + y0)": False}),
        "tmp3": ("[a-z0-9_]+", {"tmp12": True, "(2 * tmp3)": False}),
    }
    for index, (term, others) in cases.items():
        pattern = index_pattern(index)
        assert pattern.startswith("{{") and term in pattern, (index, pattern)
        body = re.compile(pattern[2:-2])
        assert body.fullmatch(index), (index, pattern)
        for other, want in others.items():
            assert bool(body.fullmatch(other)) == want, (index, other)
    # no term of unit stride: the index as it is, a temporary abstracted
    assert index_pattern("2 * xindex") == "2 * xindex"
    assert index_pattern("tl.full([XBLOCK], 3, tl.int32)") == "tl.full([XBLOCK], 3, tl.int32)"
    assert (
        abstract("tmp7 = x2 + 6912 * _acc0_index + 1")
        == "{{[a-z0-9_]+}} = x{{[0-9]+}} + {{[0-9]+}} * {{[a-z0-9_]+}} + 1"
    )


@pytest.mark.parametrize("path", [p for p in PATHS if not name_of(p).endswith(GENERATE_ONLY)], ids=name_of)
def test_small_kernels_match_the_reference(path: str) -> None:
    stage = planned(path)
    run_against_reference(stage.graph, stage.plan)
