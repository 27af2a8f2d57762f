"""Tile shapes and launch parameters of each compute kernel (deterministic, per shape).

Pointwise kernels are 1D unless reads and writes disagree on which flat position is contiguous
(a transpose): then a 2D tile [YBLOCK, XBLOCK] splits the flat index at the transposed access's
contiguous loop so both sides are coalesced (Triton picks each access's layout from its
contiguity). Reductions are persistent (one [XBLOCK, R0_BLOCK] tile holds whole rows) up to
`persistent_aligned_rnumel` (`persistent_rnumel` for rows that start inside a vector), looped
otherwise; the tile leans towards x when the reduced data is contiguous along x (outer
reductions). Masks are dropped on an axis whose size every block candidate divides. Index
arithmetic is int64 only where some intermediate of an index can leave int32. Every size, limit
and count of programs comes from the target (`CodegenOptions.gpu`: `fuseopt.targets`, whose files
say why each tuned constant has its value).
"""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.common import cdiv, prod
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies import RegisterWindow, SplitPartial, Strategy
from fuseopt.ir.dtypes import DType

__all__ = ["CodegenOptions", "LaunchConfig", "Tiling"]  # the options, where callers import them


@dataclass(frozen=True)
class Tiling:
    launch: ComputeLaunch  # with its final axes and placements
    strategy: Strategy  # the kernel's shape (`codegen.strategies`)
    config: LaunchConfig
    autotune: tuple[LaunchConfig, ...]  # empty unless autotuning
    masked: tuple[str, ...]  # axes whose lanes can fall outside the box
    index_dtype: DType  # int32 or int64
    grid_y_max: int  # the target's limit on a launch grid's second dimension
    # The launch where thread-block clusters are not available, when `config` uses them
    # (the wrapper picks one at run time); None when `config` runs everywhere.
    fallback: LaunchConfig | None = None
    # The strategies the cost model weighed for this launch: (name, estimated us, taken), in the
    # table's order; empty where one applied or one was forced (the kernel's header prints them).
    weighed: tuple[tuple[str, float, bool], ...] = ()
    # On the first kernel of a launch whose r loops the cost model took apart (`codegen.fission`):
    # the estimated us of the loops apart and of the launch fused.
    fission: tuple[float, float] | None = None

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
        s = self.strategy
        if isinstance(s, RegisterWindow):  # program_id(0): the row's column chunks x their slices
            y, x = axes
            c = s.cells
            return ({x.block: c.chunks * c.col}, {y.block: y.numel // c.period * c.bands * c.rows})
        if isinstance(s, SplitPartial):
            return ({a.block: a.numel for a in axes}, {"": s.chunks})
        if self.grid_2d:
            return tuple({a.block: a.numel} for a in reversed(axes))
        return ({a.block: a.numel for a in axes},)

    def grid(self, config: LaunchConfig) -> tuple[int, ...]:
        return tuple(
            prod(n if not b else cdiv(n, config.block(b)) for b, n in dim.items())
            for dim in self.grid_dims(config)
        )
