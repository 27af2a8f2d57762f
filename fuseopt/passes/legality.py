"""Can two groups share a kernel? The checks, in Inductor's order, each with a reason code.

`check_fusion` returns a `Verdict`: ok, or the first failing condition as a reason code (README,
"Reason codes") and a detail with the concrete values. Rules (from Inductor's `can_fuse`, its
Triton backend and `can_fuse_vertical`), first failing wins:

  extern            an extern node never fuses; a template only takes a pointwise epilogue that
                    reads its output, and only with epilogue_fusion: true
  no_shared_data /  the pair shares less than `memory_threshold` bytes of equal dependencies;
  index_mismatch    index_mismatch when it shares a buffer but indexes it differently
  too_large         more than max_fusion_size nodes
  peak_memory       single-use inputs kept alive (elements, as Inductor counts them) exceed
                    peak_memory_factor x the bytes saved
  index_mismatch    vertical: a read of the producer's output is not the element it writes at the
                    same point of the fused kernel (`access_match.match_read`)
  would_create_cycle  a path producer -> other kernel -> consumer exists
  too_far           horizontal, inductor mode: more than max_distance apart in the node list
  size_mismatch / reduction_mismatch   the iteration spaces cannot share one kernel

While the planner searches (`state.detailed` off) a pair within the size cap that closes a cycle
is refused for it before the costlier rules: the same pairs are refused and accepted, and the
reasons a plan reports are asked of its final kernels in full.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fuseopt.analysis.access_match import Space, match_read
from fuseopt.analysis.deps import Dep, StarDep, canonical_dep, dep_bytes
from fuseopt.analysis.shapes import split_loops
from fuseopt.ir.expr import Load
from fuseopt.ir.graph import ComputeNode, LibraryNode
from fuseopt.passes.fusion_state import FusionState, Group
from fuseopt.passes.options import Options

# Failures a loop transformation (the loop-order pass) may cure.
REORDER_REASONS = frozenset({"index_mismatch", "no_shared_data", "size_mismatch"})


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    reason: str = ""
    detail: str = ""
    kind: str = ""  # vertical | horizontal | reduction-inner | reduction-epilogue | template-epilogue
    memory: int = 0  # shared bytes (Inductor's memory score)
    nodes: tuple[str, str] | None = None  # the two member nodes the reason is about, when known
    intrinsic: bool = False  # depends only on the two groups (cacheable), not on the rest of the state

    @staticmethod
    def no(
        reason: str,
        detail: str,
        memory: int = 0,
        nodes: tuple[str, str] | None = None,
        intrinsic: bool = False,
    ) -> Verdict:
        return Verdict(False, reason, detail, memory=memory, nodes=nodes, intrinsic=intrinsic)


def _label(g: Group) -> str:
    head = g.min_name  # names, not list positions, so details read the same in any order
    return head if len(g.members) == 1 else f"{head}(+{len(g.members) - 1})"


def shared_memory_bytes(state: FusionState, g1: Group, g2: Group) -> int:
    """Inductor's score_fusion_memory: bytes of dependencies present, exactly equal, in both."""
    if g1.is_library or g2.is_library:
        # Templates: name-based matching (Inductor falls back to it for template nodes).
        names1 = {d.buffer for d in (*g1.reads, *g1.writes)}
        total = 0
        for d in (*g2.reads, *g2.writes):
            if d.buffer in names1:
                total += dep_bytes(_whole(d), state.graph)
        return total
    small, big = (g1, g2) if len(g1.reads) + len(g1.writes) <= len(g2.reads) + len(g2.writes) else (g2, g1)
    total = 0
    sizes = state.dep_bytes
    for part in (small.reads, small.writes):
        for d in part:
            if d in big.reads or d in big.writes:
                n = sizes.get(d)
                if n is None:
                    n = sizes[d] = dep_bytes(d, state.graph)
                total += n
    return total


def _whole(d: Dep) -> Dep:
    return StarDep(d.buffer)


def _member_with(state: FusionState, g: Group, dep: Dep) -> str:
    """The (alphabetically first) member of g with this dependency."""
    deps = state.deps
    found = [m for m in g.members if dep in deps[m].all]
    return min(found) if found else state.label(g)


def _shared_buffer_mismatch(state: FusionState, g1: Group, g2: Group, intrinsic: bool) -> Verdict | None:
    """A buffer both use with different indices: an index_mismatch naming both accesses."""
    by_buffer: dict[str, list[Dep]] = {}
    for d2 in (*g2.reads, *g2.writes):
        by_buffer.setdefault(d2.buffer, []).append(d2)
    # The least mismatching pair by (buffer, accesses), not the first met: the groups' dependency
    # lists are in fusion order, which the order of the search decides.
    found = [
        (d1.buffer, d1.text(), d2.text(), d1, d2)
        for d1 in (*g1.writes, *g1.reads)
        for d2 in by_buffer.get(d1.buffer, ())
        if d1 != d2
    ]
    if not found:
        return None
    _, _, _, d1, d2 = min(found, key=lambda f: f[:3])
    n1, n2 = _member_with(state, g1, d1), _member_with(state, g2, d2)
    verb1 = "writes" if d1 in g1.writes else "reads"
    verb2 = "writes" if d2 in g2.writes else "reads"
    return Verdict.no(
        "index_mismatch",
        f"{d1.buffer}: {n1} {verb1} {d1.text()}, {n2} {verb2} {d2.text()}",
        nodes=(n1, n2),
        intrinsic=intrinsic,
    )


def check_fusion(state: FusionState, g1: Group, g2: Group, opts: Options) -> Verdict:
    """Can g1 and g2 become one kernel? (Either order; the earlier group is the producer side.)

    Verdicts are cached until either group changes: a rejection that depends only on the two
    groups (`intrinsic`) as it is, a cycle, and an acceptance with its cycle check redone --
    fusions elsewhere only ever add paths (contracting two groups keeps every path through
    either), so a cycle stays a cycle, and a new path between the two is the one thing that can
    turn an accepted pair into a rejected one.
    """
    if g1.gid == g2.gid:
        return Verdict.no("same_kernel", "already in one kernel")
    lo, hi = (g1, g2) if g1.gid < g2.gid else (g2, g1)
    versions = (state.version[lo.gid], state.version[hi.gid])
    entry = state.verdicts.get((lo.gid, hi.gid))
    if entry is not None and entry[0] == versions:
        cached = entry[1]
        if cached.ok and state.would_create_cycle(g1, g2):
            return _cycle_verdict(state, g1, g2, cached.memory) if state.detailed else _SEARCH_CYCLE
        return cached
    # `state.before`, keeping whether the first reaches the second (asked by several rules)
    reaches = state.reach.reaches
    if reaches(g2.gid, g1.gid):
        g1, g2 = g2, g1
        forward = True
    else:
        forward = reaches(g1.gid, g2.gid)
        if not forward and (state.label(g2) < state.label(g1) if state.by_name else g2.gid < g1.gid):
            g1, g2 = g2, g1
    v = _check(state, g1, g2, opts, forward)
    if v.intrinsic or v.ok or v.reason == "would_create_cycle":
        # one entry per pair of groups, for their latest versions (a pair's older verdicts are
        # never asked for again, or recomputed alike after a rolled-back transformation)
        state.verdicts[(lo.gid, hi.gid)] = (versions, v)
    return v


# The search's cycle verdict: its detail is never shown (the plan asks the final kernels again).
_SEARCH_CYCLE = Verdict.no("would_create_cycle", "a path through another kernel")


def _cycle_verdict(
    state: FusionState, g1: Group, g2: Group, memory: int, *, ordered: bool = False
) -> Verdict:
    """The cycle's verdict, g1 and g2 in path order (`ordered`: the caller knows g1 goes first)."""
    if not ordered and state.is_ancestor(g2, g1):
        g1, g2 = g2, g1
    via = state.path_via(g1, g2) if state.detailed else []
    return Verdict.no(
        "would_create_cycle",
        f"path {_label(g1)} -> {' -> '.join(via) or '...'} -> {_label(g2)} through another kernel",
        memory,
    )


def _check(state: FusionState, g1: Group, g2: Group, opts: Options, forward: bool) -> Verdict:
    """The rules for g1 before g2; `forward`: g1 reaches g2."""
    if g1.kind != "pointwise" or g2.kind != "pointwise" or g1.numel != g2.numel:
        lib = _library_rule(state, g1, g2)
        if lib is not None:
            return lib
        sizes = _numel_rule(g1, g2)
        if sizes is not None:
            return sizes
    # While the search runs, a pair that closes a cycle is refused as one before the costly
    # rules: whichever rule fails first, the pair is refused, no loop transformation can cure a
    # cycle, and the reason a plan reports is asked again of the final kernels. Only the size cap
    # comes first (a pair refused for it makes the planner pack the cap).
    search = not state.detailed and len(g1.members) + len(g2.members) <= opts.max_fusion_size
    if search and forward and state.closes_cycle(g1, g2):
        return _SEARCH_CYCLE

    v = _pair_rules(state, g1, g2, opts, forward)
    if v.ok and forward and state.closes_cycle(g1, g2):
        return _cycle_verdict(state, g1, g2, v.memory, ordered=True)
    return v


def _pair_rules(state: FusionState, g1: Group, g2: Group, opts: Options, forward: bool) -> Verdict:
    """The rules that ask nothing of the state but the two groups' nodes (and, for inductor
    scoring, their distance in the node list): remembered by those nodes across the plans of a
    fusion pass when it shares them (`FusionState.shared_verdicts`)."""
    shared = state.shared_verdicts
    if shared is None or opts.scoring == "inductor":
        return _pair_rules_of(state, g1, g2, opts, forward)
    ids1, nodes1 = state.content(g1)
    ids2, nodes2 = state.content(g2)
    key = (ids1, ids2, forward, state.detailed, opts)
    hit = shared.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], (*nodes1, *nodes2), strict=True)):
        hit = shared[key] = ((*nodes1, *nodes2), _pair_rules_of(state, g1, g2, opts, forward))
    verdict: Verdict = hit[1]
    return verdict


def _pair_rules_of(state: FusionState, g1: Group, g2: Group, opts: Options, forward: bool) -> Verdict:
    memory = shared_memory_bytes(state, g1, g2)
    if memory == 0 or memory < opts.memory_threshold and not forward:
        mismatch = _shared_buffer_mismatch(state, g1, g2, intrinsic=memory == 0)
        if mismatch is None:
            mismatch = Verdict.no(
                "no_shared_data",
                f"{_label(g1)} and {_label(g2)} share {memory} bytes of equal accesses",
                intrinsic=memory == 0,
            )
        return mismatch

    size = len(g1.members) + len(g2.members)
    if size > opts.max_fusion_size:
        return Verdict.no(
            "too_large",
            f"{size} nodes would exceed --max-fusion-size {opts.max_fusion_size}",
            memory,
            intrinsic=True,
        )
    peak = _peak_memory_overhead(state, g1, g2, opts)
    if peak is not None and peak > opts.peak_memory_factor * memory:
        return Verdict.no(
            "peak_memory",
            f"single-use inputs kept alive: {peak} elements vs {opts.peak_memory_factor} x {memory} bytes saved",
            memory,
        )

    vertical = forward
    if vertical:
        v = _vertical_rule(state, g1, g2)
        if v is not None:
            return replace(v, memory=memory)
    elif opts.scoring == "inductor":
        distance = max(abs(g1.min_order - g2.max_order), abs(g2.min_order - g1.max_order))
        if distance > opts.max_distance:
            return Verdict.no(
                "too_far", f"{distance} apart in the node list (limit {opts.max_distance})", memory
            )
    shape = _shape_rule(state, g1, g2)
    if isinstance(shape, Verdict):
        return replace(shape, memory=memory)
    kind = shape if shape else ("vertical" if vertical else "horizontal")
    return Verdict(True, kind=kind, memory=memory)


def _numel_rule(g1: Group, g2: Group) -> Verdict | None:
    """The cheap part of the backend rule: can these iteration sizes share a kernel at all?"""
    if g1.is_library or g2.is_library:
        return None
    if not g1.is_reduction and not g2.is_reduction:
        if g1.numel != g2.numel:
            return Verdict.no(
                "size_mismatch",
                f"numel {g1.numel} ({_label(g1)}) vs {g2.numel} ({_label(g2)})",
                intrinsic=True,
            )
        return None
    if g1.is_reduction and g2.is_reduction:
        if (g1.numel, g1.rnumel) != (g2.numel, g2.rnumel):
            return Verdict.no(
                "reduction_mismatch",
                f"(numel, rnumel) ({g1.numel}, {g1.rnumel}) of {_label(g1)} vs ({g2.numel}, {g2.rnumel}) of {_label(g2)}",
                intrinsic=True,
            )
        return None
    red, pw = (g1, g2) if g1.is_reduction else (g2, g1)
    if pw.numel not in (red.numel, red.numel * red.rnumel):
        return Verdict.no(
            "size_mismatch",
            f"pointwise numel {pw.numel} ({_label(pw)}) is neither numel {red.numel} nor numel*rnumel "
            f"{red.numel * red.rnumel} of reduction {_label(red)}",
            intrinsic=True,
        )
    return None


def _library_rule(state: FusionState, g1: Group, g2: Group) -> Verdict | None:
    if "extern" in (g1.kind, g2.kind):
        ext = g1 if g1.kind == "extern" else g2
        return Verdict.no(
            "extern", f"{_label(ext)} is an extern library call; extern nodes never fuse", intrinsic=True
        )
    if g2.kind == "template":
        return Verdict.no(
            "extern", f"{_label(g2)} is a template; prologue fusion into templates is not supported"
        )
    if g1.kind != "template":
        return None
    tmpl = next(n for m in g1.members if isinstance(n := state.node(m), LibraryNode))
    if not tmpl.epilogue_fusion:
        return Verdict.no(
            "extern", f"template {tmpl.name} does not allow epilogue fusion (epilogue_fusion: false)"
        )
    if g2.kind != "pointwise":
        return Verdict.no(
            "extern",
            f"a template only takes pointwise epilogues; {_label(g2)} is a {g2.kind}",
            intrinsic=True,
        )
    if tmpl.output not in {d.buffer for d in g2.reads}:
        return Verdict.no(
            "extern", f"{_label(g2)} does not read the template's output {tmpl.output}", intrinsic=True
        )
    return None


def _vertical_rule(state: FusionState, g1: Group, g2: Group) -> Verdict | None:
    """Every read in g2 of a buffer g1 writes must address the element g1 writes at the same point
    of the fused kernel (`match_read`, the check the verifier and code generation make too)."""
    # A template's own output is read from memory by its epilogue (matched by name, as Inductor
    # does); reads of what the epilogue's compute members write are fused and checked like any.
    space = Space(g2.numel) if g1.kind == "template" else _fused_space(g1, g2)
    bad: dict[Dep, str] = {}
    memo = state.match_memo
    for producer, node, ld in _fused_reads(state, g1, g2):
        # a growing kernel asks about the same (producer, read) pairs again and again; nodes are
        # frozen and the entry keeps them alive, so identity names them
        key = (id(producer), id(node), id(ld), space.numel, space.rnumel)
        hit = memo.get(key)
        if hit is None or hit[0] is not producer or hit[1] is not node or hit[2] is not ld:
            hit = memo[key] = (producer, node, ld, match_read(producer, ld, node, space))
        m = hit[3]
        if not m.ok:
            dep = canonical_dep(ld.buffer, ld.index, (*node.loops, *node.reduce))
            bad[dep] = min(bad.get(dep, m.reason), m.reason)
    if not bad:
        return None
    writes_by_buf = {d.buffer: d for d in g1.writes}
    # The least failing read by (buffer, access), not the first met (fusion order decides that).
    rd = min(bad, key=lambda d: (d.buffer, d.text()))
    wd = writes_by_buf[rd.buffer]
    n1, n2 = _member_with(state, g1, wd), _member_with(state, g2, rd)
    how = "with an indirect index " if isinstance(rd, StarDep) else ""
    detail = f"{rd.buffer} written by {n1} as {wd.text()} but read by {n2} {how}as {rd.text()}"
    if rd == wd:  # the same dependency, and still not the same element at the same point
        detail += f": {bad[rd]}"
    return Verdict.no("index_mismatch", detail, nodes=(n1, n2), intrinsic=True)


def _fused_reads(state: FusionState, g1: Group, g2: Group) -> list[tuple[ComputeNode, ComputeNode, Load]]:
    """(producer in g1, reader in g2, load) for every load in g2 of a buffer g1 writes, found from
    the smaller group's side (so a growing kernel costs its new neighbour's size, not its own)."""
    out: list[tuple[ComputeNode, ComputeNode, Load]] = []
    if g2.gid not in g1.succ:  # no member of g2 reads what g1 writes
        return out
    if len(g2.members) <= len(g1.members):
        for m in g2.members:
            for ld in state.loads(m):
                w = state.writer.get(ld.buffer)
                if w is not None and state.group_of[w] == g1.gid and isinstance(state.node(w), ComputeNode):
                    out.append((_compute(state, w), _compute(state, m), ld))
        return out
    for w in g1.members:
        producer = state.node(w)
        if not isinstance(producer, ComputeNode):
            continue
        for r in state.users.get(producer.output, ()):
            if state.group_of[r] == g2.gid and isinstance(state.node(r), ComputeNode):
                out.extend(
                    (producer, _compute(state, r), ld)
                    for ld in state.loads(r)
                    if ld.buffer == producer.output
                )
    return out


def _compute(state: FusionState, name: str) -> ComputeNode:
    node = state.node(name)
    assert isinstance(node, ComputeNode)
    return node


def _fused_space(g1: Group, g2: Group) -> Space:
    """The iteration space of g1 and g2 as one kernel (the numel rule has already passed)."""
    red = g1 if g1.is_reduction else g2 if g2.is_reduction else None
    return Space(red.numel, red.rnumel) if red is not None else Space(g1.numel)


def _shape_rule(state: FusionState, g1: Group, g2: Group) -> Verdict | str | None:
    """Inductor's backend rule on (numel, rnumel). Returns a failing Verdict, a fusion kind, or None."""
    if g1.kind == "template":
        tmpl = next(n for m in g1.members if isinstance(n := state.node(m), LibraryNode))
        out = state.graph.buffer(tmpl.output)
        if g2.numel != out.numel:  # the epilogue runs over the template's output, point by point
            return Verdict.no(
                "size_mismatch",
                f"epilogue {_label(g2)} has numel {g2.numel}; template {tmpl.name}'s output "
                f"{tmpl.output} has {out.numel}",
            )
        return "template-epilogue"
    if not g1.is_reduction and not g2.is_reduction:
        if g1.numel != g2.numel:
            return Verdict.no(
                "size_mismatch", f"numel {g1.numel} ({_label(g1)}) vs {g2.numel} ({_label(g2)})"
            )
        return None
    if g1.is_reduction and g2.is_reduction:
        if (g1.numel, g1.rnumel) != (g2.numel, g2.rnumel):
            return Verdict.no(
                "reduction_mismatch",
                f"(numel, rnumel) ({g1.numel}, {g1.rnumel}) of {_label(g1)} vs ({g2.numel}, {g2.rnumel}) of {_label(g2)}",
            )
        return None
    red, pw = (g1, g2) if g1.is_reduction else (g2, g1)
    if pw.numel == red.numel * red.rnumel:
        for m in sorted(pw.members):  # the member named in the detail: by name, not fusion order
            node = state.node(m)
            assert isinstance(node, ComputeNode)
            if split_loops([lv.size for lv in node.loops], red.numel) is None:
                return Verdict.no(
                    "size_mismatch",
                    f"{m}'s loops {[lv.size for lv in node.loops]} do not split into the reduction's "
                    f"(numel {red.numel}, rnumel {red.rnumel})",
                    intrinsic=True,
                )
        return "reduction-inner"
    if pw.numel == red.numel:
        # A pointwise node over the reduced size runs after the reduction loop: it must not feed it.
        if pw is g1 and state.is_ancestor(g1, g2):
            return Verdict.no(
                "reduction_mismatch",
                f"{_label(pw)} (numel {pw.numel}) feeds reduction {_label(red)} but would run after its loop",
            )
        return "reduction-epilogue"
    return Verdict.no(
        "size_mismatch",
        f"pointwise numel {pw.numel} ({_label(pw)}) is neither numel {red.numel} nor numel*rnumel "
        f"{red.numel * red.rnumel} of reduction {_label(red)}",
    )


def _peak_memory_overhead(state: FusionState, g1: Group, g2: Group, opts: Options) -> int | None:
    """Inductor's can_fusion_increase_peak_memory: common reuse keys of single-use intermediate
    inputs, each counted as Inductor counts it, by its storage size in elements (the key's size),
    against the bytes the fusion saves."""
    k1, k2 = _single_use_keys(state, g1), _single_use_keys(state, g2)
    common = [k for k in k1 if k in k2]
    if not common:
        return None
    return sum(k1[k] for k in common)


def _single_use_keys(state: FusionState, g: Group) -> dict[tuple[str, int], int]:
    """Reuse keys (dtype, storage size) of the intermediate buffers g reads that have one reader,
    each with its storage size in elements."""
    cache_key = (g.gid, state.version[g.gid])
    hit = state.single_use_cache.get(cache_key)
    if hit is not None:
        return hit
    out: dict[tuple[str, int], int] = {}
    for d in g.reads:
        buf = state.graph.buffer(d.buffer)
        if buf.role == "input" or len(state.users.get(d.buffer, ())) != 1:
            continue
        out[(buf.dtype.value, buf.storage_size)] = buf.storage_size
    state.single_use_cache[cache_key] = out
    return out
