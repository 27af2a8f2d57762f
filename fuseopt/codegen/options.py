"""What the generator generates for (`CodegenOptions`: a target, switches, overrides of its tuned
constants) and one launch of a kernel (`LaunchConfig`: blocks, warps, cluster size). Below the
strategies (`codegen.strategies`) and the tiling that holds one (`codegen.tiling`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fuseopt.targets import DEFAULT
from fuseopt.targets.base import Target, Tuning

# Overrides of the target's tuned constants that CodegenOptions takes (tests shrink the blocks so
# that tiny shapes still take every path; `fuseopt.targets.base.Tuning` says what each means).
TUNING_OVERRIDES = (
    "persistent_rnumel",
    "persistent_aligned_rnumel",
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


# The strategies `CodegenOptions.strategy` can name: the modules of `strategies.TABLE`, in its
# order, then the windows (`codegen.choice`).
STRATEGY_NAMES = (
    *("tile_2d", "row_split", "tile_1d", "unrolled", "persistent_row", "split", "looped_row"),
    *("sliding_window", "register_window"),
)


@dataclass(frozen=True)
class CodegenOptions:
    """What the generator generates for: a target GPU (`fuseopt.targets`: its hardware facts and
    tuned constants), switches, and overrides of the target's values (None: the target's). The
    rules read `gpu`, the target with the overrides applied, and its `tuning`."""

    target: Target = DEFAULT
    autotune: bool = False
    tile_2d: bool = True  # allow 2D tiles for transposes
    # Register windows (see codegen.windows.register): (rows, columns) of cells to take alone, where set.
    window_shape: tuple[int, int] | None = None
    # The strategy to take where it applies (a module of `codegen.strategies`: "split",
    # "persistent_row", ...), whatever the cost model says; None: the one it says is fastest.
    strategy: str | None = None
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
    # Loop fission (codegen.fission): a looped reduction's r loops as launches of their own.
    # None: where the cost model says that is faster; True: wherever a looped reduction has
    # loops to take apart; False: never.
    fission: bool | None = None
    persistent_rnumel: int | None = None
    persistent_aligned_rnumel: int | None = None
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
        if self.strategy is not None and self.strategy not in STRATEGY_NAMES:
            raise ValueError(f"unknown strategy {self.strategy!r}: one of {', '.join(STRATEGY_NAMES)}")
        gpu = self.target
        given = {name: getattr(self, name) for name in TUNING_OVERRIDES if getattr(self, name) is not None}
        if self.max_r0_block is not None:  # no R0_BLOCK above it, a widened looped one included
            given["looped_max_r0_block"] = min(self.max_r0_block, gpu.tuning.looped_max_r0_block)
        if self.persistent_rnumel is not None and self.persistent_aligned_rnumel is None:
            given["persistent_aligned_rnumel"] = self.persistent_rnumel  # rows up to it, aligned or not
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
