"""The cost model: how long a kernel shape should take on the target, from counts of the kernel IR.

`estimate(graph, tiling, options)` weighs one tiling (a strategy and its launch):

- **Bytes.** Each global access touches the elements its index reaches (`launch_counts`); a
  buffer moves between DRAM and the chip at most once a pass, however many accesses read it (the
  L2 serves the overlap of a pooling window's loads), and reads of one element at one point of
  the tile by several nodes are one access (the emitter loads it once: a gathered row that a
  norm's statistics and its output both read). A looped reduction reads a buffer again in
  each later r loop that reads it: from the L2 when the rows its resident programs hold fit there.
- **Transactions.** An access is fetched in sectors (`Target.sector_bytes`): along its contiguous
  dimension a tile reads `block` elements in a row, so an access contiguous along an axis whose
  block is narrower than a sector (or along none of the tile's lanes: a transposed read of a 1D
  tile) fetches more than it uses. Sectors beyond the bytes used are charged at the L2's rate. A
  window issues only the loads it does not carry or share (`issued`).
- **Registers, occupancy.** A thread holds a value for each of its points of the tile, and a
  looped tile's accumulators for each (`registers_of`); that, the warps and the target's limits
  give how many programs a multiprocessor keeps resident. Past its limit (the target's per
  thread, or its share of the register file among the program's threads) a thread spills, and
  the spilled values move through memory at every step.
- **Latency and waves.** A program runs its steps (r-loop iterations, rows of a walk) one after
  another, each a memory round trip; the multiprocessors run the programs in waves of the
  resident count. Each wave takes the longer of its bytes at the memory's bandwidth and its
  steps at the memory's latency (Little's law: too few bytes in flight leave bandwidth unused),
  and no less than one multiprocessor's programs take at its own bandwidth. So a last partial
  wave and a launch of few programs cost what they do.
- **Launches.** Each kernel costs a launch (a split reduction two: the second waits for the
  first), which a tiny kernel's time is mostly made of.

The estimate chooses among the strategies that apply (`tile_shapes.choose_tiling`); the
constants are the target's (`Target`: hardware facts; `Tuning.cost_*`: measured)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from fuseopt.codegen.common import cdiv, prod
from fuseopt.codegen.indexing import Digit, over_digits
from fuseopt.codegen.launch_configs import l2_serves, register_limit, thread_registers
from fuseopt.codegen.launch_counts import launch_accesses
from fuseopt.codegen.loop_phases import accumulators, online_sums, phases
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch, digits_of
from fuseopt.codegen.strategies import (
    LoopedRow,
    RegisterWindow,
    SlidingWindow,
    SplitPartial,
    Strategy,
    looped_row,
    sliding_window,
    split,
)
from fuseopt.codegen.strategies.base import Work
from fuseopt.codegen.tiling import Tiling
from fuseopt.codegen.windows.census import cell_loads, row_loads
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.expr import Expr, Var
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class Estimate:
    """One tiling's estimate and the terms behind it (benchmarks/cost_model.py and
    benchmarks/strategies.py record them beside measured times)."""

    us: float  # estimated time, microseconds
    dram_bytes: int  # moved between DRAM and the chip
    fetched_bytes: int  # fetched into the multiprocessors, whole sectors counted
    programs: int
    steps: int  # memory round trips one program makes one after another
    registers: int  # estimated 32-bit registers a thread
    resident: int  # programs a multiprocessor keeps at once
    waves: int
    kernels: int

    def to_json(self) -> dict[str, float | int]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def estimate(graph: Graph, tiling: Tiling, options: CodegenOptions) -> Estimate:
    gpu, t = options.gpu, options.tuning
    launch, s, cfg = tiling.launch, tiling.strategy, tiling.config
    blocks = dict(cfg.blocks)
    programs = prod(tiling.grid(cfg)) * cfg.num_ctas
    threads = cfg.num_warps * gpu.warp_size
    passes = _passes(launch, s)
    work = work_of(s, launch, cfg, max(passes.values(), default=0) + 1)
    per_pass, fetched = _traffic(
        graph, launch, blocks, passes, gpu.sector_bytes, gpu.cache_line_bytes, t.cost_run_overhead_bytes
    )
    fetched *= issued(tiling)
    steps = work.steps
    registers = registers_of(tiling, options)
    limit = register_limit(cfg.num_warps, options)
    spilled = max(0, registers - limit)
    registers = min(registers, limit)
    resident = max(
        1,
        min(
            gpu.max_warps_per_multiprocessor // cfg.num_warps,
            gpu.registers_per_multiprocessor // (registers * threads),
            gpu.max_programs_per_multiprocessor,
        ),
    )
    dram = _dram(per_pass, launch, blocks, resident * gpu.multiprocessors, options)
    # spilled registers stored and loaded again, each step (a looped tile's accumulators)
    dram += 2 * spilled * 4 * threads * programs * steps
    bandwidth = gpu.memory_bandwidth_gbps * 1e3  # bytes a microsecond
    per_program = (dram / bandwidth + max(0.0, fetched - dram) / (bandwidth * t.cost_l2_ratio)) / programs
    slots = gpu.multiprocessors * resident
    waves = cdiv(programs, slots)
    latency = t.cost_latency_ns / 1e3
    per_sm = t.cost_multiprocessor_bytes_per_cycle * gpu.clock_mhz  # bytes a microsecond

    def wave(active: int) -> float:  # the longest of: at DRAM's rate, one multiprocessor's, the steps
        alone = cdiv(active, gpu.multiprocessors) * per_program * bandwidth / per_sm
        return max(active * per_program, alone, steps * latency)

    full, rest = divmod(programs, slots)  # full waves, then a partial one
    us = full * wave(slots) + (wave(rest) if rest else 0.0) + work.kernels * t.cost_launch_us
    return Estimate(us, int(dram), int(fetched), programs, steps, registers, resident, waves, work.kernels)


# Each strategy's program where it is not one step of one kernel (`strategies.base.Work`).
WORK = {LoopedRow: looped_row.work, SplitPartial: split.work, SlidingWindow: sliding_window.work}


def work_of(s: Strategy, launch: ComputeLaunch, config: LaunchConfig, loops: int) -> Work:
    rule = WORK.get(type(s))
    return Work() if rule is None else rule(s, launch, config, loops)  # type: ignore[operator]


def issued(tiling: Tiling) -> float:
    """The share of the tile's loads a window issues (`windows.census`, counted from the IR): a
    sliding window loads what a row does not carry from the row before, a register window's
    cells share their loads. 1 for every other strategy."""
    s = tiling.strategy
    if isinstance(s, SlidingWindow):
        _, loads, carried = row_loads(tiling)
        return (loads - carried) / loads if loads else 1.0
    if isinstance(s, RegisterWindow):
        needed, distinct = cell_loads(tiling)
        return distinct / needed if needed else 1.0
    return 1.0


def registers_of(tiling: Tiling, options: CodegenOptions) -> int:
    """32-bit registers a thread: the target's base, and for each point of the tile it holds one
    value, plus one per accumulator of a looped (or split) tile (a register each, the whole
    [XBLOCK, R0_BLOCK] tile of them)."""
    cfg = tiling.config
    tile = prod(b for _, b in cfg.blocks) // cfg.num_ctas
    looped = work_of(tiling.strategy, tiling.launch, cfg, 1).accumulates
    online = online_sums(tiling.launch) if isinstance(tiling.strategy, LoopedRow) else {}
    held = accumulators(tiling.launch, online) if looped else 0
    return thread_registers(tile, cfg.num_warps, held, options)


def _passes(launch: ComputeLaunch, s: Strategy) -> dict[str, int]:
    """Each node's r loop (0-based) in a looped tile; 0 for every node otherwise."""
    if not isinstance(s, LoopedRow):
        return {p.node.name: 0 for p in launch.placements}
    phase, post = phases(launch, online_sums(launch))
    return {**post, **phase}


def _traffic(
    graph: Graph,
    launch: ComputeLaunch,
    blocks: dict[str, int],
    passes: dict[str, int],
    sector: int,
    line: int,
    overhead: int,
) -> tuple[dict[tuple[str, int], float], float]:
    """Bytes of each buffer in each r loop from DRAM (at most its storage; a contiguous run
    shorter than a cache line pays `overhead` bytes a run more, down to nothing at a whole line),
    and bytes fetched into the multiprocessors in whole sectors."""
    sizes = {a.name: a.numel for a in launch.axes}
    sizes.setdefault("r0_", max((p.node.rnumel for p in launch.placements), default=1))
    lanes = {a.index: blocks.get(a.block, a.numel) for a in launch.axes}
    moved: dict[tuple[str, int], list[float]] = {}
    storage: dict[tuple[str, int], float] = {}
    fetched: list[float] = []
    seen: set[tuple[str, Expr, int]] = set()
    for p in launch.placements:
        every = digits_of(p, sizes)
        digits = {v: d for v, d in every.items() if d is not None and d.base in lanes}
        k = passes.get(p.node.name, 0)
        for buf, index, nbytes in launch_accesses(graph, launch, p):
            key = (buf, over_digits(index, every), k)
            if key in seen:
                continue
            seen.add(key)
            b = graph.buffer(buf)
            item = b.dtype.itemsize
            touched = min(nbytes, b.storage_size * item)
            run, used = _run(index, digits, lanes, item, sector)
            fetched.append(touched * sector / used)
            pays = 1 + overhead * max(0.0, 1 / run - 1 / line)  # runs shorter than a line
            moved.setdefault((buf, k), []).append(touched * sector / used * pays)
            storage[(buf, k)] = max(storage.get((buf, k), 0.0), b.storage_size * item * pays)
    # fsum: the same total whatever order the kernel lists its nodes in
    per_pass = {key: min(storage[key], math.fsum(v)) for key, v in sorted(moved.items())}
    return per_pass, math.fsum(fetched)


def _run(
    index: Expr, digits: dict[str, Digit], lanes: dict[str, int], item: int, sector: int
) -> tuple[int, int]:
    """An access's contiguous run along the tile's lanes in bytes, and the bytes of each sector
    it fetches that it uses. Contiguous along an axis: `block` elements in a row (up to the
    digit's extent). A stride of k elements along the lanes: a run over k times the lanes' bytes,
    one element in k used. Not moved by the lanes: a broadcast, one sector, used."""
    step: tuple[int, Digit] | None = None
    for atom, k in linear_form(index).coeffs:
        d = digits.get(atom.name) if isinstance(atom, Var) else None
        if d is not None and d.div == 1 and (step is None or abs(k) < step[0]):
            step = (abs(k), d)
    if step is None:
        return sector, sector
    k, d = step
    n = min(lanes[d.base], d.mod or lanes[d.base])
    if k == 1:
        return n * item, min(sector, n * item)
    return n * k * item, max(item, sector // k)


def _dram(
    per_pass: dict[tuple[str, int], float],
    launch: ComputeLaunch,
    blocks: dict[str, int],
    held: int,
    options: CodegenOptions,
) -> float:
    """DRAM bytes: every pass's, unless the rows the resident programs hold (`held` programs of
    XBLOCK rows of every buffer more than one r loop reads) fit in half the L2 (`l2_serves`):
    then each buffer once, its later passes served by the L2."""
    every = math.fsum(per_pass.values())
    loops: dict[str, int] = {}
    for buf, _ in per_pass:
        loops[buf] = loops.get(buf, 0) + 1
    again = {buf for buf, n in loops.items() if n > 1}  # read in more than one r loop
    if not again:
        return every
    x = launch.axes[0]
    rows = held * blocks.get(x.block, 1)
    row_bytes: dict[str, float] = {}
    for (buf, _), v in per_pass.items():
        if buf in again:
            row_bytes[buf] = max(row_bytes.get(buf, 0.0), v / x.numel)
    footprint = math.fsum(row_bytes.values()) * rows
    if not l2_serves(footprint, options):
        return every
    once: dict[str, float] = {}
    for (buf, _), v in per_pass.items():
        once[buf] = max(once.get(buf, 0.0), v)
    return math.fsum(once.values())
