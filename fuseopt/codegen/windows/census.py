"""The loads of a window kernel, counted from the IR: what `codegen.choice` weighs a sliding or a
register window by, with no code emitted.

Both counts follow the emitter's rules for what becomes one load statement, so they are the loads
the kernel will have (`tests/test_windows_census.py` checks them against the emitter's own):

- A sliding window (`row_loads`): the loads of one row of the walk -- those whose index or mask
  depends on the row (a load that does not is hoisted out of the row loop) -- by their keys
  (`sliding.load_key`; a load without a key is one of its own). A fused producer's value is
  computed once a point of emission, its loads with it; a reduction's result is read, not
  recomputed. An unrolled reduction whose points fall into rows carried from row to row
  (`sliding.row_groups`) loads only its first group in the row.
- A register window (`cell_loads`): the loads of every cell, by buffer, address and mask, with
  each cell's position folded into the address as the emitter folds it (`_Cell`): two cells that
  read one element under one mask make one load. Only loads that vary along x count (a load
  the whole slice shares is one value a cell).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fuseopt.codegen.indexing import Digit, axis_digit, merged_terms
from fuseopt.codegen.schedule import Frame, Placement, frame_of
from fuseopt.codegen.strategies import Cells, RegisterWindow, SlidingWindow
from fuseopt.codegen.tiling import Tiling
from fuseopt.codegen.windows.sliding import (
    Key,
    KeyContext,
    Walk,
    WindowLoad,
    carry_plan,
    index_ops,
    load_key,
    row_groups,
    value_key,
)
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Const, Expr, IndexValue, Load, Masked, Reduce, Var

ROW = "yindex"  # the base of the walked (or celled) row axis

# Called for each load of a node's value at one point of emission: (the load, its node, the
# unrolled reduction's point, the conditions of the masked values around it).
OnLoad = Callable[[Load, Placement, "int | None", "tuple[Expr, ...]"], None]


def _walk_loads(
    placements: tuple[Placement, ...],
    produced: Mapping[str, Placement],
    on_load: OnLoad,
    points: Mapping[str, list[int]],
) -> None:
    """Every load the emitter meets in the kernel's nodes, in emission order: unrolled reduction
    points as `points` gives them (node -> points), fused producers once a point of emission
    (their loads unmasked by the reader's conditions), masked values' bodies with their
    condition, a constant condition's taken branch only."""
    done: set[tuple[str, int | None]] = set()

    def visit(e: Expr, p: Placement, point: int | None, conds: tuple[Expr, ...]) -> None:
        if isinstance(e, Load):
            q = produced.get(e.buffer)
            if q is None:
                _index_loads(e.index, p, point, conds)
                on_load(e, p, point, conds)
            elif q.role != "reduction" and (q.node.name, point) not in done:
                done.add((q.node.name, point))
                visit(q.node.value, q, point, ())
            return
        if isinstance(e, Masked):
            if isinstance(e.cond, Const):
                visit(e.body if e.cond.value else e.other, p, point, conds)
                return
            visit(e.cond, p, point, conds)
            visit(e.body, p, point, (*conds, e.cond))
            visit(e.other, p, point, conds)
            return
        for c in e.children():
            visit(c, p, point, conds)

    def _index_loads(e: Expr, p: Placement, point: int | None, conds: tuple[Expr, ...]) -> None:
        if isinstance(e, Load):
            visit(e, p, point, conds)
            return
        for c in e.children():
            _index_loads(c, p, point, conds)

    for p in placements:
        if p.role == "reduction":
            red = p.node.value
            assert isinstance(red, Reduce)
            for r in points[p.node.name]:
                visit(red.x, p, r, ())
        else:
            visit(p.node.value, p, None, ())


# -- sliding windows ---------------------------------------------------------------------------------


def row_loads(tiling: Tiling) -> tuple[dict[Key, Key], int, int]:
    """A sliding window's carries (a load's key -> the key of the load whose previous row it
    reads), the values a row needs (distinct loads of the row, and reduction points carried in
    partial results) and how many of them come from the row before."""
    launch, s = tiling.launch, tiling.strategy
    assert isinstance(s, SlidingWindow)
    frame = frame_of(launch, s.rnumel)
    walk = Walk(ROW, s.period)
    produced, stores = launch.producer(), frozenset(launch.stores)
    opaque = frozenset(produced) | stores
    loads: list[WindowLoad] = []

    def context(p: Placement, point: int | None) -> KeyContext:
        consts = {} if point is None else {"r0_index": point}
        return KeyContext(
            frame.digits[p.node.name], p.node.var_sizes, frame.extents, frame.flats, walk, consts
        )

    def on_load(ld: Load, p: Placement, point: int | None, conds: tuple[Expr, ...]) -> None:
        kc = context(p, point)
        if not any(_on_row(kc.bind(e), kc.digits, frame) for e in (ld.index, *conds)):
            return  # the same at every row: loaded once, before the row loop
        key = prev = None
        if ld.buffer not in stores:
            key = load_key(ld.buffer, ld.index, conds, kc, 0)
            prev = None if key is None else load_key(ld.buffer, ld.index, conds, kc, -1)
        if key is None:  # never carried: a load of its own
            key = ("load", ld.buffer, kc.bind(ld.index), tuple(kc.bind(c) for c in conds))
        loads.append(WindowLoad(key, prev))

    carried_points = 0
    points: dict[str, list[int]] = {}
    for p in launch.placements:
        if p.role == "reduction":
            red = p.node.value
            assert isinstance(red, Reduce)
            now = [value_key(red.x, context(p, r), 0, opaque) for r in range(s.rnumel)]
            before = [value_key(red.x, context(p, r), -1, opaque) for r in range(s.rnumel)]
            groups = row_groups(now, before)
            points[p.node.name] = list(range(s.rnumel)) if groups is None else groups[0]
            carried_points += 0 if groups is None else sum(len(g) for g in groups[1:])
    _walk_loads(launch.placements, produced, on_load, points)
    plan = carry_plan(loads)
    return plan, len({ld.key for ld in loads}) + carried_points, len(plan) + carried_points


def _row_base(base: str) -> bool:
    return base == ROW or base.startswith("flat_") and "y" in base.removeprefix("flat_").split("_")


def _on_row(e: Expr, digits: Mapping[str, Digit | None], frame: Frame) -> bool:
    """Whether the emitted value of `e` depends on the row: its index arithmetic computed, as the
    emitter computes it, from the row axis or a flat index over it."""
    if isinstance(e, Const):
        return False
    if isinstance(e, Load):
        return _index_on_row(e.index, digits, frame)
    if (
        isinstance(e, Var | IndexValue)
        or isinstance(e, Binary)
        and e.op in ("add", "sub", "mul", "floordiv", "mod")
    ):
        return _index_on_row(e.index if isinstance(e, IndexValue) else e, digits, frame)
    return any(_on_row(c, digits, frame) for c in e.children())


def _index_on_row(e: Expr, digits: Mapping[str, Digit | None], frame: Frame) -> bool:
    for atom, _ in merged_terms(linear_form(e).coeffs, digits, frame.extents):
        if isinstance(atom, Digit | Var):
            d = atom if isinstance(atom, Digit) else digits.get(atom.name)
            found = d is not None and _row_base(d.base)
        elif isinstance(atom, IndexValue | Load):
            found = _index_on_row(atom.index, digits, frame)
        elif isinstance(atom, Binary) and atom.op in ("floordiv", "mod") and isinstance(atom.b, Const):
            one = _axis_digit(atom, digits, frame)
            found = _row_base(one.base) if one is not None else _index_on_row(atom.a, digits, frame)
        else:
            found = any(_index_on_row(c, digits, frame) for c in atom.children())
        if found:
            return True
    return False


def _axis_digit(atom: Expr, digits: Mapping[str, Digit | None], frame: Frame) -> Digit | None:
    """`indexing.axis_digit` in the launch's frame (as `ExpressionEmitter.digit_atom` asks it)."""
    return axis_digit(atom, digits, frame.flats, frame.extents)


# -- register windows --------------------------------------------------------------------------------

Ident = tuple[object, ...]
Term = tuple[Ident | None, int, bool]  # (what a cell names, the cell's constant offset, varies along x)
Address = tuple[tuple[tuple[int, Ident], ...], int]  # (coefficient, term) pairs, the constant


@dataclass(frozen=True)
class _Cell:
    """The address arithmetic of one cell (t, s) of a register window, as the emitter folds it
    (`ExpressionEmitter.cell_digit`): a digit of the row or the column is the program's digit
    plus a constant where that is exact, else computed from the cell's own index."""

    cells: Cells
    frame: Frame
    t: int
    s: int
    x_numel: int

    def digit(self, d: Digit, point: int | None) -> Term:
        c = self.cells
        if d.base == "r0_index":  # an unrolled reduction's point: a constant
            assert point is not None
            q = point // d.div
            return None, q if d.mod is None else q % d.mod, False
        if d.base == ROW:
            if d.div == 1 and d.mod is None:
                return ("row",), self.t, False
            unit = c.period if c.overlap[0] else c.rows  # a band stays within a multiple of it
            if d.div == 1 and d.mod is not None and d.mod % unit == 0:
                return ("row", d), self.t, False
            if d.div % unit == 0:
                return ("row", d), 0, False
            return ("own", d, self.t), 0, False
        k = self.s * c.col
        if d.base == "xindex":
            if d.div == 1 and d.mod is None:
                return ("x",), k, True
            if d.mod is not None and c.col % (d.div * d.mod) == 0:  # within a column
                return ("x", d), 0, True
            if d.div == c.col and (d.mod is None or d.mod >= c.ncols):  # the column
                return ("column",), self.s, False
            return ("own", d, k), 0, True
        shift = self.t * self.x_numel + k  # a flat index over (y, x)
        return (
            (("flat", d.base), shift, True) if d.div == 1 and d.mod is None else (("own", d, shift), 0, True)
        )

    def index(self, e: Expr, digits: Mapping[str, Digit | None], point: int | None) -> tuple[Address, bool]:
        """(the address arithmetic's terms and constant, whether it varies along x)."""
        f = linear_form(e)
        const, along = f.const, False
        terms: list[tuple[int, Ident]] = []
        for atom, k in merged_terms(f.coeffs, digits, self.frame.extents):
            ident, shift, x = self.atom(atom, digits, point)
            const += k * shift
            along |= x
            if ident is not None:
                terms.append((k, ident))
        return (tuple(terms), int(const)), along

    def atom(self, atom: Expr | Digit, digits: Mapping[str, Digit | None], point: int | None) -> Term:
        if isinstance(atom, Digit | Var):
            d = atom if isinstance(atom, Digit) else digits.get(atom.name)
            return (None, 0, False) if d is None else self.digit(d, point)
        if isinstance(atom, IndexValue):
            (terms, const), x = self.index(atom.index, digits, point)
            return (("index", terms), const, x) if terms else (None, const, False)
        if isinstance(atom, Binary) and atom.op in ("floordiv", "mod") and isinstance(atom.b, Const):
            one = _axis_digit(atom, digits, self.frame)
            if one is not None:
                return self.digit(one, point)
            c = int(atom.b.value)
            a, x = self.index(atom.a, digits, point)
            if not a[0]:
                return None, a[1] // c if atom.op == "floordiv" else a[1] % c, False
            return (atom.op, c, a), 0, x
        if isinstance(atom, Binary) and atom.op in ("mul", "minimum", "maximum"):
            (a, xa), (b, xb) = self.index(atom.a, digits, point), self.index(atom.b, digits, point)
            if atom.op != "mul" and not a[0] and not b[0]:
                pick = min if atom.op == "minimum" else max
                return None, pick(a[1], b[1]), False
            return (atom.op, a, b), 0, xa or xb
        if isinstance(atom, Load):  # a load inside an index: what it reads at this cell
            return ("load", atom.buffer, self.index(atom.index, digits, point)[0]), 0, True
        return ("own", atom, self.t, self.s), 0, True  # anything else: the cell's own

    def value(self, e: Expr, p: Placement, point: int | None) -> tuple[object, bool]:
        """A mask condition's identity at this cell (index arithmetic by `index`), and whether it
        varies along x."""
        digits = self.frame.digits[p.node.name]
        if isinstance(e, Const):
            return ("c", e.dtype, e.value), False
        if isinstance(e, Var | IndexValue) or e.dtype == DType.int64 and index_ops(e, p.node.var_sizes):
            return self.index(e.index if isinstance(e, IndexValue) else e, digits, point)
        parts: list[object] = []
        along = False
        for c in e.children():
            k, x = self.value(c, p, point)
            parts.append(k)
            along |= x
        return (type(e).__name__, getattr(e, "op", None), e.dtype, *parts), along


def cell_loads(tiling: Tiling) -> tuple[int, int]:
    """A register window's loads that vary along x: those of every cell together (each cell's
    distinct loads), and how many distinct loads they are."""
    launch, s = tiling.launch, tiling.strategy
    assert isinstance(s, RegisterWindow)
    frame = frame_of(launch, s.rnumel)
    x_numel = next(a.numel for a in launch.axes if a.name == "x")
    points = {p.node.name: list(range(s.rnumel)) for p in launch.placements if p.role == "reduction"}
    every: dict[Ident, None] = {}
    needed = 0
    for t in range(s.cells.rows):
        for col in range(s.cells.cols):
            mine = _loads_of_cell(
                launch.placements, launch.producer(), points, _Cell(s.cells, frame, t, col, x_numel)
            )
            needed += len(mine)
            every.update(mine)
    return needed, len(every)


def _loads_of_cell(
    placements: tuple[Placement, ...],
    produced: Mapping[str, Placement],
    points: Mapping[str, list[int]],
    cell: _Cell,
) -> dict[Ident, None]:
    """A cell's distinct loads that vary along x, by buffer, address and mask."""
    mine: dict[Ident, None] = {}

    def on_load(ld: Load, p: Placement, point: int | None, conds: tuple[Expr, ...]) -> None:
        addr, along = cell.index(ld.index, cell.frame.digits[p.node.name], point)
        masks = [cell.value(c, p, point) for c in conds]
        if along or any(x for _, x in masks):
            mine[(ld.buffer, addr, tuple(m for m, _ in masks))] = None

    _walk_loads(placements, produced, on_load, points)
    return mine


__all__ = ["cell_loads", "row_loads"]
