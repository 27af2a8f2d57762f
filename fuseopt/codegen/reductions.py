"""Reductions (`ReductionEmitter`): persistent, looped and unrolled; a split reduction's partial
results (part "partial") and their combination (part "finish"); which loads stream
(`evict_first`) and which nodes run inside the r loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

from fuseopt.codegen.common import INT32_MAX, INT_RANGE, TL_DTYPE, CodegenError
from fuseopt.codegen.emitter import literal_text
from fuseopt.codegen.expressions import ExpressionEmitter
from fuseopt.codegen.loop_phases import online_sums, phases
from fuseopt.codegen.online_variance import is_variance_sum
from fuseopt.codegen.rules import reduction_rule
from fuseopt.codegen.schedule import Placement
from fuseopt.codegen.strategies import LoopedRow, SplitFinish, SplitPartial
from fuseopt.codegen.values import Val
from fuseopt.ir.dtypes import DType, compute_dtype
from fuseopt.ir.expr import Expr, Reduce, loads


class ReductionEmitter(ExpressionEmitter):
    """A kernel's nodes: pointwise stores and reductions."""

    def pointwise(self, p: Placement) -> None:
        self.store(p, self.value(p.node.value, self.ctxs[p.node.name], ()))

    def reduction(self, p: Placement) -> None:
        red = p.node.value
        assert isinstance(red, Reduce) and red.dtype is not None and red.x.dtype is not None
        rule = reduction_rule(red.op)
        if red.op in ("sum", "prod"):
            acc = compute_dtype(red.dtype)
        elif red.op == "any":
            acc = DType.int8
        else:
            acc = compute_dtype(red.x.dtype)
            if acc == DType.bool:
                acc = DType.int8
        back_to_bool = red.dtype == DType.bool

        def whole(res: Val) -> None:
            if back_to_bool:
                res = self.emit(f"{res.text} != 0", [res], DType.bool)
            self.results[p.node.name] = res
            self.store(p, res)

        finish: Callable[[Val], None] = whole
        if isinstance(self.strategy, SplitPartial):
            finish = functools.partial(self.store_partial, p, acc)

        if self.unroll:
            finish(self.unrolled(p, rule.combine, acc, back_to_bool=red.op == "any"))
            return
        final = rule.final.template(acc)
        if final is None:
            raise CodegenError(
                f"reduction {red.op!r} is not defined on {red.x.dtype.value} values", code="op"
            )
        if rule.widens and acc.is_int and acc.itemsize < 4:
            # back from Triton's int32 to the accumulator's dtype, so that arithmetic on the
            # result wraps as torch's does
            final = f"{final}.to({TL_DTYPE[acc]})"
        if isinstance(self.strategy, SplitFinish):
            finish(self.combine_partials(p, acc, final))
            return
        if p.node.name in self.online:
            f = self.online[p.node.name][0]
            (self.online_variance if is_variance_sum(red) else self.online_sum)(p, f, acc, whole)
            return
        if p.node.name in self.online_max:  # its online sum's running maximum gives it
            self.online_max[p.node.name] = whole
            return
        v = self.value(red.x, self.ctxs[p.node.name], ())
        if red.op == "any":
            v = self.coerce(v, DType.bool)
        v = self.materialize(self.coerce(v, acc), acc)
        ident = self.identity(rule.identity, acc)
        full = ("x", "r0_")
        r0 = self.mask_val.get("r0_")
        if self.persistent:
            vt = v
            if v.axes != full:
                vt = self.emit(f"tl.broadcast_to({v.text}, [XBLOCK, R0_BLOCK])", [v], acc, axes=full)
            if r0 is not None:
                vt = self.emit(f"tl.where(r0_mask, {vt.text}, {ident})", [r0, vt], acc)
            deps = [vt]
            itext = ""
            if rule.pair:
                it = self.position_dtype()
                iv = self.emit(
                    f"tl.broadcast_to(r0_index, [XBLOCK, R0_BLOCK]).to({TL_DTYPE[it]})",
                    [self.axis_val["r0_"]],
                    it,
                    axes=full,
                )
                deps.append(iv)
                itext = iv.text
            out = DType.int64 if rule.pair else acc
            finish(self.emit(f"{final.format(v=vt.text, i=itext)}[:, None]", deps, out, axes=("x",)))
            return

        name = self.fresh("_acc")
        self.define(f"{name} = tl.full([XBLOCK, R0_BLOCK], {ident}, {TL_DTYPE[acc]})", name, [])
        accv = Val(name, acc, full, 0, (name,))
        if rule.pair:
            iname, it = f"{name}_index", self.position_dtype()
            self.define(f"{iname} = tl.full([XBLOCK, R0_BLOCK], 0, {TL_DTYPE[it]})", iname, [])
            ridx = self.emit(f"r0_index.to({TL_DTYPE[it]})", [self.axis_val["r0_"]], it)
            nxt, inxt = f"{name}_next", f"{iname}_next"
            iv = Val(iname, it, full, 0, (iname,))
            self.effect(
                f"{nxt}, {inxt} = {rule.combine}({name}, {iname}, {v.text}, {ridx.text})",
                [accv, iv, v, ridx],
                1,
            )
            nv = Val(nxt, acc, full, 1, (nxt, inxt))
            if r0 is not None:
                self.effect(f"{name} = tl.where(r0_mask, {nxt}, {name})", [nv, r0], 1)
                self.effect(f"{iname} = tl.where(r0_mask, {inxt}, {iname})", [nv, r0], 1)
            else:
                self.effect(f"{name} = {nxt}", [nv], 1)
                self.effect(f"{iname} = {inxt}", [nv], 1)

            def fin_pair() -> None:
                text = final.format(v=name, i=iname)
                finish(self.emit(f"{text}[:, None]", [accv, iv], DType.int64, axes=("x",)))

            self.pending.append(fin_pair)
            return
        combined = rule.combine.format(a=name, b=v.text)
        if r0 is not None:
            self.effect(f"{name} = tl.where(r0_mask, {combined}, {name})", [accv, v, r0], 1)
        else:
            self.effect(f"{name} = {combined}", [accv, v], 1)

        def fin() -> None:
            finish(self.emit(f"{final.format(v=name)}[:, None]", [accv], acc, axes=("x",)))

        self.pending.append(fin)

    def position_dtype(self) -> DType:
        """An argmax/argmin's positions along r, accumulated as int32 where the reduction's
        points fit (a register a lane, not two, and 32-bit compares), else int64; its finishing
        helper returns int64 either way."""
        return DType.int32 if self.axes["r0_"].numel <= INT32_MAX else DType.int64

    @functools.cached_property
    def online(self) -> dict[str, tuple[Expr, str]]:
        """Looped sums computed online in the loop of what they read: of `exp(F - max(F))`, in the
        max's (`online_softmax`), of `(F - mean(F))**2`, in the mean's (`online_variance`): each
        sum's F and its max's or mean's node."""
        return online_sums(self.launch) if isinstance(self.strategy, LoopedRow) else {}

    @functools.cached_property
    def online_max(self) -> dict[str, Callable[[Val], None] | None]:
        """The max nodes whose result the first online sum over them gives (from its running
        maximum, one accumulator for both): their finishing step, once the max is reached. A
        mean is summed as any sum, in the same loop as its online variance."""
        out: dict[str, Callable[[Val], None] | None] = {}
        for p in self.launch.placements:
            if p.node.name in self.online and not is_variance_sum(p.node.value):
                out.setdefault(self.online[p.node.name][1], None)
        return out

    def online_sum(self, p: Placement, f: Expr, acc: DType, finish: Callable[[Val], None]) -> None:
        """`sum(exp(F - max(F)))` in one pass: the row's running maximum (a block's maximum a
        step), and lane sums kept relative to it, rescaled once a row when it rises."""
        v = self.materialize(self.coerce(self.value(f, self.ctxs[p.node.name], ()), acc), acc)
        s, mx = self.fresh("_acc"), self.fresh("_acc")
        dt = TL_DTYPE[acc]
        self.define(f"{s} = tl.full([XBLOCK, R0_BLOCK], 0.0, {dt})", s, [])
        self.define(f'{mx} = tl.full([XBLOCK, 1], float("-inf"), {dt})', mx, [])
        # Loop-carried: level 1 inside the loop (what reads them is not hoisted out of it).
        sv, mv = Val(s, acc, ("x", "r0_"), 1, (s,)), Val(mx, acc, ("x",), 1, (mx,))
        r0 = self.mask_val.get("r0_")
        vm = v if r0 is None else self.emit(f'tl.where(r0_mask, {v.text}, float("-inf"))', [v, r0], acc)
        top = self.emit(f"tl.reduce({vm.text}, 1, _max_propagate)[:, None]", [vm], acc, axes=("x",))
        new = self.emit(f"_maximum({mx}, {top.text})", [mv, top], acc, axes=("x",))
        scale = self.emit(f"tl.where({mx} == {new.text}, 1.0, tl.exp({mx} - {new.text}))", [mv, new], acc)
        term = self.emit(
            f'tl.where({new.text} == float("-inf"), 0.0, tl.exp({v.text} - {new.text}))', [new, v], acc
        )
        if r0 is not None:
            term = self.emit(f"tl.where(r0_mask, {term.text}, 0.0)", [term, r0], acc)
        self.effect(f"{s} = {s} * {scale.text} + {term.text}", [sv, scale, term], 1)
        self.effect(f"{mx} = {new.text}", [mv, new], 1)
        of = self.online[p.node.name][1]
        gives, self.online_max[of] = self.online_max[of], None  # the first sum over the max gives it

        def fin() -> None:  # after the loop
            if gives is not None:
                gives(Val(mx, acc, ("x",), 0, (mx,)))
            finish(self.emit(f"tl.sum({s}, 1)[:, None]", [replace(sv, level=0)], acc, axes=("x",)))

        self.pending.append(fin)

    def online_variance(self, p: Placement, f: Expr, acc: DType, finish: Callable[[Val], None]) -> None:
        """`sum((F - mean(F))**2)` in the mean's loop: each lane's count, mean and sum of squared
        deviations by Welford's updates, combined across the lanes after the loop (Chan's
        formula, `_welford_combine`) into the row's sum of squared deviations."""
        v = self.materialize(self.coerce(self.value(f, self.ctxs[p.node.name], ()), acc), acc)
        full = ("x", "r0_")
        names = [self.fresh("_acc") for _ in range(3)]
        for n in names:
            self.define(f"{n} = tl.full([XBLOCK, R0_BLOCK], 0.0, {TL_DTYPE[acc]})", n, [])
        # Loop-carried: level 1 inside the loop (what reads them is not hoisted out of it).
        mean, m2, count = (Val(n, acc, full, 1, (n,)) for n in names)
        count1 = self.emit(f"{count.text} + 1.0", [count], acc)
        delta = self.emit(f"{v.text} - {mean.text}", [v, mean], acc)
        mean1 = self.emit(f"{mean.text} + {delta.text} / {count1.text}", [mean, delta, count1], acc)
        m21 = self.emit(f"{m2.text} + {delta.text} * ({v.text} - {mean1.text})", [m2, delta, v, mean1], acc)
        r0 = self.mask_val.get("r0_")
        for old, new in ((mean, mean1), (m2, m21), (count, count1)):
            if r0 is None:
                self.effect(f"{old.text} = {new.text}", [old, new], 1)
            else:
                self.effect(f"{old.text} = tl.where(r0_mask, {new.text}, {old.text})", [old, new, r0], 1)

        def fin() -> None:  # after the loop
            row = [self.fresh("_acc") for _ in range(3)]
            after = [replace(x, level=0) for x in (mean, m2, count)]
            self.effect(f"{', '.join(row)} = tl.reduce(({', '.join(names)}), 1, _welford_combine)", after, 0)
            m2v = Val(row[1], acc, ("x",), 0, (row[1],))
            finish(self.emit(f"{m2v.text}[:, None]", [m2v], acc, axes=("x",)))

        self.pending.append(fin)

    def store_partial(self, p: Placement, acc: DType, res: Val) -> None:
        """A split reduction's chunk result, into row `rsplit` of its [chunks, xnumel] partials."""
        ws = self.workspace(p, acc)
        x = self.axis_val["x"]
        xnumel = self.launch.axes[0].numel
        masks = [self.mask_val["x"]] if "x" in self.mask_val else []
        mask = f", {masks[0].text}" if masks else ""
        rsplit = Val("rsplit", DType.int32, (), 0, ("rsplit",))
        self.effect(
            f"tl.store({self.ptr(ws)} + (rsplit * {xnumel} + {x.text}), {res.text}{mask})",
            [res, x, rsplit, *masks],
        )

    def workspace(self, p: Placement, acc: DType) -> str:
        """The partials buffer of reduction `p` (of dtype `acc`), a parameter of this kernel."""
        ws = self.workspaces[p.node.name]
        self.ws_dtypes[ws] = acc
        self.loads[ws] = None
        return ws

    def combine_partials(self, p: Placement, acc: DType, final: str) -> Val:
        """The finish of a split reduction: the chunks' partial results, reduced again."""
        ws = self.workspace(p, acc)
        x, r = self.axis_val["x"], self.axis_val["r0_"]
        xnumel = self.launch.axes[0].numel
        masks = [self.mask_val[a] for a in ("x", "r0_") if a in self.mask_val]
        mask = ""
        if masks:
            red = p.node.value
            assert isinstance(red, Reduce)
            ident = self.identity(reduction_rule(red.op).identity, acc)
            mask = f", {' & '.join(m.text for m in masks)}, other={ident}"
        v = self.emit(
            f"tl.load({self.ptr(ws)} + ({r.text} * {xnumel} + {x.text}){mask})",
            [x, r, *masks],
            acc,
            axes=("x", "r0_"),
        )
        return self.emit(f"{final.format(v=v.text)}[:, None]", [v], acc, axes=("x",))

    def unrolled(self, p: Placement, combine: str, acc: DType, *, back_to_bool: bool) -> Val:
        """A small reduction unrolled at generation time: the value at each point of the reduction
        (its loop variables bound to constants), combined left to right in r order; in a sliding
        window, row by row of the window with the rows' partial results carried (`RowWalk`)."""

        def combined(points: list[int]) -> Val:
            red = p.node.value
            assert isinstance(red, Reduce)
            ctx = self.ctxs[p.node.name]
            out: Val | None = None
            for r in points:
                self.axis_val["r0_"] = Val(str(r), self.idt, const=r)
                v = self.value(red.x, ctx, ())
                if back_to_bool:
                    v = self.coerce(v, DType.bool)
                v = self.materialize(self.coerce(v, acc), acc)
                out = v if out is None else self.emit(combine.format(a=out.text, b=v.text), [out, v], acc)
            assert out is not None
            return out

        res = self.walk.unrolled(p, combine, acc, combined) if self.walk is not None else None
        if res is None:
            res = combined(list(range(self.unroll)))
        self.axis_val.pop("r0_", None)
        return res

    @staticmethod
    def identity(kind: str, dtype: DType) -> str:
        if kind == "zero":
            return literal_text(0, dtype)
        if kind == "one":
            return literal_text(1, dtype)
        if dtype.is_float:
            return 'float("-inf")' if kind == "lowest" else 'float("inf")'
        lo, hi = INT_RANGE[dtype]
        return str(lo if kind == "lowest" else hi)

    def streaming(self) -> bool:
        """A reduction kernel that writes no point's value (its stores are the reductions' results
        and what follows them, a row each) and reads each input once: in one pass (persistent, or
        one r loop; not an unrolled window, whose loads overlap), through one index expression,
        none of them indirect. Its loads stream data it reads once."""
        ps = self.launch.placements
        if self.launch.kind != "reduction" or self.unroll or self.walk is not None:
            return False
        if any(p.role == "inner" and p.node.output in self.launch.stores for p in ps):
            return False
        indices: dict[str, set[Expr]] = {}
        for ld in (ld for p in ps for ld in p.node.reads() if ld.buffer not in self.produced):
            if loads(ld.index):
                return False
            indices.setdefault(ld.buffer, set()).add(ld.index)
        if any(len(ix) > 1 for ix in indices.values()):
            return False
        if isinstance(self.strategy, LoopedRow):
            return max(self.phases()[0].values(), default=0) == 0
        return True

    def phases(self) -> tuple[dict[str, int], dict[str, int]]:
        """Which r loop each inner/reduction node runs in, after which each epilogue runs."""
        return phases(self.launch, self.online)

    # -- stores -------------------------------------------------------------------------------------
    def store(self, p: Placement, v: Val) -> None:
        node = p.node
        if node.output not in self.launch.stores:
            return
        ctx = self.ctxs[node.name]
        sv = self.to_storage(v, self.graph.buffer(node.output).dtype)
        idx = self.index(node.store.index, ctx, ())
        region = p.axes
        masks = [self.mask_val[a] for a in region if a in self.mask_val]
        target = self.union(idx.axes, sv.axes, region if masks else ())
        addr = self.address(node.output, idx, target)
        mask = f", {' & '.join(m.text for m in masks)}" if masks else ""
        self.effect(f"tl.store({addr}, {sv.text}{mask})", [idx, sv, *masks])
        self.stored[node.output] = None
