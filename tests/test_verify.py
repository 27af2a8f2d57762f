"""The plan invariant checker (`passes/verify.py`)."""

from __future__ import annotations

from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.passes.verify import check
from fuseopt.plan import Kernel, Plan
from tests.planning import ROOT, load


def test_verify_catches_broken_plans() -> None:
    g = load(f"{ROOT}/samples/apbt.yaml")
    st = optimize(g, Options(loop_order=False))
    good = st.plan
    assert check(st.graph, good) == []
    # n1 and n2 index buf1 differently: putting them in one kernel must be caught.
    bad_kernels = (Kernel("k0", ("n0", "n1", "n2"), "pointwise", (), (), 0),)
    problems = check(st.graph, Plan(good.graph, good.graph_sha256, bad_kernels))
    assert any("buf1" in p for p in problems)
    # A node missing, and a node in two kernels.
    assert any(
        "no kernel" in p
        for p in check(st.graph, Plan("g", "", (Kernel("k0", ("n0",), "pointwise", (), (), 0),)))
    )
    dup = (
        Kernel("k0", ("n0", "n1"), "pointwise", (), (), 0),
        Kernel("k1", ("n1", "n2"), "pointwise", (), (), 0),
    )
    assert any("two" in p or "kernels k0 and k1" in p for p in check(st.graph, Plan("g", "", dup)))
    # Consumers before producers: the kernel graph is not in a valid order.
    rev = (
        Kernel("k0", ("n2",), "pointwise", (), (), 0),
        Kernel("k1", ("n0",), "pointwise", (), (), 0),
        Kernel("k2", ("n1",), "pointwise", (), (), 0),
    )
    assert any("cycle" in p for p in check(st.graph, Plan("g", "", rev)))
