"""Fusion (`passes/fusion.py`): vertical, horizontal and reduction-aware fusion, extern and template
nodes, and planning work that stays linear in the graph."""

from __future__ import annotations

import pytest

from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from tests.planning import BUFS, ROOT, graph, load, plan


def test_apbt_matches_format_example() -> None:
    """docs/format.md's example: one kernel of 25165824 bytes; unfused 3 kernels, 58720256 bytes."""
    st = plan(load(f"{ROOT}/samples/apbt.yaml"))
    m = st.plan.metrics
    assert (m["kernels"], m["bytes"], m["unfused_kernels"], m["unfused_bytes"]) == (1, 25165824, 3, 58720256)
    off = plan(load(f"{ROOT}/samples/apbt.yaml"), loop_order=False).plan
    assert off.metrics["kernels"] == 2
    rej = {tuple(r.pair): r for r in off.rejected}
    assert rej[("n1", "n2")].reason == "index_mismatch"
    # The detail shows both indices.
    assert "buf1[c0] over [2097152]" in rej[("n1", "n2")].detail
    assert "buf1[c0 + 1024*c1] over [1024, 2048]" in rej[("n1", "n2")].detail


def test_vertical_horizontal_and_reduction_epilogue() -> None:
    g = graph(
        """  - {name: p, loops: [[i, 8], [j, 16]], store: 'a[16*i + j]', value: 'x[16*i + j] * 2'}
  - {name: red, loops: [[i, 8]], reduce: [[k, 16]], store: 'r[i]', value: 'sum(a[16*i + k])'}
  - {name: epi, loops: [[i, 8], [j, 16]], store: 'o[16*i + j]', value: 'a[16*i + j] - r[i]'}
  - {name: sib, loops: [[i, 8], [j, 16]], store: 'o2[16*i + j]', value: 'tanh(x[16*i + j])'}
  - {name: col, loops: [[j, 16]], reduce: [[i, 8]], store: 's[j]', value: 'sum(x[16*i + j])'}""",
        BUFS.replace("  b: {shape: [8, 16], dtype: float32}\n", ""),
    )
    st = plan(g)
    k = st.plan.kernel_of("p")
    # p runs inside the reduction loop, epi after it (a second loop), sib shares x horizontally.
    assert set(k.nodes) >= {"p", "red", "epi", "sib"}
    kinds = {d.pair: d.kind for d in st.plan.decisions}
    assert "reduction-inner" in kinds.values()
    assert st.plan.kernel_of("col").name != k.name
    reasons = {r.reason for r in st.plan.rejected if "col" in r.pair}
    assert reasons and reasons <= {"no_shared_data", "size_mismatch", "reduction_mismatch", "index_mismatch"}


def test_extern_never_fuses_and_template_epilogue() -> None:
    st = plan(load(f"{ROOT}/samples/extern_mm.yaml"))
    ext = [r for r in st.plan.rejected if r.reason == "extern"]
    assert ext, "the extern mm and its epilogue must be a rejected pair with reason extern"
    g = load(f"{ROOT}/samples/jit_aot.yaml")
    st = plan(g)
    tmpl = [k for k in st.plan.kernels if k.kind == "template"]
    assert len(tmpl) == 1 and tmpl[0].nodes == ("buf3",)


def _chain(n: int) -> Graph:
    nodes = "\n".join(
        f"  - {{name: n{k}, loops: [[i, 4]], store: 't{k}[i]', value: '{f't{k - 1}' if k else 'x'}[i] + 1'}}"
        for k in range(n)
    )
    bufs = "\n".join(
        f"  t{k}: {{shape: [4], dtype: float32{', role: output' if k == n - 1 else ''}}}" for k in range(n)
    )
    return load_text(
        f"format: fuseopt-graph/1\nname: chain\nbuffers:\n  x: {{shape: [4], dtype: float32, role: input}}\n{bufs}\n"
        f"nodes:\n{nodes}\n",
        "chain.yaml",
    )


def _fan(n: int) -> Graph:
    nodes = "\n".join(
        f"  - {{name: n{k}, loops: [[i, 4]], store: 'o{k}[i]', value: 'x[i] * {k + 1}'}}" for k in range(n)
    )
    bufs = "\n".join(f"  o{k}: {{shape: [4], dtype: float32, role: output}}" for k in range(n))
    return load_text(
        f"format: fuseopt-graph/1\nname: fan\nbuffers:\n  x: {{shape: [4], dtype: float32, role: input}}\n{bufs}\n"
        f"nodes:\n{nodes}\n",
        "fan.yaml",
    )


@pytest.mark.slow  # graphs of growing size, each planned
@pytest.mark.parametrize("scoring", ["stable", "inductor"])
def test_planning_work_is_linear_in_chains_and_fans(scoring: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: legality checks stay within (pair window) per node and phase, and the
    reachability searches visit a bounded number of groups per fusion, for a long chain and for
    many users of one buffer (where every pair shares data and every group fuses)."""
    from fuseopt.passes import fusion, fusion_stable, reach

    checks = visits = 0
    check_fusion, search = fusion_stable.check_fusion, reach.Reach._search

    def counted_check(*args: object) -> object:
        nonlocal checks
        checks += 1
        return check_fusion(*args)  # type: ignore[arg-type]

    def counted_search(self: reach.Reach, *args: object, **kw: object) -> set[int]:
        nonlocal visits
        out = search(self, *args, **kw)  # type: ignore[arg-type]
        visits += 1 + len(out)
        return out

    monkeypatch.setattr(fusion_stable, "check_fusion", counted_check)
    monkeypatch.setattr(fusion, "check_fusion", counted_check)
    monkeypatch.setattr(reach.Reach, "_search", counted_search)
    window = 8
    for g, n in ((_chain(1500), 1500), (_fan(600), 600)):
        checks = visits = 0
        stage = optimize(g, Options(scoring=scoring, pair_window=window))
        assert len(stage.plan.kernels) <= n // 32
        assert checks <= 8 * window * n, checks
        assert visits <= 16 * n, visits
