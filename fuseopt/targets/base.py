"""What code generation knows about a GPU: its hardware facts and every tuned constant, as data.

A `Target` is frozen; `fuseopt/targets/<gpu>.py` builds one per GPU, and `CodegenOptions.target`
carries it to the rules of `fuseopt/codegen/`, which read their numbers from it and from nowhere
else. Every field's meaning is its `doc` metadata (`fuseopt targets` shows them); a tuned
constant's reason and the results file that shows it are the target's `provenance`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, get_type_hints


def _doc(text: str) -> Any:
    """A required field whose meaning is `text` (read back by `doc`)."""
    return field(metadata={"doc": text})


@dataclass(frozen=True)
class Tuning:
    """The tuned constants of code generation (read by `fuseopt/codegen/strategies/`,
    `launch_configs.py`, `windows/` and `cost.py`). Sizes are in points (elements of the tile)
    unless they say bytes; a `*_per_warp` constant gives one warp per that many points of a
    program's tile. A `*_ratio` N means "at least 1/N". `CodegenOptions` can override some
    (tests shrink the blocks so that tiny shapes take every path)."""

    # -- block caps
    max_xblock: int = _doc("largest XBLOCK of any tile")
    max_yblock: int = _doc(
        "largest YBLOCK of a 2D tile as wide as max_xblock; a narrower one keeps the points"
    )
    max_r0_block: int = _doc(
        "largest R0_BLOCK of any reduction tile, but a looped one widened for bytes in flight "
        "(looped_max_r0_block)"
    )
    max_warps: int = _doc("most warps of a reduction program (persistent, looped, split)")
    # -- pointwise tiles
    pointwise_points_per_warp: int = _doc("a 1D pointwise tile: one warp per this many points")
    pointwise_max_warps: int = _doc("most warps of a pointwise program (1D and transposed 2D)")
    pointwise_loads_in_flight: int = _doc(
        "most loads a thread of a 1D pointwise tile holds (points a thread x distinct loads a point)"
    )
    pointwise_warps_per_multiprocessor: int = _doc(
        "fewest warps a multiprocessor a 1D pointwise launch keeps (fewer points a thread until it does)"
    )
    transpose_yblock: int = _doc("a transposed pointwise 2D tile's YBLOCK (rows)")
    transpose_xblock: int = _doc("a transposed pointwise 2D tile's XBLOCK (a row's points)")
    transpose_points_per_warp: int = _doc("a transposed 2D tile: one warp per this many points")
    # -- rows of index arithmetic, and small reductions unrolled into pointwise tiles
    row_split_min_points: int = _doc(
        "fewest points of a row for the flat index to split into rows (index arithmetic once a row)"
    )
    unroll_rnumel: int = _doc("largest rnumel of a reduction unrolled at generation time (0: never)")
    unrolled_1d_xblock: int = _doc("a 1D unrolled (or row-split) tile's XBLOCK")
    unrolled_1d_points_per_warp: int = _doc("a 1D unrolled tile: one warp per this many points")
    unrolled_row_xblock: int = _doc("largest XBLOCK of a 2D unrolled tile (a row's points)")
    unrolled_min_xblock: int = _doc(
        "below this, a 2D unrolled tile's XBLOCK is the row rounded up to a power of two, masked"
    )
    unrolled_points: int = _doc("points of a 2D unrolled tile: rows fill it")
    unrolled_points_per_warp: int = _doc("a 2D unrolled tile: one warp per this many points")
    unrolled_warps: int = _doc("most warps of an unrolled tile")
    row_loads_in_flight: int = _doc(
        "most loads a thread of a 2D row tile (row split, unrolled) holds: points a thread x the loads "
        "a point that read a distinct element at every point of the tile"
    )
    # -- sliding windows (codegen/windows/sliding.py, sliding_emit.py)
    window_min_row: int = _doc("fewest points of a row for a sliding window (0: never)")
    window_band: int = _doc("most rows a sliding window's program walks (0: never)")
    window_xblock: int = _doc("a sliding window's XBLOCK (points of a row)")
    window_warps: int = _doc("most warps of a sliding window's program")
    window_points_per_warp: int = _doc("a sliding window: one warp per this many points of a row")
    window_carry_ratio: int = _doc(
        "a sliding window is kept when carried values x this >= the values a row needs"
    )
    # -- register windows (codegen/windows/register.py)
    window_cells: int = _doc("most cells (rows x columns) of a register window's program (0: never)")
    window_cols: int = _doc("most columns of a register window's cells")
    window_rows: int = _doc("most rows of a register window's cells")
    window_slice: int = _doc("points of a column a register window's program covers (a power of two)")
    cells_points_per_warp: int = _doc("a register window: one warp per this many points of a slice")
    cells_share_ratio: int = _doc(
        "a register window is kept when loads its cells share x this >= the loads they need"
    )
    # -- persistent reductions (whole rows in registers)
    persistent_rnumel: int = _doc("largest rnumel of a persistent reduction (looped above)")
    persistent_aligned_rnumel: int = _doc(
        "the same, when every read along r starts each row on a vector boundary (`rows_aligned`)"
    )
    persistent_outer_rnumel: int = _doc("the same, when the reduced data is contiguous along x")
    persistent_elements: int = _doc("a persistent tile's points (XBLOCK x R0_BLOCK)")
    persistent_per_thread: int = _doc("a persistent tile's points a thread (sets its warps)")
    persistent_outer_elements: int = _doc("the same when the tile is contiguous along x (transposed)")
    persistent_outer_sfu_elements: int = _doc(
        "the same, when every point also runs a special-function op (exp, sigmoid, ...)"
    )
    persistent_outer_per_thread: int = _doc("a transposed persistent tile's points a thread")
    outer_x_ratio: int = _doc(
        "a reduction tile leans towards x when bytes contiguous along x x this >= those along r"
    )
    # -- thread-block clusters (transposed persistent reductions)
    cluster_size: int = _doc("programs of a cluster (Triton's num_ctas)")
    cluster_elements: int = _doc("a cluster's tile, points, split over its programs by rows")
    cluster_warps: int = _doc("warps of each program of a cluster")
    cluster_min_rows: int = _doc("fewest rows of x each program of a cluster gets")
    # -- looped reductions
    looped_programs_per_multiprocessor: int = _doc(
        "a looped reduction's x tiles aim at this many programs a multiprocessor"
    )
    looped_max_xblock: int = _doc("largest XBLOCK of a looped reduction")
    looped_outer_x_bytes: int = _doc("fewest bytes along x a row of a looped tile contiguous along x reads")
    looped_elements: int = _doc("points of tile-wide accesses of a looped (or split) tile")
    looped_min_r0_block: int = _doc("smallest R0_BLOCK of a looped (or split) tile")
    looped_bytes_in_flight: int = _doc(
        "bytes a multiprocessor's looped programs read an iteration, at least: too few programs "
        "widen R0_BLOCK to them (Little's law: bandwidth x latency; 0: never)"
    )
    looped_max_r0_block: int = _doc("largest R0_BLOCK a looped tile widens to for bytes in flight")
    looped_widened_warps: int = _doc(
        "warps of a looped program whose R0_BLOCK widened for bytes in flight (rows too few), at "
        "least: a wave of a few programs a multiprocessor, each step shared by more threads"
    )
    looped_row_warps: int = _doc(
        "warps of a looped program of one row (rows enough for the GPU, read along r) whose rows no "
        "later r loop reads again; the fewest tried where one does"
    )
    reduction_points_per_warp: int = _doc("looped, split and finishing tiles: one warp per this many")
    # -- split reductions (partial kernel + finishing kernel)
    split_programs_per_multiprocessor: int = _doc(
        "split a looped reduction whose x tiles give fewer programs than this a multiprocessor"
    )
    split_min_r_blocks: int = _doc("each chunk of a split covers at least this many R0_BLOCKs")
    split_xblock: int = _doc("XBLOCK of a split's partial kernel whose data is not contiguous along x")
    split_wide_elements: int = _doc("points of tile-wide accesses a split's R0_BLOCK widens up to")
    split_max_r0_block: int = _doc("largest R0_BLOCK a split's partial kernel widens to")
    split_tile_elements: int = _doc(
        "most points (XBLOCK x R0_BLOCK, an accumulator each) of a split's partial tile as R0_BLOCK widens"
    )
    finish_programs_per_multiprocessor: int = _doc(
        "the finishing kernel's x tiles spread over about this many programs a multiprocessor"
    )
    finish_elements: int = _doc("most points (XBLOCK x chunks) of a finishing kernel's tile")
    finish_max_warps: int = _doc("most warps of a finishing kernel's program")
    # -- the cost model (codegen/cost.py)
    cost_base_registers: int = _doc(
        "registers of a thread besides its points' values (indices, masks, pointers, loop state)"
    )
    cost_tie_pct: int = _doc(
        "estimates within this many percent of the least are a tie, broken by the strategies' table order"
    )
    cost_latency_ns: int = _doc(
        "a loaded memory round trip, ns: a program's steps take at least this each (Little's law)"
    )
    cost_run_overhead_bytes: int = _doc(
        "what each contiguous run of an access costs DRAM beyond its bytes (rows and lines opened anew)"
    )
    cost_multiprocessor_bytes_per_cycle: int = _doc(
        "bytes one multiprocessor's loads take from the L2 a cycle (a launch of fewer programs than multiprocessors)"
    )
    cost_l2_ratio: int = _doc("how many times DRAM's bandwidth the L2 serves sectors fetched again")
    cost_launch_us: int = _doc(
        "what a kernel's launch costs beside its work (a split's second kernel too), microseconds"
    )
    # -- loop fission (codegen/fission.py)
    fission_min_gain_pct: int = _doc(
        "a looped reduction's r loops run apart where the model estimates them this many percent faster"
    )

    @property
    def most_warps(self) -> int:
        """The most warps any reduction program runs: `max_warps`, or a widened looped tile's."""
        return max(self.max_warps, self.looped_widened_warps)


@dataclass(frozen=True)
class Tuned:
    """Why a tuned constant has its value: one line, and the results file that shows it."""

    why: str
    results: str  # a file under benchmarks/results/, or "benchmarks/results/README.md (history)"
    measured_on: str  # the target it was measured on: another's name where a target inherits it


Provenance = tuple[tuple[str, Tuned], ...]


@dataclass(frozen=True)
class Target:
    """A GPU as code generation sees it. Hardware facts are NVIDIA's published figures (and what
    `torch.cuda.get_device_properties` reports); `tuning` holds every tuned constant, and
    `provenance` one `Tuned` record for each, in the order of `Tuning`'s fields."""

    name: str = _doc("the name `--target` takes")
    description: str = _doc("the GPU in words")
    device_names: tuple[str, ...] = _doc(
        "substrings of the device name torch reports that mean this GPU (`targets.detect`)"
    )
    compute_capability: tuple[int, int] = _doc("NVIDIA compute capability (major, minor)")
    multiprocessors: int = _doc("streaming multiprocessors (SMs): grids of reductions are sized by them")
    warp_size: int = _doc("threads of a warp")
    registers_per_multiprocessor: int = _doc("32-bit registers of a multiprocessor's register file")
    max_warps_per_multiprocessor: int = _doc("most warps resident on a multiprocessor at once")
    max_programs_per_multiprocessor: int = _doc("most programs (thread blocks) resident on a multiprocessor")
    max_registers_per_thread: int = _doc("most 32-bit registers one thread can hold")
    max_threads_per_block: int = _doc("most threads of a program (thread block)")
    shared_memory_per_block: int = _doc("most shared memory one program can take (opt-in), bytes")
    shared_memory_per_multiprocessor: int = _doc("shared memory of a multiprocessor, bytes")
    l2_bytes: int = _doc("L2 cache, bytes")
    cache_line_bytes: int = _doc("a global-memory cache line (one transaction of a coalesced access), bytes")
    clock_mhz: int = _doc("the multiprocessors' clock (boost), MHz")
    sector_bytes: int = _doc("the unit a global access fetches from the L2 or DRAM, bytes")
    memory_bandwidth_gbps: int = _doc(
        "DRAM bandwidth, GB/s (published; a detected GPU's from the memory clock and bus width torch reports)"
    )
    max_vector_bytes: int = _doc("widest load or store of one thread, bytes")
    max_cluster_size: int = _doc("most programs of a thread-block cluster (1: no clusters)")
    programmatic_dependent_launch: bool = _doc(
        "a kernel can launch before the one it depends on ends (the generated module checks again at run time)"
    )
    max_grid_y: int = _doc("largest launch grid's second (and third) dimension")
    tuning: Tuning = _doc("every tuned constant of code generation")
    provenance: Provenance = _doc("each tuned constant's why and results file, in `Tuning`'s order")

    def __post_init__(self) -> None:
        names = tuple(name for name, _ in self.provenance)
        expected = tuple(f.name for f in dataclasses.fields(Tuning))
        if names != expected:
            missing = sorted(set(expected) - set(names))
            extra = sorted(set(names) - set(expected))
            raise ValueError(
                f"target {self.name!r}: provenance must list every tuned constant once, in Tuning's "
                f"order (missing {missing}, unknown {extra})"
            )
        threads = self.tuning.most_warps * self.warp_size
        if threads > self.max_threads_per_block:
            raise ValueError(
                f"target {self.name!r}: {threads} threads a program, most is {self.max_threads_per_block}"
            )

    def why(self, constant: str) -> Tuned:
        """The provenance of one tuned constant."""
        return dict(self.provenance)[constant]

    @property
    def clusters(self) -> bool:
        """Whether the GPU runs the clusters code generation uses (`Tuning.cluster_size`)."""
        return self.max_cluster_size >= self.tuning.cluster_size

    def facts(self) -> dict[str, Any]:
        """The hardware facts by field name (everything but the tuning), JSON-ready."""
        skip = {"tuning", "provenance"}
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)
            if f.name not in skip
        }

    def to_json(self) -> dict[str, Any]:
        """Facts, then each tuned constant with its value and provenance."""
        return {
            **self.facts(),
            "tuning": {
                name: {"value": getattr(self.tuning, name), **dataclasses.asdict(why)}
                for name, why in self.provenance
            },
        }


def doc(cls: type, name: str) -> str:
    """A field's meaning (its `doc` metadata) of `Target` or `Tuning`."""
    return str({f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)}[name])


def tuned(measured_on: str, **constants: tuple[int, str, str]) -> tuple[Tuning, Provenance]:
    """A target file's table of tuned constants, `name=(value, why, results file)`, as the
    `Tuning` and the provenance a `Target` takes; every constant of `Tuning`, each once, an int."""
    hints = get_type_hints(Tuning)
    for name, (value, why, results) in constants.items():
        if name not in hints:
            raise ValueError(f"{name!r} is not a tuned constant (fuseopt.targets.base.Tuning)")
        if type(value) is not hints[name] or not why or not results:
            raise ValueError(f"{name!r}: expected ({hints[name].__name__}, why, results file)")
    order = [f.name for f in dataclasses.fields(Tuning)]
    missing = [n for n in order if n not in constants]
    if missing:
        raise ValueError(f"tuned constants missing: {missing}")
    tuning = Tuning(**{name: value for name, (value, _, _) in constants.items()})
    provenance = tuple((n, Tuned(constants[n][1], constants[n][2], measured_on)) for n in order)
    return tuning, provenance


def inherited(source: Target) -> Provenance:
    """`source`'s provenance for a target that takes its tuning unmeasured: each record says so
    (and keeps `measured_on`, the GPU that was measured)."""
    note = f" [the {source.name} value, not measured on this GPU]"
    return tuple((name, Tuned(t.why + note, t.results, t.measured_on)) for name, t in source.provenance)
