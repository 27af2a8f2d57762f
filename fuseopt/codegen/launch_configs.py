"""Launch configurations per kind of tile: blocks and warps (1D, 2D, unrolled, persistent and
looped reductions), thread-block clusters, split reductions and their finishing kernel. Every
size comes from the target (`CodegenOptions.gpu`).
"""

from __future__ import annotations

from fuseopt.codegen.common import INT32_MAX, cdiv, next_power_of_2
from fuseopt.codegen.launch_counts import point_loads, tile_accesses, tile_loads
from fuseopt.codegen.loop_phases import accumulators, online_sums
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.ir.expr import Reduce

# Unary and binary functions that run on the special-function units (exp, log, sqrt, sin, ...).


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


def thread_registers(points: int, warps: int, accumulators: int, o: CodegenOptions) -> int:
    """32-bit registers a thread of a tile of `points` on `warps` warps holds (the cost model's
    estimate): the target's base, and for each of its points a value and its accumulators."""
    return o.tuning.cost_base_registers + cdiv(points, warps * o.gpu.warp_size) * (1 + accumulators)


def register_limit(warps: int, o: CodegenOptions) -> int:
    """The most registers a thread of a program of `warps` warps gets without spilling: the
    target's per-thread limit, or its register file shared by the program's threads."""
    return min(
        o.gpu.max_registers_per_thread, o.gpu.registers_per_multiprocessor // (warps * o.gpu.warp_size)
    )


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
    per_thread = _fewer_points(
        xb // threads, tile_loads(launch), t.pointwise_loads_in_flight, numel, warps, o
    )
    if per_thread:  # else a tile smaller than its threads (a tiny launch): as it is
        xb = per_thread * threads
    default = LaunchConfig((("XBLOCK", xb),), warps)
    widths = [(min(cap, b, t.max_xblock), w) for b, w in ((256, 2), (512, 4), (2048, 8))]
    cands = [LaunchConfig((("XBLOCK", b),), _warps(b, t.pointwise_points_per_warp, w)) for b, w in widths]
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

    def cfg(yb: int, xb: int, most_rows: int = t.max_yblock) -> LaunchConfig:
        yb, xb = min(ycap, yb, most_rows), min(xcap, xb, t.max_xblock)
        return LaunchConfig(
            (("YBLOCK", yb), ("XBLOCK", xb)),
            _warps(yb * xb, t.transpose_points_per_warp, t.pointwise_max_warps),
        )

    rows, cols = min(t.transpose_yblock, t.max_yblock), min(t.transpose_xblock, t.max_xblock)
    default = cfg(rows, cols)
    xb = default.block("XBLOCK")
    if xb < cols:
        # Rows narrower than the tile's (a pixel shuffle's 2 points) take more of them, so that
        # the tile keeps its points: each program moves as many bytes, and there are as many
        # programs to start, as in a full-width tile; not below `pointwise_warps_per_multiprocessor`
        # warps a multiprocessor (as `_fewer_points`).
        ynumel, xnumel = launch.axes[0].numel, launch.axes[1].numel
        fill = o.gpu.multiprocessors * t.pointwise_warps_per_multiprocessor
        yb = min(ycap, rows * cols // xb)
        while yb > rows and cdiv(ynumel, yb) * cdiv(xnumel, xb) * cfg(yb, xb, yb).num_warps < fill:
            yb //= 2
        default = cfg(yb, xb, yb)
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
    again: int = 0,
) -> tuple[LaunchConfig, tuple[LaunchConfig, ...]]:
    """The default launch and autotune candidates of a persistent or looped reduction tile.
    `outer`: the tile's data is mostly contiguous along x, the smallest such element `x_item`
    bytes (`contiguous_bytes`); `read_item`: the smallest element the tile reads (`read_bytes`);
    `again`: bytes a row that a looped tile's later r loops read again (`reread_row_bytes`)."""
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
        most = t.most_warps
        if not outer and rb > t.persistent_elements:
            # rows longer than a default tile, a row a program: also on the most warps; on an
            # H100 faster than max_warps for 9 of 11 rows of 4096-16384 points, slower for 2
            # (results/persistent-rows-2026-12-06-h100.json, `warps`)
            cands.append(LaunchConfig((("XBLOCK", 1), ("R0_BLOCK", rb)), most))
        return default, unique_configs(default, cands)
    # Looped: about `looped_programs_per_multiprocessor` programs a multiprocessor, else a few
    # programs stream the whole tensor with too few loads in flight; the tile holds about
    # `looped_elements` elements of tile-wide accesses per program.
    programs = looped_programs(o)
    # Rows read along r that are enough for those programs one a program: see _row_warps.
    row_a_program = not outer and read_item > 0 and launch.axes[0].numel >= programs
    xb = max(
        1, min(t.looped_max_xblock, t.max_xblock, _prev_power_of_2(max(1, launch.axes[0].numel // programs)))
    )
    xb = 1 if row_a_program else xb
    if outer and x_item:
        # Each row of the tile reads XBLOCK contiguous elements of an access contiguous along x:
        # fewer than `looped_outer_x_bytes` leave part of every memory sector it fetches unused.
        xb = max(
            xb,
            min(
                xcap, t.looped_max_xblock, t.max_xblock, next_power_of_2(-(-t.looped_outer_x_bytes // x_item))
            ),
        )
    rb = max(t.looped_min_r0_block, _prev_power_of_2(t.looped_elements // (xb * tile_accesses(launch))))
    xb, rb = max(1, min(xcap, xb, t.max_xblock)), min(rcap, t.max_r0_block, rb)
    # Little's law: a multiprocessor keeps bandwidth x latency bytes in flight only if its programs
    # read that much an iteration. Rows too few for `looped_programs_per_multiprocessor` programs
    # widen each program's R0_BLOCK instead (up to `looped_max_r0_block`).
    programs = cdiv(launch.axes[0].numel, xb)
    widened = False
    while (
        read_item  # a tile that reads nothing has nothing in flight
        and rb < min(rcap, t.looped_max_r0_block)
        and programs * xb * rb * read_item < t.looped_bytes_in_flight * g.multiprocessors
    ):
        rb *= 2
        widened = True
    warps = _warps(xb * rb, t.reduction_points_per_warp, t.max_warps)
    if widened:
        # A few programs a multiprocessor, one wave: nothing else hides a step's round trip and
        # arithmetic, so more threads share each step (at least a point a thread).
        warps = max(warps, min(t.looped_widened_warps, xb * rb // g.warp_size))
    elif row_a_program:
        rb, warps = _row_warps(again, read_item, rcap, o)
    # No wider than the registers allow: each point of the tile holds its value and an
    # accumulator for each reduction (three for an online variance); a thread past its limit
    # spills them, and reloads them every step.
    held = accumulators(launch, online_sums(launch))
    while rb > t.looped_min_r0_block and thread_registers(xb * rb, warps, held, o) > register_limit(warps, o):
        rb //= 2
    default = LaunchConfig((("XBLOCK", xb), ("R0_BLOCK", rb)), warps)
    cands = [cfg(1, 2048), cfg(4, 1024), cfg(8, 512), cfg(16, 256), cfg(32, 64), cfg(64, 64), cfg(128, 16)]
    most = t.most_warps
    if row_a_program:
        # a row on `looped_row_warps` doubled up to the most warps: on an H100 each of 4, 8 and 16
        # was the fastest for some (results/looped-rows-2026-12-06-h100.json)
        row = [t.looped_row_warps]
        while row[-1] * 2 <= most:
            row.append(row[-1] * 2)
        cands = [_row_config(w, read_item, rcap, o) for w in row] + cands
    # The whole row a step (a point a thread or more), where a thread's registers hold it on the
    # most warps: the later r loops read it again at once (Inductor's `add_persistent_rblock`
    # candidate); like a persistent tile's, past max_r0_block.
    whole = again and not outer and rb < rcap and rcap >= most * g.warp_size
    if whole and thread_registers(rcap, most, held, o) <= register_limit(most, o):
        cands.append(LaunchConfig((("XBLOCK", 1), ("R0_BLOCK", rcap)), most))
    return default, unique_configs(default, cands)


def _row_config(warps: int, item: int, rcap: int, o: CodegenOptions) -> LaunchConfig:
    """A row a program on `warps` warps, each step a vector a thread (`_row_warps`' R0_BLOCK)."""
    g = o.gpu
    r = min(rcap, o.tuning.looped_max_r0_block, warps * g.warp_size * max(1, g.max_vector_bytes // item))
    return LaunchConfig((("XBLOCK", 1), ("R0_BLOCK", r)), warps)


def looped_programs(o: CodegenOptions) -> int:
    """The programs a looped tile aims at: about `looped_programs_per_multiprocessor` a
    multiprocessor (a power of 2)."""
    return _prev_power_of_2(o.tuning.looped_programs_per_multiprocessor * o.gpu.multiprocessors)


def _row_warps(again: int, item: int, rcap: int, o: CodegenOptions) -> tuple[int, int]:
    """A looped tile read along r whose rows are enough to give every multiprocessor
    `looped_programs_per_multiprocessor` programs of one row each takes a row a program, not a
    few programs of several rows, whose accumulators leave room for few resident warps (H100,
    4096 x 32000 float16 argmax: 8 rows on 8 warps 258 us, a row on 4 warps 125). Its warps:
    `looped_row_warps`; where later r loops read `again` bytes a row again, the fewest of those
    doubled up to `looped_widened_warps` whose resident programs' rows fit in half the L2, which
    serves the second read (the cost model's rule), else the most. Its R0_BLOCK: a vector a
    thread a step (`max_vector_bytes`), no more: each further point a thread holds a value and an
    accumulator (an argmax its index too), leaving room for fewer resident warps while a row a program
    already gives every multiprocessor its programs (H100, a 2048 x 50000 float32 argmin: 8 points
    a thread 200 us, 4 points 157; row sums alike within 1%)."""
    t = o.tuning
    choices = [t.looped_row_warps]
    while again and choices[-1] * 2 <= t.looped_widened_warps:
        choices.append(choices[-1] * 2)
    fits = [w for w in choices if not again or l2_serves(_rows_held(1, w, again, o), o)]
    warps = fits[0] if fits else choices[-1]
    return _row_config(warps, item, rcap, o).block("R0_BLOCK"), warps


def resident_programs(warps: int, o: CodegenOptions) -> int:
    """Programs of `warps` warps the multiprocessors keep at once, all of them, as many as their
    warps allow (registers aside: the cost model's `resident` also counts them)."""
    g = o.gpu
    return g.multiprocessors * min(g.max_warps_per_multiprocessor // warps, g.max_programs_per_multiprocessor)


def l2_serves(held_bytes: float, o: CodegenOptions) -> bool:
    """A later r loop reads its rows again from the L2, not DRAM, while the rows the resident
    programs hold fit in half of it (the rest for everything else in flight)."""
    return held_bytes <= o.gpu.l2_bytes // 2


def _rows_held(xb: int, warps: int, row_bytes: int, o: CodegenOptions) -> int:
    """Bytes of the rows that the resident programs hold (as many as the warps allow)."""
    return resident_programs(warps, o) * xb * row_bytes


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
    launch: ComputeLaunch, o: CodegenOptions, *, uneven: bool = False, x_item: int = 0
) -> tuple[LaunchConfig, int, int, tuple[LaunchConfig, ...]] | None:
    """(config, chunks, points a chunk, autotune candidates) of a split reduction, or None to
    keep one program per x tile.

    Split when the x tiles alone give fewer than `split_target` programs (an outer reduction
    over few columns, a row sum over few rows). The tile is `split_xblock` wide in x; where its
    data is contiguous along x (`x_item`: the smallest such element, bytes), a cache line of it
    wide, so that each row of the tile reads whole lines (64 columns of bfloat16, 32 of
    float32). Chunks are counted in blocks
    of a looped tile (`looped_elements` elements of tile-wide accesses), each at least
    `split_min_r_blocks` of them: where the blocks divide r, the fewest equal chunks that reach
    `split_target` programs, else the most there can be (no r mask); otherwise, with `uneven`
    (the tile's data contiguous along x, which the split's wide x tile serves), chunks of whole
    blocks that reach it, the last ending at r's end (masked where the blocks do not divide r).
    The loop's R0_BLOCK is then widened within a chunk, up to `split_max_r0_block` points,
    `split_wide_elements` elements of tile-wide accesses and a tile of `split_tile_elements`
    points (one accumulator each); one warp per `reduction_points_per_warp` elements."""
    if not o.split_target or not _splittable(launch):
        return None
    t = o.tuning
    xnumel, rnumel = launch.axes[0].numel, launch.axes[1].numel
    wide_x = max(1, o.gpu.cache_line_bytes // x_item) if x_item else t.split_xblock
    xb = max(1, min(wide_x, t.max_xblock, next_power_of_2(xnumel)))
    rb = max(t.looped_min_r0_block, _prev_power_of_2(t.looped_elements // (xb * tile_accesses(launch))))
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
            _prev_power_of_2(max(1, t.split_wide_elements // (xb * tile_accesses(launch)))),
            _prev_power_of_2(max(1, t.split_tile_elements // xb)),
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
