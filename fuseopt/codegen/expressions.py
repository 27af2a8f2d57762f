"""Values of a kernel's expressions (`ExpressionEmitter`): axis values and digits (a register
window cell's digits from its program ids), index expressions, loads and their addresses,
fused reads, arithmetic, casts and stores.
"""

from __future__ import annotations

from dataclasses import replace

from fuseopt.analysis.access_match import FusedReadMismatch, match_read
from fuseopt.codegen.common import TL_DTYPE, CodegenError, wrap_int
from fuseopt.codegen.emitter import (
    TENSOR_HELPERS,
    EmitterCore,
    digit_text,
    index_like,
    int32_exact,
    is_weak,
    literal_text,
    paren,
)
from fuseopt.codegen.eviction import eviction_hint, reads_again
from fuseopt.codegen.indexing import Digit, axis_digit, merged_terms
from fuseopt.codegen.layout import LINE_LENGTH
from fuseopt.codegen.rules import (
    INT_DIV_BY_LITERAL,
    POW_BY_CONST,
    binary_rule,
    divisor_reciprocal,
    rounds_to_integer,
    unary_rule,
)
from fuseopt.codegen.schedule import Placement
from fuseopt.codegen.strategies import Tile2D
from fuseopt.codegen.values import NodeCtx, Val
from fuseopt.codegen.windows.sliding import index_ops
from fuseopt.ir.bounds import interval, linear_form
from fuseopt.ir.dtypes import DType, compute_dtype, promote
from fuseopt.ir.expr import (
    COMPARE_OPS,
    Binary,
    Cast,
    Const,
    Expr,
    IndexValue,
    Load,
    Masked,
    Reduce,
    Unary,
    Var,
    Where,
    to_text,
)
from fuseopt.ir.fold import fold_index
from fuseopt.ir.typecheck import BINARY_RESULT, UNARY_RESULT


class ExpressionEmitter(EmitterCore):
    """A kernel's values and stores, over the core's statements."""

    # -- axis values and digits ---------------------------------------------------------------------
    def base_val(self, base: str) -> Val:
        if base == "r0_index" and self.unroll:
            return self.axis_val["r0_"]  # the unrolled reduction's current point, a literal
        for a in self.axes:
            if base == self.axes[a].index and a in self.axis_val:
                return self.axis_val[a]
        # A segment flattened over several axes (no loop boundary at the split).
        names = base.removeprefix("flat_").split("_")
        axes = [a for a in self.axes if a.rstrip("_") in names]
        inner = self.axes[axes[-1]]
        outer, k_outer = self.axis_val[axes[0]].rooted()
        ival, k_inner = self.axis_val[inner.name].rooted()
        flat = self.emit(f"{outer.text} * {inner.numel} + {ival.text}", [outer, ival], self.idt, name=base)
        return flat.shifted(k_outer * inner.numel + k_inner)

    def var(self, ctx: NodeCtx, name: str) -> Val:
        d = ctx.digits[name]
        if d is None:
            return Val("0", self.idt, const=0)
        return self.digit_val(d)

    def digit_val(self, d: Digit) -> Val:
        """The digit `d` of its base axis' value: a constant where the base is one, the base
        itself for the whole index, a register window's form where it has one, else computed."""
        base = self.base_val(d.base)
        if base.literal:
            assert base.const is not None
            q = int(base.const) // d.div
            q = q if d.mod is None else q % d.mod
            return Val(str(q), self.idt, const=q)
        if d.div == 1 and d.mod is None:
            return base
        if self.cells and (cell := self.cell_digit(d, base)) is not None:
            return cell
        return self.emit(digit_text(d, base.text), [base], self.idt, prefix=self._digit_prefix(d.base, base))

    def cell_digit(self, d: Digit, base: Val) -> Val | None:
        """A digit of a register window cell's axis value (`root + k`): the digit at the program's
        base (from its ids: `cells_prologue`) plus a constant where that is exact (see
        `codegen.windows.register`); None where it is not (`digit_val` then computes it from `root + k`)."""
        root, k = base.rooted()
        c = self.cells
        assert c is not None and self.cells_ypid is not None and self.cells_col is not None
        over_rows, _ = c.overlap
        found: tuple[str, list[Val], int] | None = None  # the base's digit, its deps, the shift
        ypid = self.cells_ypid
        if d.base == self.axes["y"].index:  # a band's first row: ypid * rows, or within a period
            unit = c.period if over_rows else c.rows  # a band stays within a multiple of it
            if d.div == 1 and d.mod is not None and d.mod % unit == 0:
                if not over_rows:
                    found = (f"ypid % {d.mod // c.rows} * {c.rows}", [ypid], k)
                else:
                    assert self.cells_yrow is not None
                    found = (
                        f"ypid // {c.bands} % {d.mod // c.period} * {c.period} + yrow",
                        [ypid, self.cells_yrow],
                        k,
                    )
            elif d.div % unit == 0:
                q = d.div // c.rows if not over_rows else c.bands * (d.div // c.period)
                found = (f"ypid // {q}" + ("" if d.mod is None else f" % {d.mod}"), [ypid], 0)
        elif d.base == self.axes["x"].index:  # a chunk's first column, plus a slice of it
            if d.mod is not None and c.col % (d.div * d.mod) == 0:  # within a column
                found = (digit_text(d, root.text), [root], 0)
            elif d.div == c.col and (d.mod is None or d.mod >= c.ncols):  # the column
                return self.cells_col.shifted(k // c.col)
        if found is None:
            return None
        text, deps, shift = found
        rd = self.emit(text, deps, self.idt, prefix=self._digit_prefix(d.base, root))
        return rd.shifted(shift)

    def _digit_prefix(self, base_name: str, base: Val) -> str:
        if base_name == "yindex":
            return "y"
        return base.axes[0] if len(base.axes) == 1 else "x"

    # -- index expressions -------------------------------------------------------------------------
    def index(self, e: Expr, ctx: NodeCtx, conds: tuple[Val, ...]) -> Val:
        """An integer index over the node's loop variables as an expression text (not a statement)."""
        f = linear_form(e)
        const = f.const
        terms: list[tuple[int, Val]] = []
        for atom, k in merged_terms(f.coeffs, ctx.digits, self.extents):
            a = self.digit_val(atom) if isinstance(atom, Digit) else self.index_atom(atom, ctx, conds)
            if a.const is not None:
                const += k * int(a.const)
            else:
                a, shift = a.rooted()  # a register window cell's offset, folded
                const += k * shift
                terms.append((k, a))
        if not terms:
            return Val(str(const), self.idt, const=const)
        text = ""
        for k, a in terms:
            term = a.text if k in (1, -1) else f"{abs(k)} * {paren(a.text)}"
            if not text:
                text = term if k > 0 else f"-{paren(term)}"
            else:
                text += f" {'+' if k > 0 else '-'} {term}"
        deps = [a for _, a in terms]
        out = Val(
            text, self.idt, self.union(*(d.axes for d in deps)), max(d.level for d in deps), self.uses(deps)
        )
        if self.cells:  # the constant kept apart: a cell's address is its base pointer + it
            return out.shifted(const)
        if const:
            text += f" {'+' if const > 0 else '-'} {abs(const)}"
        return replace(out, text=text)

    def index_atom(self, atom: Expr, ctx: NodeCtx, conds: tuple[Val, ...]) -> Val:
        if isinstance(atom, Var):
            return self.var(ctx, atom.name)
        if isinstance(atom, IndexValue):  # index(e) inside integer arithmetic is e itself
            return self.index(atom.index, ctx, conds)
        if isinstance(atom, Load):
            v = self.load(atom, ctx, conds)
            return (
                v if v.dtype == self.idt else self.emit(f"{v.text}.to({TL_DTYPE[self.idt]})", [v], self.idt)
            )
        if isinstance(atom, Binary) and atom.op in ("floordiv", "mod") and isinstance(atom.b, Const):
            digit = self.digit_atom(atom, ctx)
            if digit is not None:
                return digit
            c = int(atom.b.value)
            a = self.index(atom.a, ctx, conds)
            if a.literal:
                assert a.const is not None
                q = int(a.const) // c if atom.op == "floordiv" else int(a.const) % c
                return Val(str(q), self.idt, const=q)
            r = interval(atom.a, ctx.ranges)
            if r is not None and r[0] >= 0:
                sym = "//" if atom.op == "floordiv" else "%"
                text = f"{paren(a.text)} {sym} {c}"
            else:
                fn = "_floordiv_int" if atom.op == "floordiv" else "_remainder"
                text = f"{fn}({a.text}, {c})"
            return Val(text, self.idt, a.axes, a.level, a.names)
        if isinstance(atom, Binary) and atom.op in ("mul", "minimum", "maximum"):
            a, b = self.index(atom.a, ctx, conds), self.index(atom.b, ctx, conds)
            if atom.op == "mul":
                text = f"{paren(a.text)} * {paren(b.text)}"
            else:
                fn = "tl.minimum" if atom.op == "minimum" else "tl.maximum"
                if a.literal and b.literal:
                    assert a.const is not None and b.const is not None
                    m = (min if atom.op == "minimum" else max)(int(a.const), int(b.const))
                    return Val(str(m), self.idt, const=m)
                text = f"{fn}({a.text}, {b.text})"
            deps = [d for d in (a, b) if not d.literal]
            return Val(text, self.idt, self.union(a.axes, b.axes), max(a.level, b.level), self.uses(deps))
        raise CodegenError(f"node {ctx.p.node.name!r}: cannot emit index expression {to_text(atom)!r}")

    def digit_atom(self, atom: Expr, ctx: NodeCtx) -> Val | None:
        """`v // c` or `v % c` of a loop variable as a digit of one tile axis: a digit of a flat
        index that falls on one side of the (y, x) split is computed on that axis alone (a
        [YBLOCK, 1] column instead of the whole tile: `(y * 192 + x) // 6720` is `y // 35`)."""
        d = axis_digit(atom, ctx.digits, self.flats, self.extents)
        return None if d is None else self.digit_val(d)

    # -- loads -------------------------------------------------------------------------------------

    def load(self, ld: Load, ctx: NodeCtx, conds: tuple[Val, ...]) -> Val:
        if ld.buffer in self.produced:
            return self.fused_read(ld, ctx)
        self.loads[ld.buffer] = None
        idx = self.index(ld.index, ctx, conds)
        buf = self.graph.buffer(ld.buffer)
        mask_axes = self.union(idx.axes, *(c.axes for c in conds))
        masks = [self.mask_val[a] for a in mask_axes if a in self.mask_val] + list(conds)
        walk = self.walk if self.loop is not None and max(d.level for d in (idx, *masks)) else None
        key = prev = None
        if walk is not None:  # a load of the row: maybe what another load read a row earlier
            key, prev = walk.load_keys(ld, ctx)
            if key is not None and key in walk.carry:
                return walk.carried_load(ld, ctx, key, prev, masks)
        addr = self.address(ld.buffer, idx, mask_axes)
        args = addr
        if masks:
            other = "0.0" if buf.dtype.is_float else "0"
            args += f", {' & '.join(m.text for m in masks)}, other={other}"
        hint = eviction_hint(
            tile_2d=isinstance(self.strategy, Tile2D),
            reused=reads_again(ld.index, ctx.ranges, ctx.digits),
            looped=self.loop is not None,
            reread=ld.buffer in self.reread,
            broadcast="x" not in idx.axes,
            read_before=ld.buffer in self.read_before,
            streams=self.streams and all(a in idx.axes for a in self.dims),
        )
        if hint is not None:
            args += f', eviction_policy="{hint}"'
        rhs = f"tl.load({args})"
        cdt = compute_dtype(buf.dtype)
        deps = [idx, *masks]
        axes = self.union(idx.axes, mask_axes)
        if cdt == buf.dtype:
            out = self.emit(rhs, deps, cdt, axes=axes)
        else:
            indent = 8 if max(d.level for d in deps) else 4
            if indent + len("tmp000 = ") + len(rhs) + len(".to(tl.float32)") <= LINE_LENGTH:
                out = self.emit(f"{rhs}.to({TL_DTYPE[cdt]})", deps, cdt, axes=axes)
            else:
                # Too long for one line: load, then widen (a chained call would wrap awkwardly).
                out = self.from_storage(self.emit(rhs, deps, buf.dtype, axes=axes))
        if masks:
            self.zero_masked[out.text] = frozenset(m.text for m in masks)
        if walk is not None:
            walk.loaded(key, prev, out)
        if self.cells and "x" in axes:
            self.cell_loads[-1][rhs] = None
            self.window_loads[rhs] = None
        return out

    def fused_read(self, ld: Load, ctx: NodeCtx) -> Val:
        """The producer's value at this point (the planner's check, `match_read`, made sure the
        load reads exactly the element it writes here: a failure is a planner bug)."""
        p = self.produced[ld.buffer]
        m = match_read(p.node, ld, ctx.p.node, self.launch.space)
        if not m.ok:
            raise FusedReadMismatch(
                f"plan kernel {self.launch.plan_kernel!r}: {ctx.p.node.name!r} reads {ld.buffer}"
                f"[{to_text(ld.index)}], which is not the element {p.node.name!r} writes at the same point "
                f"({ld.buffer}[{to_text(p.node.store.index)}]): {m.reason}; the planner should not have "
                "fused them (a bug in fuseopt)"
            )
        v = self.node_value(p)
        return self.from_storage(self.to_storage(v, self.graph.buffer(ld.buffer).dtype))

    def node_value(self, p: Placement) -> Val:
        """A fused producer's value, computed once per point of emission and reused by every read
        (re-expanding it at each read is exponential in a chain of nodes reading the two before).

        A point of emission is all that can change the statements a value becomes: the axis
        values (a register window's cell, an unrolled reduction's point, a sliding window's first
        row), the loop being emitted (its statements live only there) and the sliding window's
        mode. The masks around the read are not: the producer's value is the same everywhere (its
        loads are its own, unmasked by the reader's condition), so it is computed outside them."""
        if p.role == "reduction":
            res = self.results.get(p.node.name)
            if res is None:
                raise FusedReadMismatch(
                    f"plan kernel {self.launch.plan_kernel!r}: the result of reduction {p.node.name!r} is "
                    "read before the reduction finishes (a bug in fuseopt's planner)"
                )
            return res
        key = (
            p.node.name,
            tuple((a, v.text, v.const) for a, v in sorted(self.axis_val.items())),
            id(self.loop),
            None if self.walk is None else self.walk.plain,
        )
        hit = self.values.get(key)
        if hit is None:
            outer, self.cond_exprs = self.cond_exprs, []
            try:
                hit = self.values[key] = self.value(p.node.value, self.ctxs[p.node.name], ())
            finally:
                self.cond_exprs = outer
        return hit

    # -- values ------------------------------------------------------------------------------------
    def value(self, e: Expr, ctx: NodeCtx, conds: tuple[Val, ...]) -> Val:
        assert e.dtype is not None
        if isinstance(e, Const):
            return Val(literal_text(e.value, e.dtype), e.dtype, const=e.value)
        if self.walk is not None and isinstance(e, Binary):
            carried = self.walk.prefix(e, ctx, conds)
            if carried is not None:
                return carried
        if isinstance(e, Load):
            return self.load(e, ctx, conds)
        if isinstance(e, IndexValue):
            # min/max decided by the loop ranges folded, a polynomial that cancels to a constant
            # replaced by it (a pooling window's divisor becomes the literal 9)
            folded = fold_index(e.index, ctx.ranges)
            if isinstance(folded, Const):
                return Val(literal_text(folded.value, DType.int64), DType.int64, const=folded.value)
            if folded != e.index:
                return self.value(replace(e, index=folded), ctx, conds)
        narrow = self.idt == DType.int32 and index_like(e, ctx.ranges)
        if e.dtype == DType.int64 and (narrow or self.cells and index_ops(e, ctx.ranges)):
            # Integer arithmetic of loop variables (a window's bounds checks) as index arithmetic:
            # in int32 where it provably fits (plain // and % on non-negative operands, digits of
            # one tile axis) rather than int64 value arithmetic with sign-correcting helpers; in a
            # register window also in int64, so that its cells' offsets fold and cells name a
            # shared row's or column's bounds checks (and loads) alike.
            idx = self.constant_index(self.index(e.index if isinstance(e, IndexValue) else e, ctx, conds))
            if idx.literal:
                assert idx.const is not None
                return Val(str(idx.const), DType.int64, const=int(idx.const))
            if idx.text.isidentifier():
                return Val(idx.text, self.idt, idx.axes, idx.level, idx.names)
            return self.emit(idx.text, [idx], self.idt)
        if isinstance(e, Var | IndexValue):
            idx = self.constant_index(self.index(e if isinstance(e, Var) else e.index, ctx, conds))
            if idx.literal:
                assert idx.const is not None
                return Val(str(idx.const), DType.int64, const=int(idx.const))
            rhs = idx.text if self.idt == DType.int64 else f"({idx.text}).to(tl.int64)"
            return self.emit(rhs, [idx], DType.int64)
        if isinstance(e, Masked):
            return self.masked(e, ctx, conds)
        if isinstance(e, Where):
            c = self.materialize(self.coerce(self.value(e.cond, ctx, conds), DType.bool))
            res = compute_dtype(e.dtype)
            a = self.coerce(self.value(e.a, ctx, conds), res)
            b = self.coerce(self.value(e.b, ctx, conds), res)
            if a.literal and b.literal:
                a = self.materialize(a, res)
            return self.emit(f"tl.where({c.text}, {a.text}, {b.text})", [c, a, b], res)
        if isinstance(e, Cast):
            return self.cast(self.operand(e, ctx, conds), e.to)
        if isinstance(e, Unary):
            return self.unary(e, self.operand(e, ctx, conds))
        if isinstance(e, Binary):
            return self.binary(e, self.value(e.a, ctx, conds), self.value(e.b, ctx, conds))
        if isinstance(e, Reduce):
            raise CodegenError(f"node {ctx.p.node.name!r}: a reduction inside an expression")
        raise CodegenError(f"node {ctx.p.node.name!r}: no Triton rule for {type(e).__name__}")

    def operand(self, e: Cast | Unary, ctx: NodeCtx, conds: tuple[Val, ...]) -> Val:
        """`e`'s operand: correctly rounded, if a quotient that `e` rounds to an integer."""
        x = e.x
        if isinstance(x, Binary) and x.op == "truediv" and rounds_to_integer(e):
            return self.binary(x, self.value(x.a, ctx, conds), self.value(x.b, ctx, conds), exact=True)
        return self.value(x, ctx, conds)

    def masked(self, e: Masked, ctx: NodeCtx, conds: tuple[Val, ...]) -> Val:
        assert e.dtype is not None
        c = self.coerce(self.value(e.cond, ctx, conds), DType.bool)
        res = compute_dtype(e.dtype)
        if c.literal:
            taken = e.body if c.const else e.other
            return self.coerce(self.value(taken, ctx, conds), res)
        self.cond_exprs.append(e.cond)
        try:
            body = self.coerce(self.value(e.body, ctx, (*conds, c)), res)
        finally:
            self.cond_exprs.pop()
        other = self.coerce(self.value(e.other, ctx, conds), res)
        if (
            other.literal
            and other.const == 0
            and str(other.const)[0] != "-"
            and c.text in self.zero_masked.get(body.text, ())
        ):
            return body  # a load masked by the condition already reads 0 where it fails
        if body.literal and other.literal:
            body = self.materialize(body, res)
        return self.emit(f"tl.where({c.text}, {body.text}, {other.text})", [c, body, other], res)

    def cast(self, v: Val, to: DType) -> Val:
        c = v.const
        if to in (DType.float32, DType.float64) and type(c) is int and abs(c) <= 2**24:
            return Val(literal_text(float(c), to), to, const=float(c))  # exact: a float literal
        if v.literal:
            v = self.materialize(v)
        stored = self.to_storage(v, to)
        return self.from_storage(stored)

    def unary(self, e: Unary, x: Val) -> Val:
        assert e.dtype is not None and e.x.dtype is not None
        res = compute_dtype(e.dtype)
        if e.op == "neg" and x.literal:
            assert x.const is not None
            return Val(literal_text(-x.const, x.dtype), x.dtype, const=-x.const)
        rule = unary_rule(e.op)
        operand = res if UNARY_RESULT.get(e.op) == "float" else compute_dtype(e.x.dtype)
        xv = self.materialize(self.coerce(x, operand), operand)
        template = rule.template(operand)
        if template is None:
            raise CodegenError(f"unary op {e.op!r} is not defined on {e.x.dtype.value} values", code="op")
        if template == "{x}":
            return xv
        return self.emit(template.format(x=xv.text), [xv], res)

    def constant_index(self, idx: Val) -> Val:
        """An index of literals alone that did not fold to one (`0 * 0`: a product of a point's
        coordinates in an unrolled window) as a tensor of the index type: Triton keeps a bare
        arithmetic of literals a compile-time constant, which has no `.to`."""
        if idx.literal or idx.axes or idx.names:
            return idx
        return self.emit(f"tl.full({self.shape(())}, {idx.text}, {TL_DTYPE[self.idt]})", [], self.idt)

    def binary(self, e: Binary, a: Val, b: Val, exact: bool = False) -> Val:
        assert e.dtype is not None and e.a.dtype is not None and e.b.dtype is not None
        res = compute_dtype(e.dtype)
        rule = binary_rule(e.op)
        if BINARY_RESULT.get(e.op) == "bool":
            operand = compute_dtype(promote(e.a.dtype, e.b.dtype, a_weak=is_weak(e.a), b_weak=is_weak(e.b)))
            if operand == DType.int64 and e.op in COMPARE_OPS and int32_exact(a) and int32_exact(b):
                operand = DType.int32  # both sides hold exact int32 values: the same comparison
        else:
            operand = res
        av, bv = self.coerce(a, operand), self.coerce(b, operand)
        template: str | None
        recip = (
            divisor_reciprocal(float(b.const), operand, exact)
            if e.op == "truediv" and b.const is not None
            else None
        )
        if e.op == "truediv" and exact and recip is None and operand == DType.float32:
            template = "tl.div_rn({a}, {b})"
        elif recip is not None:  # x / c as x * (1/c): see divisor_reciprocal
            template = "{a} * {b}"
            lit = b.dtype if b.dtype.is_float else operand  # an integer divisor's reciprocal is a float
            bv = self.coerce(Val(literal_text(recip, lit), lit, const=recip), operand)
        elif e.op == "pow" and operand.is_float and bv.literal and float(bv.const or 0) in POW_BY_CONST:
            template = POW_BY_CONST[float(bv.const or 0)]
            if template == "1":
                return Val(literal_text(1, res), res, const=1.0)
            if template == "{a}":
                return self.materialize(av, operand)
        elif e.op == "pow" and operand == DType.bool and b.literal:
            # pow(b, true) is b, pow(b, false) is 1 (the only pows of bools the type checker admits)
            return self.materialize(av, operand) if b.const else Val("True", res, const=True)
        elif (
            e.op in INT_DIV_BY_LITERAL
            and operand.is_int
            and type(b.const) in (int, bool)
            and wrap_int(int(b.const or 0), operand) not in (0, -1)
        ):
            template = INT_DIV_BY_LITERAL[e.op]  # a divisor the compiler sees: no run-time guards
        else:
            template = rule.template(operand)
        if template is None:
            raise CodegenError(f"binary op {e.op!r} is not defined on {operand.value} values", code="op")
        if av.literal and bv.literal or (av.literal and "{b}" not in template):
            av = self.materialize(av, operand)
        if template.startswith(TENSOR_HELPERS):
            av, bv = self.materialize(av, operand), self.materialize(bv, operand)
        return self.emit(template.format(a=av.text, b=bv.text), [av, bv], res)

    # -- stores ------------------------------------------------------------------------------------
