"""A register window: a program unrolls `cells.rows` rows x `cells.cols` columns of cells (XBLOCK
points of a column each) so that cells share their stencil's loads (`codegen.windows.register`,
`codegen.windows.register_emit`); `rnumel` points of an unrolled reduction each (0: a pointwise launch)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from fuseopt.codegen.common import cdiv


@dataclass(frozen=True)
class Cells:
    """A register window's shape (codegen.windows.register): a program covers `rows` consecutive rows x
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
class RegisterWindow:
    cells: Cells
    rnumel: int = 0


def applies(needed: int, distinct: int, share_ratio: int) -> bool:
    """Whether the cells share at least 1/`share_ratio` of the loads they need."""
    return needed > 0 and share_ratio * (needed - distinct) >= needed


def cost(window: RegisterWindow, distinct: int) -> Fraction:
    """Values loaded a point of the output: the window's distinct loads over its cells, points
    computed twice by overlapping bands or chunks counted (`Cells.waste`)."""
    c = window.cells
    return Fraction(distinct, c.rows * c.cols) * c.waste
