"""Launch configurations per kind of tile: blocks and warps (1D, 2D, unrolled, persistent and
looped reductions), thread-block clusters, split reductions and their finishing kernel. Every
size comes from the target (`CodegenOptions.gpu`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from fuseopt.codegen.common import INT32_MAX, cdiv, next_power_of_2, prod
from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch, Placement, digits_of
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.expr import Binary, Expr, Reduce, Unary, Var, walk
from fuseopt.ir.graph import Graph


def x_contiguous(along: dict[str, int], ratio: int) -> bool:
    """Whether the tile reads or writes a large share of its data contiguously along x (an outer
    or transposed reduction), so that rows of x are worth widening.

    Each distinct access counts the elements it touches (a broadcast along x, such as a bias
    indexed by r, touches only its own few). An access contiguous along x moves XBLOCK elements
    per memory segment, so narrow tiles waste bandwidth on it; an access contiguous along r is
    indifferent to XBLOCK. So 1/`ratio` as many bytes along x as along r already decide
    (softmax_bias_t: the input along x, the output along r).
    """
    return along["xindex"] > 0 and ratio * along["xindex"] >= along["r0_index"]


def contiguous_bytes(graph: Graph, launch: ComputeLaunch) -> tuple[dict[str, int], int]:
    """Bytes the tile's distinct accesses touch, by the axis each is contiguous along (xindex,
    r0_index), and the smallest itemsize among those contiguous along x (0: none)."""
    sizes = {a.name: a.numel for a in launch.axes}
    seen: set[tuple[str, Expr]] = set()
    along = {"xindex": 0, "r0_index": 0}
    x_item = 0
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        digits = digits_of(p, sizes)
        for buf, index, _ in launch_accesses(graph, launch, p):
            d, _ = unit_digit(index, digits)  # None unless the index is affine in loop variables
            if d is None or d.div != 1 or d.base not in along or (buf, index) in seen:
                continue
            seen.add((buf, index))
            item = graph.buffer(buf).dtype.itemsize
            along[d.base] += _touched(index, p.node.var_sizes) * item
            if d.base == "xindex":
                x_item = min(x_item or item, item)
    return along, x_item


def read_bytes(graph: Graph, launch: ComputeLaunch) -> int:
    """The smallest itemsize among the tile's global reads (0: none): every loop of the kernel
    reads at least that much a point."""
    produced = launch.producer()
    return min(
        (
            graph.buffer(ld.buffer).dtype.itemsize
            for p in launch.placements
            if p.role in ("inner", "reduction")
            for ld in p.node.reads()
            if ld.buffer not in produced
        ),
        default=0,
    )


def _touched(index: Expr, var_sizes: dict[str, int]) -> int:
    """How many points an affine index of loop variables can touch: the product of their sizes."""
    return prod(var_sizes.get(atom.name, 1) for atom, _ in linear_form(index).coeffs if isinstance(atom, Var))


# Unary and binary functions that run on the special-function units (exp, log, sqrt, sin, ...).
_SFU_OPS = frozenset(
    {"exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh"}
    | {"sigmoid", "erf", "pow", "atan2"}
)


def sfu_per_point(launch: ComputeLaunch) -> bool:
    """Whether some point of the tile (not just a row of x) runs a special-function op: one whose
    operands vary along r (`exp(x[...r...] - max)` does; `rsqrt(var[x0] + eps)` does not)."""
    sizes = {a.name: a.numel for a in launch.axes}
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        per_point = {v for v, d in digits_of(p, sizes).items() if d is not None and d.base != "xindex"}
        for e in walk(p.node.value):
            sfu = isinstance(e, (Unary, Binary)) and e.op in _SFU_OPS
            if sfu and any(isinstance(v, Var) and v.name in per_point for v in walk(e)):
                return True
    return False


def cluster_pays(
    launch: ComputeLaunch, single: LaunchConfig, sfu: bool, x_item: int, o: CodegenOptions
) -> bool:
    """Whether a transposed persistent reduction gains from a cluster of programs over its
    single-program launch `single`, for one of two reasons:
    - `single` holds a multiprocessor alone (the most warps, `persistent_outer_per_thread`
      elements a thread) and the kernel does two or more reductions: the cluster's smaller
      programs overlap one's reductions with the other's loads;
    - every point runs a special function, which keeps `single` to fewer elements, and its run of
      a column (its rows x the itemsize) is shorter than a cache line: the programs together read
      whole lines.
    Otherwise the cluster only constrains scheduling (one reduction, or runs of a line or more:
    the single program wins)."""
    g, t = o.gpu, o.tuning
    threads = single.num_warps * g.warp_size
    xb, rb = single.block("XBLOCK"), single.block("R0_BLOCK")
    alone = single.num_warps >= t.max_warps and xb * rb >= t.persistent_outer_per_thread * threads
    if alone and sum(1 for p in launch.placements if p.role == "reduction") > 1:
        return True
    return sfu and 0 < xb * x_item < g.cache_line_bytes


def clustered_config(launch: ComputeLaunch, single: LaunchConfig, o: CodegenOptions) -> LaunchConfig | None:
    """A transposed persistent reduction's tile as a cluster of `cluster_size` programs of
    `cluster_warps` warps: `cluster_elements` elements (32 rows of 1024, 64 of 512, ...) split by
    rows. `cluster_pays` decides whether it replaces the single-program launch. None when
    clusters are off (or the GPU has none), or a program would get fewer than `cluster_min_rows`
    rows."""
    if not o.use_clusters:
        return None
    t = o.tuning
    rb = single.block("R0_BLOCK")
    xb = min(next_power_of_2(launch.axes[0].numel), t.max_xblock, max(1, t.cluster_elements // rb))
    if xb < t.cluster_min_rows * t.cluster_size:
        return None
    return LaunchConfig((("XBLOCK", xb), ("R0_BLOCK", rb)), t.cluster_warps, num_ctas=t.cluster_size)


def _warps(elements: int, per_warp: int, most: int) -> int:
    """One warp per `per_warp` elements, at least one and at most `most`."""
    return max(1, min(most, elements // per_warp))


def unique_configs(default: LaunchConfig, cands: list[LaunchConfig]) -> tuple[LaunchConfig, ...]:
    out = [default]
    for c in cands:
        if c not in out:
            out.append(c)
    return tuple(out)


def configs_1d(launch: ComputeLaunch, o: CodegenOptions) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    """XBLOCK up to `max_xblock` on one warp per `pointwise_points_per_warp` points, with fewer
    points a thread (halved, down to one) while a thread would hold more than
    `pointwise_loads_in_flight` loads (points x distinct loads a point: each holds a value, an
    address and a predicate in registers, so occupancy falls) or the launch would keep fewer
    than `pointwise_warps_per_multiprocessor` warps a multiprocessor (too few to hide latency)."""
    t = o.tuning
    numel = launch.axes[0].numel
    cap = next_power_of_2(numel)
    xb = min(cap, t.max_xblock)
    warps = _warps(xb, t.pointwise_points_per_warp, t.pointwise_max_warps)
    threads = warps * o.gpu.warp_size
    per_thread = _fewer_points(xb // threads, tile_loads(launch), t.pointwise_loads_in_flight, numel, warps, o)
    if per_thread:  # else a tile smaller than its threads (a tiny launch): as it is
        xb = per_thread * threads
    default = LaunchConfig((("XBLOCK", xb),), warps)
    cands = [
        LaunchConfig((("XBLOCK", min(cap, b)),), _warps(min(cap, b), t.pointwise_points_per_warp, w))
        for b, w in ((256, 2), (512, 4), (2048, 8))
    ]
    return default, unique_configs(default, cands)


def _fewer_points(per_thread: int, loads: int, limit: int, numel: int, warps: int, o: CodegenOptions) -> int:
    """Points a thread, halved (down to one) while a thread would hold more than `limit` loads
    (points x `loads` a point) or a launch of `numel` points would keep fewer than
    `pointwise_warps_per_multiprocessor` warps a multiprocessor."""
    threads = warps * o.gpu.warp_size
    fill = o.gpu.multiprocessors * o.tuning.pointwise_warps_per_multiprocessor
    while per_thread > 1 and (per_thread * loads > limit or cdiv(numel, per_thread * threads) * warps < fill):
        per_thread //= 2
    return per_thread


def configs_2d(launch: ComputeLaunch, o: CodegenOptions) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    t = o.tuning
    ycap, xcap = next_power_of_2(launch.axes[0].numel), next_power_of_2(launch.axes[1].numel)

    def cfg(yb: int, xb: int) -> LaunchConfig:
        yb, xb = min(ycap, yb), min(xcap, xb)
        return LaunchConfig(
            (("YBLOCK", yb), ("XBLOCK", xb)),
            _warps(yb * xb, t.transpose_points_per_warp, t.pointwise_max_warps),
        )

    default = cfg(min(t.transpose_yblock, t.max_yblock), min(t.transpose_xblock, t.max_xblock))
    return default, unique_configs(default, [cfg(32, 32), cfg(64, 64), cfg(128, 64), cfg(32, 128)])


def configs_reduction(
    launch: ComputeLaunch,
    o: CodegenOptions,
    *,
    persistent: bool,
    outer: bool,
    sfu: bool = False,
    x_item: int = 0,
    read_item: int = 0,
) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    """The default launch and autotune candidates of a persistent or looped reduction tile.
    `outer`: the tile's data is mostly contiguous along x, the smallest such element `x_item`
    bytes (`contiguous_bytes`); `read_item`: the smallest element the tile reads (`read_bytes`)."""
    g, t = o.gpu, o.tuning
    xcap = next_power_of_2(launch.axes[0].numel)
    rcap = next_power_of_2(launch.axes[1].numel)

    def cfg(xb: int, rb: int) -> LaunchConfig:
        # a persistent tile holds whole rows: its R0_BLOCK is the row, whatever max_r0_block says
        rb = rcap if persistent else max(1, min(rcap, rb, t.max_r0_block))
        xb = max(1, min(xcap, xb, t.max_xblock))
        return LaunchConfig(
            (("XBLOCK", xb), ("R0_BLOCK", rb)), _warps(xb * rb, t.reduction_points_per_warp, t.max_warps)
        )

    if persistent:
        # (choose_tiling may turn a transposed tile into a cluster of programs, keeping this
        # launch as its fallback: see clustered_config.)
        # Rows of x hold whole reductions; `persistent_elements` elements, unless the tile is
        # contiguous along x (a transposed reduction), where wider rows make longer memory
        # segments: `persistent_outer_elements` (the most warps, a multiprocessor's registers for
        # one program), or fewer when every point also runs a special-function op (exp, sigmoid,
        # ...): per-point exps would sit between a lone program's load and store with nothing to
        # hide them.
        rb = rcap
        if outer:
            target = t.persistent_outer_sfu_elements if sfu else t.persistent_outer_elements
            per_thread = t.persistent_outer_per_thread
        else:
            target, per_thread = t.persistent_elements, t.persistent_per_thread
        xb = max(1, min(xcap, target // rb, t.max_xblock))
        default = LaunchConfig(
            (("XBLOCK", xb), ("R0_BLOCK", rb)),
            max(1, min(t.max_warps, xb * rb // (g.warp_size * per_thread))),
        )
        cands = [cfg(xb, rb) for xb in (1, 2, 4, 8, 16, 32, 64) if 1024 <= xb * rb <= 16384]
        if outer:
            cands += [cfg(xb, rb) for xb in (32, 64) if xb * rb == t.persistent_outer_elements]
        return default, unique_configs(default, cands)
    # Looped: about `looped_programs_per_multiprocessor` programs a multiprocessor, else a few
    # programs stream the whole tensor with too few loads in flight; the tile holds about
    # `looped_elements` elements of tile-wide accesses per program.
    programs = _prev_power_of_2(t.looped_programs_per_multiprocessor * g.multiprocessors)
    xb = max(
        1, min(t.looped_max_xblock, t.max_xblock, _prev_power_of_2(max(1, launch.axes[0].numel // programs)))
    )
    if outer and x_item:
        # Each row of the tile reads XBLOCK contiguous elements of an access contiguous along x:
        # fewer than `looped_outer_x_bytes` leave part of every memory sector it fetches unused.
        xb = max(xb, min(xcap, t.looped_max_xblock, t.max_xblock, next_power_of_2(-(-t.looped_outer_x_bytes // x_item))))
    rb = max(t.looped_min_r0_block, _prev_power_of_2(t.looped_elements // (xb * _tile_accesses(launch))))
    xb, rb = max(1, min(xcap, xb, t.max_xblock)), min(rcap, t.max_r0_block, rb)
    # Little's law: a multiprocessor keeps bandwidth x latency bytes in flight only if its programs
    # read that much an iteration. Rows too few for `looped_programs_per_multiprocessor` programs
    # widen each program's R0_BLOCK instead (up to `looped_max_r0_block`).
    programs = cdiv(launch.axes[0].numel, xb)
    while (
        read_item  # a tile that reads nothing has nothing in flight
        and rb < min(rcap, t.looped_max_r0_block)
        and programs * xb * rb * read_item < t.looped_bytes_in_flight * g.multiprocessors
    ):
        rb *= 2
    default = LaunchConfig(
        (("XBLOCK", xb), ("R0_BLOCK", rb)), _warps(xb * rb, t.reduction_points_per_warp, t.max_warps)
    )
    cands = [cfg(1, 2048), cfg(4, 1024), cfg(8, 512), cfg(16, 256), cfg(32, 64), cfg(64, 64), cfg(128, 16)]
    return default, unique_configs(default, cands)


def _splittable(launch: ComputeLaunch) -> bool:
    """One r loop (no node inside it needs a finished reduction), reductions whose partial
    results combine with the same reduction (not argmax/argmin, which carry an index), and a
    finished result something stores (else the finishing kernel would have nothing to do)."""
    if not any(
        p.role in ("reduction", "epilogue") and p.node.output in launch.stores for p in launch.placements
    ):
        return False
    produced = launch.producer()
    for p in launch.placements:
        if (
            p.role == "reduction"
            and isinstance(p.node.value, Reduce)
            and p.node.value.op in ("argmax", "argmin")
        ):
            return False
        if p.role in ("inner", "reduction"):
            for b in p.node.read_buffers():
                if b in produced and produced[b].role in ("reduction", "epilogue"):
                    return False
    return True


def split_reduction(
    launch: ComputeLaunch, o: CodegenOptions, *, uneven: bool = False
) -> tuple[LaunchConfig, int, int, tuple[LaunchConfig, ...]] | None:
    """(config, chunks, points a chunk, autotune candidates) of a split reduction, or None to
    keep one program per x tile.

    Split when the x tiles alone give fewer than `split_target` programs (an outer reduction
    over few columns, a row sum over few rows). The tile is `split_xblock` wide in x, so that an
    access contiguous along x moves a cache line or more per row. Chunks are counted in blocks
    of a looped tile (`looped_elements` elements of tile-wide accesses), each at least
    `split_min_r_blocks` of them: where the blocks divide r, the fewest equal chunks that reach
    `split_target` programs, else the most there can be (no r mask); otherwise, with `uneven`
    (the tile's data contiguous along x, which the split's wide x tile serves), chunks of whole
    blocks that reach it, the last ending at r's end (masked where the blocks do not divide r).
    The loop's R0_BLOCK is then widened within a chunk, up to `split_max_r0_block` points and
    `split_wide_elements` elements of tile-wide accesses; one warp per
    `reduction_points_per_warp` elements."""
    if not o.split_target or not _splittable(launch):
        return None
    t = o.tuning
    xnumel, rnumel = launch.axes[0].numel, launch.axes[1].numel
    xb = max(1, min(t.split_xblock, t.max_xblock, next_power_of_2(xnumel)))
    rb = max(t.looped_min_r0_block, _prev_power_of_2(t.looped_elements // (xb * _tile_accesses(launch))))
    rb = max(1, min(rb, t.max_r0_block, next_power_of_2(rnumel)))
    xtiles = cdiv(xnumel, xb)
    if xtiles >= o.split_target:
        return None
    blocks = cdiv(rnumel, rb)
    most = min(blocks // max(1, t.split_min_r_blocks), o.gpu.max_grid_y)
    chunks = 0
    if rnumel % rb == 0:
        # The first divisor of `blocks` that reaches the target (so at most about split_target
        # candidates are tried), else the largest allowed one; the grid's second dimension caps it.
        for d in range(2, most + 1):
            if blocks % d == 0:
                chunks = d
                if xtiles * d >= o.split_target:
                    break
    if chunks >= 2:
        chunk = rnumel // chunks
    elif not uneven:
        return None
    else:  # chunks of `per` whole blocks, as many as reach the target, the last one shorter
        per = cdiv(blocks, max(2, min(most, cdiv(o.split_target, xtiles))))
        chunks, chunk = cdiv(blocks, per), per * rb
    if chunks < 2 or most < 2 or chunks * xnumel > INT32_MAX:  # partials indexed in int32
        return None
    wide = max(
        1,
        min(
            t.max_r0_block,
            t.split_max_r0_block,
            _prev_power_of_2(max(1, t.split_wide_elements // (xb * _tile_accesses(launch)))),
        ),
    )
    while wide > rb and chunk % wide:
        wide //= 2
    rb = max(rb, wide)

    def cfg(x: int, r: int) -> LaunchConfig:
        return LaunchConfig(
            (("XBLOCK", x), ("R0_BLOCK", r)), _warps(x * r, t.reduction_points_per_warp, t.max_warps)
        )

    # Candidates keep the chunks (the grid's second dimension and the partials' layout) and an
    # R0_BLOCK that divides a chunk (the chunk loop has no r mask): the tile halved or doubled
    # along either axis, and the same elements spread the other way.
    xcap, rcap = min(t.max_xblock, next_power_of_2(xnumel)), min(t.max_r0_block, next_power_of_2(rnumel))
    cands = [cfg(xb, rb)]
    for x, r in (
        (xb, rb // 2),
        (xb, rb * 2),
        (xb // 2, rb),
        (xb * 2, rb),
        (xb * 2, rb // 2),
        (xb // 2, rb * 2),
    ):
        if 1 <= x <= xcap and 1 <= r <= rcap and chunk % r == 0 and cfg(x, r) not in cands:
            cands.append(cfg(x, r))
    return cands[0], chunks, chunk, tuple(cands)


def finish_config(xnumel: int, chunks: int, o: CodegenOptions) -> LaunchConfig:
    """The launch of the kernel that finishes a split reduction: a persistent [XBLOCK, chunks]
    tile of partial results per x tile, then the kernel's epilogue."""
    tu = o.tuning
    rb = next_power_of_2(chunks)
    # About `finish_programs_per_multiprocessor` programs (x tiles) a multiprocessor or more, one
    # warp per `reduction_points_per_warp` partials.
    programs = _prev_power_of_2(tu.finish_programs_per_multiprocessor * o.gpu.multiprocessors)
    spread = _prev_power_of_2(max(1, xnumel // programs))
    xb = max(1, min(tu.max_xblock, next_power_of_2(xnumel), max(1, tu.finish_elements // rb), spread))
    return LaunchConfig(
        (("XBLOCK", xb), ("R0_BLOCK", rb)), _warps(xb * rb, tu.reduction_points_per_warp, tu.finish_max_warps)
    )


def launch_accesses(graph: Graph, launch: ComputeLaunch, p: Placement) -> Iterator[tuple[str, Expr, int]]:
    """(buffer, index, bytes) of each global memory access of a placed node (fused reads
    excluded)."""
    produced = launch.producer()
    node = p.node
    for ld in node.reads():
        if ld.buffer not in produced:
            yield ld.buffer, ld.index, graph.buffer(ld.buffer).dtype.itemsize * node.numel * node.rnumel
    if node.output in launch.stores:
        yield node.output, node.store.index, graph.buffer(node.output).dtype.itemsize * node.numel


def unit_digit(index: Expr, digits: dict[str, Digit | None]) -> tuple[Digit | None, bool]:
    """The digit along which `index` is contiguous (coefficient 1), and whether the index varies
    along any axis's fastest digit (div 1). Non-affine indices give (None, False)."""
    f = linear_form(index)
    best: Digit | None = None
    fastest = False
    for atom, k in f.coeffs:
        if not isinstance(atom, Var):
            return None, False
        d = digits.get(atom.name)
        if d is None:
            continue
        if d.div == 1:
            fastest = True
        if k == 1 and (best is None or d.div < best.div):
            best = d
    return best, fastest


def _prev_power_of_2(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n >= 1 else 1


def _pow2_divisor(n: int) -> int:
    return n & -n


def configs_unrolled(
    launch: ComputeLaunch, o: CodegenOptions
) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    """A few thousand points a program (`unrolled_1d_xblock`, `unrolled_points`): with 16-byte
    loads a few loads in flight per thread and window point. 2D: XBLOCK is the largest power of
    two dividing the row up to `unrolled_row_xblock` (no mask, each row a whole number of 128-byte
    lines for bf16 channels of 64), rows fill the rest, fewer of them while a thread would hold
    more than `row_loads_in_flight` loads (points a thread x `point_loads`) or the launch would
    keep fewer than `pointwise_warps_per_multiprocessor` warps a multiprocessor."""
    t = o.tuning
    if len(launch.axes) == 1:
        cap = next_power_of_2(launch.axes[0].numel)

        def cfg1(xb: int, w: int) -> LaunchConfig:
            xb = max(1, min(cap, xb, t.max_xblock))
            return LaunchConfig((("XBLOCK", xb),), max(1, min(w, xb // t.unrolled_1d_points_per_warp)))

        default = cfg1(t.unrolled_1d_xblock, t.unrolled_warps)
        return default, unique_configs(default, [cfg1(512, 4), cfg1(2048, 8)])
    ynumel, xnumel = launch.axes[0].numel, launch.axes[1].numel
    ycap = next_power_of_2(ynumel)
    xb = min(_pow2_divisor(xnumel), t.unrolled_row_xblock, t.max_xblock)
    if xb < t.unrolled_min_xblock:
        xb = min(next_power_of_2(xnumel), t.unrolled_row_xblock, t.max_xblock)

    def cfg(yb: int, w: int) -> LaunchConfig:
        yb = max(1, min(ycap, yb, t.max_yblock))
        return LaunchConfig(
            (("YBLOCK", yb), ("XBLOCK", xb)), max(1, min(w, yb * xb // t.unrolled_points_per_warp))
        )

    first = cfg(max(1, t.unrolled_points // xb), t.unrolled_warps)
    # Fewer points a thread (halved, down to one): the costs `configs_1d` weighs, with loads that
    # a row or a column of the tile shares left out (one value a thread, not one a point).
    warps, yb = first.num_warps, first.block("YBLOCK")
    threads = warps * o.gpu.warp_size
    loads = point_loads(launch)
    per_thread = _fewer_points(yb * xb // threads, loads, t.row_loads_in_flight, ynumel * xnumel, warps, o)
    if per_thread and per_thread * threads >= xb:
        yb = per_thread * threads // xb
    default = LaunchConfig((("YBLOCK", yb), ("XBLOCK", xb)), warps)
    return default, unique_configs(default, [first, cfg(max(1, 1024 // xb), 4), cfg(max(1, 2048 // xb), 8)])


def point_loads(launch: ComputeLaunch) -> int:
    """Distinct global loads a point of a 2D row tile that read a distinct element at every
    point, varying along both of its axes (one the tile's rows or columns share is a value a row
    or a column of a thread), each point of an unrolled reduction its own; reads of buffers the
    kernel produces are fused. At least one."""
    produced = launch.producer()
    tile = {f"{a.name}index" for a in launch.axes if a.name != "r0_"}
    sizes = {a.name: a.numel for a in launch.axes}
    sizes.setdefault("r0_", max((p.node.rnumel for p in launch.placements), default=1))
    n = 0
    for p in launch.placements:
        digits = digits_of(p, sizes)
        every = {
            (ld.buffer, ld.index)
            for ld in p.node.reads()
            if ld.buffer not in produced and tile <= _bases(ld.index, digits)
        }
        n += len(every) * (p.node.rnumel if p.role == "reduction" else 1)
    return max(1, n)


def _bases(index: Expr, digits: Mapping[str, Digit | None]) -> set[str]:
    """The axes an index varies along (a flat base counts for each of its axes)."""
    out: set[str] = set()
    for v in walk(index):
        if isinstance(v, Var) and (d := digits.get(v.name)) is not None:
            if d.base.startswith("flat_"):
                out.update(f"{a}index" for a in d.base.removeprefix("flat_").split("_"))
            else:
                out.add(d.base)
    return out


def _tile_accesses(launch: ComputeLaunch) -> int:
    """Global loads and stores in a reduction kernel's loop body (reads of fused buffers excluded)."""
    produced = launch.producer()
    n = 0
    for p in launch.placements:
        if p.role in ("inner", "reduction"):
            n += _distinct_reads(p, produced)
            n += int(p.role == "inner" and p.node.output in launch.stores)
    return max(1, n)


def tile_loads(launch: ComputeLaunch) -> int:
    """Distinct global loads a point of a pointwise tile (reads of buffers the kernel produces
    are fused, not loaded), at least one."""
    produced = launch.producer()
    return max(1, sum(_distinct_reads(p, produced) for p in launch.placements))


def _distinct_reads(p: Placement, produced: Mapping[str, Placement]) -> int:
    """A node's distinct global loads (reads of buffers the kernel produces are fused)."""
    return len({(ld.buffer, ld.index) for ld in p.node.reads() if ld.buffer not in produced})
