"""Tile shapes and launch parameters of each compute kernel (deterministic, per shape).

Pointwise kernels are 1D unless reads and writes disagree on which flat position is contiguous
(a transpose): then a 2D tile [YBLOCK, XBLOCK] splits the flat index at the transposed access's
contiguous loop so both sides are coalesced (Triton picks each access's layout from its
contiguity). Reductions are persistent (one [XBLOCK, R0_BLOCK] tile holds whole rows) up to
`persistent_rnumel`, looped otherwise; the tile leans towards x when the reduced data is
contiguous along x (outer reductions). Masks are dropped on an axis whose size every block
candidate divides. Index arithmetic is int64 only where some intermediate of an index can leave int32.
Every size, limit and count of programs comes from the target (`CodegenOptions.gpu`:
`fuseopt.targets`, whose files say why each tuned constant has its value).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from fuseopt.codegen.common import cdiv, prod
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.ir.dtypes import DType
from fuseopt.targets import DEFAULT
from fuseopt.targets.base import Target, Tuning

# Overrides of the target's tuned constants that CodegenOptions takes (tests shrink the blocks so
# that tiny shapes still take every path; `fuseopt.targets.base.Tuning` says what each means).
_TUNING_OVERRIDES = (
    "persistent_rnumel",
    "max_xblock",
    "max_yblock",
    "max_r0_block",
    "unroll_rnumel",
    "split_min_r_blocks",
    "window_min_row",
    "window_band",
    "window_cells",
    "window_cols",
    "window_rows",
    "window_slice",
)


@dataclass(frozen=True)
class CodegenOptions:
    """What the generator generates for: a target GPU (`fuseopt.targets`: its hardware facts and
    tuned constants), switches, and overrides of the target's values (None: the target's). The
    rules read `gpu`, the target with the overrides applied, and its `tuning`."""

    target: Target = DEFAULT
    autotune: bool = False
    tile_2d: bool = True  # allow 2D tiles for transposes
    # Register windows (see codegen.cells): (rows, columns) of cells to take alone, where set.
    window_shape: tuple[int, int] | None = None
    # Thread-block clusters for the transposed persistent reductions that do more than one
    # reduction or a special function at every point (see clustered_config); None: where the target
    # has them.
    clusters: bool | None = None
    # The GPU's multiprocessors, when not the target's (`fuseopt optimize --multiprocessors`):
    # split reductions, looped reductions and a split's finishing kernel size their grids by them.
    multiprocessors: int | None = None
    # Split reductions: a looped reduction with fewer x tiles than `split_programs` programs is
    # cut along r into chunks reduced by a partial kernel and finished by a second kernel. None:
    # the target's split_programs_per_multiprocessor x multiprocessors; 0: never.
    split_programs: int | None = None
    persistent_rnumel: int | None = None
    max_xblock: int | None = None
    max_yblock: int | None = None
    max_r0_block: int | None = None
    unroll_rnumel: int | None = None
    split_min_r_blocks: int | None = None
    window_min_row: int | None = None
    window_band: int | None = None
    window_cells: int | None = None
    window_cols: int | None = None
    window_rows: int | None = None
    window_slice: int | None = None
    gpu: Target = field(init=False, repr=False, compare=False)  # the target, overrides applied

    def __post_init__(self) -> None:
        gpu = self.target
        given = {name: getattr(self, name) for name in _TUNING_OVERRIDES if getattr(self, name) is not None}
        if given:
            gpu = replace(gpu, tuning=replace(gpu.tuning, **given))
        if self.multiprocessors is not None:
            gpu = replace(gpu, multiprocessors=self.multiprocessors)
        object.__setattr__(self, "gpu", gpu)

    @property
    def tuning(self) -> Tuning:
        """The target's tuned constants, overrides applied."""
        return self.gpu.tuning

    @property
    def split_target(self) -> int:
        if self.split_programs is not None:
            return self.split_programs
        return self.tuning.split_programs_per_multiprocessor * self.gpu.multiprocessors

    @property
    def use_clusters(self) -> bool:
        return self.gpu.clusters if self.clusters is None else self.clusters


@dataclass(frozen=True)
class LaunchConfig:
    blocks: tuple[tuple[str, int], ...]  # (constexpr name, value), in signature order
    num_warps: int
    # Programs of a thread-block cluster sharing one program's tile (Triton's num_ctas; NVIDIA
    # compute capability 9.0 and later): a tile of XBLOCK rows is split over them by rows.
    num_ctas: int = 1

    def block(self, name: str) -> int:
        return dict(self.blocks)[name]


@dataclass(frozen=True)
class Cells:
    """A register window's shape (codegen.cells): a program covers `rows` consecutive rows x
    `cols` consecutive columns of `col` points each (XBLOCK of them, a slice of a column). Bands
    of rows stay within a multiple of `period` rows and chunks of columns within a row of `ncols`
    columns: where `rows` or `cols` does not divide them, the last band or chunk ends at the
    boundary and overlaps the one before."""

    rows: int
    cols: int
    col: int
    period: int
    ncols: int

    @property
    def bands(self) -> int:
        """Bands of rows in a period."""
        return cdiv(self.period, self.rows)

    @property
    def chunks(self) -> int:
        """Chunks of columns in a row."""
        return cdiv(self.ncols, self.cols)

    @property
    def waste(self) -> Fraction:
        """Points computed over points of the output (above 1 where bands or chunks overlap)."""
        return Fraction(self.bands * self.rows, self.period) * Fraction(self.chunks * self.cols, self.ncols)

    @property
    def overlap(self) -> tuple[bool, bool]:
        """Whether the last band of a period, and the last chunk of a row, overlap the one before."""
        return self.period % self.rows != 0, self.ncols % self.cols != 0


@dataclass(frozen=True)
class Tiling:
    launch: ComputeLaunch  # with its final axes and placements
    persistent: bool
    config: LaunchConfig
    autotune: tuple[LaunchConfig, ...]  # empty unless autotuning
    masked: tuple[str, ...]  # axes whose lanes can fall outside the box
    index_dtype: DType  # int32 or int64
    grid_y_max: int  # the target's limit on a launch grid's second dimension
    unroll: int = 0  # rnumel of a reduction unrolled into a pointwise tile (0: not unrolled)
    split: int = 1  # chunks of a split reduction (1: not split)
    part: str = "whole"  # "whole" | "partial" (a split's chunks) | "finish" (combines the chunks)
    row_split: bool = False  # a 2D tile of rows (y) x a row's inner points (x): index arithmetic per row
    walk: int = 0  # a sliding window: rows per program, walked in order (YBLOCK); 0: no walk
    walk_period: int = 0  # bands of rows never cross a multiple of this many rows
    # A register window (codegen.cells): the cells a program unrolls, XBLOCK points of a column
    # each; None otherwise.
    cells: Cells | None = None
    # The launch where thread-block clusters are not available, when `config` uses them
    # (the wrapper picks one at run time); None when `config` runs everywhere.
    fallback: LaunchConfig | None = None

    @property
    def transposed(self) -> bool:
        """A pointwise 2D tile that makes a transposed access coalesced."""
        return (
            self.launch.kind == "pointwise"
            and len(self.launch.axes) == 2
            and not (self.unroll or self.row_split or self.walk or self.cells)
        )

    @property
    def configs(self) -> tuple[LaunchConfig, ...]:
        """Every launch the kernel may run with (autotune candidates, or the fixed launch and its
        fallback): masks and grid limits hold for all of them."""
        fixed = (self.config,) if self.fallback is None else (self.config, self.fallback)
        return self.autotune or fixed

    @property
    def grid_2d(self) -> bool:
        """Whether a 2D tile launches on a 2D grid (program_id(0) along x, program_id(1) along y):
        y tiles must fit the grid's second dimension."""
        axes = self.launch.axes
        if len(axes) != 2 or axes[0].name != "y":
            return False
        return all(cdiv(axes[0].numel, c.block("YBLOCK")) <= self.grid_y_max for c in self.configs)

    def grid_dims(self, config: LaunchConfig) -> tuple[dict[str, int], ...]:
        """Per grid dimension, the (block, numel) pairs whose tile counts multiply into it."""
        axes = [a for a in self.launch.axes if a.name != "r0_"]
        if self.cells:  # program_id(0): the row's column chunks x their XBLOCK-point slices
            y, x = axes
            c = self.cells
            return ({x.block: c.chunks * c.col}, {y.block: y.numel // c.period * c.bands * c.rows})
        if self.part == "partial":
            return ({a.block: a.numel for a in axes}, {"": self.split})
        if self.grid_2d:
            return tuple({a.block: a.numel} for a in reversed(axes))
        return ({a.block: a.numel for a in axes},)

    def grid(self, config: LaunchConfig) -> tuple[int, ...]:
        return tuple(
            prod(n if not b else cdiv(n, config.block(b)) for b, n in dim.items())
            for dim in self.grid_dims(config)
        )
