"""A register window's program and cells (`codegen.windows.register` chooses the shape): the program's base
from its ids, then every cell, row by row, the kernel's nodes at the cell's row and column.
"""

from __future__ import annotations

from fuseopt.codegen.common import TL_DTYPE
from fuseopt.codegen.reductions import ReductionEmitter
from fuseopt.codegen.values import LoopBlock, Stmt
from fuseopt.ir.dtypes import DType


class RegisterWindowEmitter(ReductionEmitter):
    """The register-window part of the emitter."""

    def cells_prologue(self) -> None:
        """A register window's program: program_id(0) picks a chunk of `cols` columns and an
        XBLOCK-point slice of a column (xindex: the slice in the chunk's first column),
        program_id(1) a band of YBLOCK rows (yoffset: its first row); cells shift both. Where
        `cols` does not divide a row's columns (or `rows` the period of the rows), a row's last
        chunk (a period's last band) ends at its last column (row) and overlaps the one before:
        those points are computed and stored twice, the same values (a point's value depends only
        on the kernel's inputs: buffers of earlier kernels, never written by this one)."""
        c = self.cells
        assert c is not None
        over_rows, over_cols = c.overlap
        cast = ".to(tl.int64)" if self.idt == DType.int64 else ""
        one = f"tl.zeros([1], {TL_DTYPE[self.idt]})"
        pid = self.emit(f"tl.program_id(0){cast}", [], self.idt, name="pid")
        first = f"pid // ({c.col} // XBLOCK) * {c.cols}"
        if over_cols:
            first = f"tl.minimum({first}, {c.ncols - c.cols})"
        col0 = self.emit(first, [pid], self.idt, name="xcol0")
        xoff = self.emit(
            f"xcol0 * {c.col} + pid % ({c.col} // XBLOCK) * XBLOCK", [pid, col0], self.idt, name="xoffset"
        )
        self.axis_val["x"] = self.emit(
            "xoffset + tl.arange(0, XBLOCK)", [xoff], self.idt, name="xindex", axes=("x",)
        )
        # Digits of whole columns and rows are the same for every point of a cell, so they run on
        # [1] tensors (a 0-d scalar would trip the interpreter, see RowWalk.prologue), once, not
        # per point, and from the program's ids rather than from its flat offsets: the compiler
        # then sees a column as `chunk * cols` and a row as `band * rows`, and folds the bounds
        # checks of a stencil's cells into a few predicates (explore rounds 34-39).
        self.cells_col = self.emit(f"xcol0 + {one}", [col0], self.idt, name="xcol")
        self.cells_ypid = self.emit(f"tl.program_id(1){cast} + {one}", [], self.idt, name="ypid")
        if over_rows:
            self.cells_yrow = self.emit(
                f"tl.minimum(ypid % {c.bands} * YBLOCK, {c.period - c.rows})",
                [self.cells_ypid],
                self.idt,
                name="yrow",
            )
            first, deps = f"ypid // {c.bands} * {c.period} + yrow", [self.cells_ypid, self.cells_yrow]
        else:
            first, deps = "ypid * YBLOCK", [self.cells_ypid]
        self.axis_val["y"] = self.emit(first, deps, self.idt, name="yoffset")

    def cells_body(self) -> None:
        """Every cell of a register window, row by row: the kernel's nodes at the cell's row and
        column (loads that cells share are emitted once, by the emitter's CSE)."""
        c = self.cells
        assert c is not None
        x0, y0 = self.axis_val["x"], self.axis_val["y"]
        for t in range(c.rows):
            start = len(self.top)
            for s in range(c.cols):
                self.axis_val["y"], self.axis_val["x"] = y0.shifted(t), x0.shifted(s * c.col)
                self.results = {}  # a reduction's result is the cell's own
                self.cell_loads.append({})
                for p in self.launch.placements:
                    if p.role == "reduction":
                        self.reduction(p)
                    else:
                        self.pointwise(p)
            # The row's stores after all of its loads: a load cannot move above a store (the
            # buffers may alias), so interleaved they would keep one cell's loads in flight at a
            # time (explore round 36).
            row = self.top[start:]
            stores: list[Stmt | LoopBlock] = [it for it in row if isinstance(it, Stmt) and it.effect]
            self.top[start:] = [it for it in row if not (isinstance(it, Stmt) and it.effect)] + stores
        self.axis_val["x"], self.axis_val["y"] = x0, y0

    def cells_counts(self) -> tuple[int, int]:
        """(loads of every cell together, distinct loads) of a register window."""
        return sum(len(c) for c in self.cell_loads), len(self.window_loads)
