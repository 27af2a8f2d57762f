"""One compute launch -> the source of one `@triton.jit` kernel (values, CSE and scopes: see
`emitter`).

The emitter is layered: `emitter.EmitterCore` (statements, CSE, names, conversions) <-
`expressions.ExpressionEmitter` (indices, loads, values, stores) <- `reductions.ReductionEmitter`
<- `windows.register_emit.RegisterWindowEmitter` <- `KernelEmitter` (the grid, masks, r loop,
driver and header); a sliding window's row loop is `windows.sliding_emit.RowWalk`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from fuseopt.codegen.emitter import EmittedKernel
from fuseopt.codegen.layout import LINE_LENGTH, truncate_comment, wrap
from fuseopt.codegen.source_text import comment_text, ident, python_name
from fuseopt.codegen.strategies import (
    LoopedRow,
    PersistentRow,
    RegisterWindow,
    RowSplit,
    SlidingWindow,
    SplitFinish,
    SplitPartial,
    Tile1D,
    Tile2D,
    Unrolled,
)
from fuseopt.codegen.tiling import LaunchConfig, Tiling
from fuseopt.codegen.values import LoopBlock, Stmt, Val
from fuseopt.codegen.windows.register_emit import RegisterWindowEmitter
from fuseopt.codegen.windows.sliding import Key
from fuseopt.codegen.windows.sliding_emit import RowWalk
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import to_text
from fuseopt.ir.graph import Graph


class KernelEmitter(RegisterWindowEmitter):
    """Emits one kernel (`emit_kernel`): the grid, masks, r loops and the driver over the layers
    below it (see `EmitterCore` for a split reduction's two kernels)."""

    def __init__(self, graph: Graph, tiling: Tiling, name: str, carry: Mapping[Key, Key] | None = None):
        super().__init__(graph, tiling, name)
        self.walk = RowWalk(self, carry or {}) if isinstance(tiling.strategy, SlidingWindow) else None

    # -- kernel axes -------------------------------------------------------------------------------
    def prologue(self) -> None:
        i64 = self.idt == DType.int64
        pid = "tl.program_id(0).to(tl.int64)" if i64 else "tl.program_id(0)"
        if self.walk is not None:
            self.walk.prologue()
        elif self.cells:
            self.cells_prologue()
        elif self.dims == ("y", "x"):
            cast = ".to(tl.int64)" if i64 else ""
            if self.t.grid_2d:  # program_id(0) along x, program_id(1) along y
                xoff = self.emit(f"tl.program_id(0){cast} * XBLOCK", [], self.idt, name="xoffset")
                yoff = self.emit(f"tl.program_id(1){cast} * YBLOCK", [], self.idt, name="yoffset")
            else:  # one flat program id: x tiles fastest
                p = self.emit("tl.program_id(0)", [], DType.int32, name="pid")
                tiles = self.emit("tl.cdiv(xnumel, XBLOCK)", [], DType.int32, name="xtiles")
                yoff = self.emit(f"(pid // xtiles){cast} * YBLOCK", [p, tiles], self.idt, name="yoffset")
                xoff = self.emit(f"(pid % xtiles){cast} * XBLOCK", [p, tiles], self.idt, name="xoffset")
            self.axis_val["y"] = self.emit(
                "yoffset + tl.arange(0, YBLOCK)[:, None]", [yoff], self.idt, name="yindex", axes=("y",)
            )
            self.axis_val["x"] = self.emit(
                "xoffset + tl.arange(0, XBLOCK)[None, :]", [xoff], self.idt, name="xindex", axes=("x",)
            )
        else:
            xoff = self.emit(f"{pid} * XBLOCK", [], self.idt, name="xoffset")
            rng = "tl.arange(0, XBLOCK)" + ("[:, None]" if len(self.dims) == 2 else "")
            self.axis_val["x"] = self.emit(f"xoffset + {rng}", [xoff], self.idt, name="xindex", axes=("x",))
        if isinstance(self.strategy, SplitPartial):
            self.top.append(Stmt("rsplit = tl.program_id(1)", "rsplit", (), effect=True))
        for a in self.dims:
            if a != "r0_":
                self._mask(a)
        if "r0_" in self.axes and self.persistent:
            self._r_axis("tl.arange(0, R0_BLOCK)[None, :]" + (".to(tl.int64)" if i64 else ""), [])

    def _mask(self, a: str) -> None:
        if a in self.t.masked:
            ax = self.axes[a]
            self.mask_val[a] = self.emit(
                f"{ax.index} < {ax.numel_arg}", [self.axis_val[a]], DType.bool, name=ax.mask
            )

    def _r_axis(self, rhs: str, deps: list[Val]) -> None:
        self.axis_val["r0_"] = self.emit(rhs, deps, self.idt, name="r0_index", axes=("r0_",))
        self._mask("r0_")

    def open_loop(self) -> None:
        assert self.loop is None
        if isinstance(s := self.strategy, SplitPartial):
            end = f"(rsplit + 1) * {s.chunk}"
            if s.chunk * s.chunks != self.launch.axes[1].numel:  # the last chunk ends at r's end
                end = f"tl.minimum({end}, r0_numel)"
            header = f"for r0_offset in range(rsplit * {s.chunk}, {end}, R0_BLOCK):"
        else:
            header = "for r0_offset in range(0, r0_numel, R0_BLOCK):"
        self.loop = LoopBlock(header)
        self.caches[1] = {}
        cast = ".to(tl.int64)" if self.idt == DType.int64 else ""
        base = self.emit(
            f"tl.arange(0, R0_BLOCK)[None, :]{cast}", [], self.idt, name="r0_base", axes=("r0_",)
        )
        offset = Val("r0_offset", DType.int32, (), 1, ())
        self._r_axis("r0_offset + r0_base", [base, offset])

    def close_loop(self) -> None:
        assert self.loop is not None
        self.top.append(self.loop)
        self.loop = None
        self.caches[1] = {}
        self.axis_val.pop("r0_", None)
        self.mask_val.pop("r0_", None)
        pending, self.pending = self.pending, []
        for fn in pending:
            fn()

    # -- driver ------------------------------------------------------------------------------------
    def body(self) -> None:
        self.streams = self.streaming()
        if isinstance(self.strategy, SplitFinish):
            # Launched while the partial kernel's last programs run (programmatic dependent
            # launch, where the GPU has it): its partial results are complete only after this.
            self.effect("_gdc_wait(PDL)", [])
        self.prologue()
        ps = self.launch.placements
        if isinstance(self.strategy, SplitFinish):
            for p in ps:
                if p.role == "reduction":
                    self.reduction(p)
                elif p.role == "epilogue":
                    self.pointwise(p)
            return
        if isinstance(self.strategy, SplitPartial):
            self.open_loop()
            for p in ps:
                if p.role == "reduction":
                    self.reduction(p)
                elif p.role == "inner":
                    self.pointwise(p)
            self.close_loop()  # (stores the partial results)
            self.effect("_gdc_launch_dependents(PDL)", [])
            return
        if self.cells:
            self.cells_body()
            return
        if self.launch.kind == "pointwise" or self.persistent or self.unroll:
            if self.walk is not None:
                self.walk.open()  # the whole body runs once a row
            for p in ps:
                if p.role == "reduction":
                    self.reduction(p)
                else:
                    self.pointwise(p)
            if self.walk is not None:
                self.walk.close()
            return
        phase, post = self.phases()
        for k in range(max(phase.values(), default=-1) + 1):
            inside = [p for p in ps if phase.get(p.node.name) == k]
            later = (p for p in ps if phase.get(p.node.name, -1) > k)
            self.reread = {b for p in later for b in p.node.read_buffers() if b not in self.produced}
            if isinstance(self.strategy, LoopedRow) and self.strategy.waves:
                earlier = (p for p in ps if phase.get(p.node.name, k) < k)
                self.read_before = {
                    b for p in earlier for b in p.node.read_buffers() if b not in self.produced
                }
            if inside:
                self.open_loop()
                for p in inside:
                    if p.role == "reduction":
                        self.reduction(p)
                    else:
                        self.pointwise(p)
                self.close_loop()
            for p in ps:
                if post.get(p.node.name) == k:
                    self.pointwise(p)

    def emit_kernel(self) -> EmittedKernel:
        self.body()
        assert self.loop is None
        items = _renumber(_dead_code(self.top))
        used = {n for it in items for s in (it.body if isinstance(it, LoopBlock) else [it]) for n in s.uses}
        used |= {
            name
            for it in items
            for s in (it.body if isinstance(it, LoopBlock) else [it])
            for name in _names_in(s.text)
        }
        split = isinstance(self.strategy, SplitPartial | SplitFinish)
        stores = [b for b in self.launch.stores if b in self.stored or not split]
        args = [b for b in self.loads if self.ptr(b) in used] + stores
        numels = [(a.numel_arg, a.numel) for a in self.launch.axes]
        if isinstance(fin := self.strategy, SplitFinish):  # its r axis runs over the chunks' partial results
            numels = [(n, fin.chunks if n == "r0_numel" else v) for n, v in numels]
        blocks = [a.block for a in self.launch.axes]
        params = [self.ptr(b) for b in args] + [n for n, _ in numels] + [f"{b}: tl.constexpr" for b in blocks]
        if split:  # a split's kernels: grid dependency control (see _gdc_wait)
            params.append("PDL: tl.constexpr")
        lines: list[str] = []
        lines.extend(self.header())
        lines.append("@triton.jit")
        sig = f"def {python_name(self.name)}({', '.join(params)}):"
        if len(sig) > LINE_LENGTH:
            lines.append(f"def {self.name}(")
            lines.extend(f"    {p}," for p in params)
            lines.append("):")
        else:
            lines.append(sig)
        body: list[str] = []
        for it in items:
            if isinstance(it, LoopBlock):
                body.append(f"    {it.header}")
                for s in it.body:
                    body.extend(wrap(f"        {s.text}"))
            else:
                body.extend(wrap(f"    {it.text}"))
        lines.extend(_written_sizes(numels, "\n".join(body)))
        lines.extend(body)
        xnumel = self.launch.axes[0].numel
        chunks = self.strategy.chunks if isinstance(self.strategy, SplitPartial | SplitFinish) else 1
        ws = tuple((w, dt, chunks * xnumel) for w, dt in self.ws_dtypes.items())
        return EmittedKernel(self.name, "\n".join(lines) + "\n", tuple(args), tuple(numels), self.t, ws)

    def header(self) -> list[str]:
        t = self.t
        launch = self.launch
        shape = " x ".join(f"{a.name.rstrip('_')}={a.numel}" for a in launch.axes)
        match t.strategy:
            case Tile1D():
                style = "pointwise"
            case Tile2D():
                style = "pointwise, 2D tile (transposed access)"
            case RowSplit():
                style = "pointwise, 2D tile (row index arithmetic per row)"
            case Unrolled(rnumel=n):
                tile = ", 2D tile (row index arithmetic per row)" if len(launch.axes) == 2 else ""
                style = f"reduction unrolled over r0={n}{tile}"
            case PersistentRow():
                style = "persistent reduction"
            case LoopedRow():
                style = "looped reduction"
            case SplitPartial(chunks=n):
                style = f"split reduction, part 1: {n} chunks of r, partial results"
            case SplitFinish(chunks=n):
                style = f"split reduction, part 2: combines {n} chunks, then the epilogue"
            case SlidingWindow(rnumel=n):
                assert self.walk is not None
                carried, loads = self.walk.counts()
                bands = sorted({c.block("YBLOCK") for c in t.configs}, reverse=True)
                rows = "/".join(map(str, bands)) + (" (autotuned)" if t.autotune else "")
                style = (
                    f"sliding window, {rows} rows a program, {carried} of {loads} row loads "
                    "carried from the row before"
                )
                if n:
                    style = f"reduction unrolled over r0={n}, {style}"
            case RegisterWindow(cells=c, rnumel=n):
                needed, distinct = self.cells_counts()
                style = f"register window, {c.rows} x {c.cols} cells, {distinct} loads for {needed}"
                over = [w for w, o in zip(("bands", "chunks"), c.overlap, strict=True) if o]
                if over:  # a period's last band, a row's last chunk, overlapping the one before
                    style += ", overlapping " + " and ".join(over)
                if n:
                    style = f"reduction unrolled over r0={n}, {style}"
        ctas = max(c.num_ctas for c in t.configs)
        cluster = f"; {ctas} programs a tile on GPUs with clusters" if ctas > 1 else ""
        src = f"plan kernel {comment_text(launch.plan_kernel)}"
        if launch.epilogue_of:
            src += f" (epilogue of template {ident(launch.epilogue_of)})"
        out = [truncate_comment(f"# {src}: {style}, {shape}{cluster}")]
        if t.weighed:  # why this strategy: the cost model's estimates (codegen/cost.py)
            ranked = ", ".join(
                f"{name} {us:.1f}" + (" (taken)" if taken else "") for name, us, taken in t.weighed
            )
            out.append(f"#   cost model, estimated us: {ranked}")
        if t.fission:
            apart, fused = t.fission
            out.append(f"#   its r loops apart (fission): estimated {apart:.1f} us, fused {fused:.1f}")
        finish = isinstance(t.strategy, SplitFinish)
        elsewhere = ("epilogue",) if isinstance(t.strategy, SplitPartial) else ("inner",) if finish else ()
        for p in launch.placements:
            stored = "" if p.node.output in launch.stores else "  [not stored]"
            if p.role in elsewhere:
                stored = f"  [in part {1 if finish else 2}]"
            loops = ", ".join(f"{ident(lv.name)}={lv.size}" for lv in (*p.node.loops, *p.node.reduce))
            text = comment_text(f"{to_text(p.node.store)} = {to_text(p.node.value)}")
            head = f"#   {ident(p.node.name)} [{loops}]: "
            room = LINE_LENGTH - len(head) - len(stored)
            if len(text) > room:
                text = text[: max(room - 3, 10)] + "..."
            out.append(truncate_comment(f"{head}{text}{stored}"))
        if t.autotune:
            out.append("@triton.autotune(")
            out.append("    configs=[")
            out.extend(f"        {config_text(c)}," for c in t.autotune)
            out.append("    ],")
            keys = ", ".join(f'"{a.numel_arg}"' for a in launch.axes)
            out.append(f"    key=[{keys}],")
            if len(t.autotune) > 1:  # the wrapper's _prune: the device's candidates
                out.append('    prune_configs_by={"early_config_prune": _prune},')
            out.append(")")
        return out


def config_text(c: LaunchConfig) -> str:
    blocks = ", ".join(f'"{k}": {v}' for k, v in c.blocks)
    ctas = f", num_ctas={c.num_ctas}" if c.num_ctas > 1 else ""
    return f"triton.Config({{{blocks}}}, num_warps={c.num_warps}{ctas})"


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _names_in(text: str) -> list[str]:
    out: list[str] = []
    cur = ""
    for ch in text + " ":
        if ch in _NAME_CHARS:
            cur += ch
        else:
            if cur and not cur[0].isdigit():
                out.append(cur)
            cur = ""
    return out


_TEMP = re.compile(r"\b(tmp|x|y|r0_)(\d+)\b")


def _renumber(items: list[Stmt | LoopBlock]) -> list[Stmt | LoopBlock]:
    """Number temporaries (tmpN, xN, yN, r0_N) in the order their definitions appear."""
    stmts = [s for it in items for s in (it.body if isinstance(it, LoopBlock) else [it])]
    names: dict[str, str] = {}
    counters: dict[str, int] = {}
    for s in stmts:
        if s.defines is None:
            continue
        m = _TEMP.fullmatch(s.defines)
        if m and s.defines not in names:
            n = counters.get(m.group(1), 0)
            counters[m.group(1)] = n + 1
            names[s.defines] = f"{m.group(1)}{n}"

    def sub(text: str) -> str:
        return _TEMP.sub(lambda m: names.get(m.group(0), m.group(0)), text)

    out: list[Stmt | LoopBlock] = []
    for it in items:
        if isinstance(it, LoopBlock):
            out.append(
                LoopBlock(it.header, [Stmt(sub(s.text), s.defines, s.uses, s.effect) for s in it.body])
            )
        else:
            out.append(Stmt(sub(it.text), it.defines, it.uses, it.effect))
    return out


def _dead_code(items: list[Stmt | LoopBlock]) -> list[Stmt | LoopBlock]:
    """Drop statements whose names nothing kept uses (stores and accumulator updates are kept)."""
    stmts = [s for it in items for s in (it.body if isinstance(it, LoopBlock) else [it])]
    # The least set closed under: effects are kept, so is a statement defining a name a kept one
    # uses -- found with a worklist, in time linear in the statements (a fixpoint over repeated
    # passes was quadratic in a kernel of thousands of fused nodes).
    defining: dict[str, list[Stmt]] = {}
    for s in stmts:
        if s.defines is not None:
            defining.setdefault(s.defines, []).append(s)
    live: set[str] = set()
    keep: set[int] = set()
    work = [s for s in stmts if s.effect]
    while work:
        s = work.pop()
        if id(s) in keep:
            continue
        keep.add(id(s))
        for name in (*s.uses, *_names_in(s.text.split(" = ", 1)[1] if s.defines is not None else s.text)):
            if name not in live:
                live.add(name)
                work.extend(defining.get(name, ()))
    out: list[Stmt | LoopBlock] = []
    for it in items:
        if isinstance(it, LoopBlock):
            body = [s for s in it.body if id(s) in keep]
            if any(s.effect for s in body):
                out.append(LoopBlock(it.header, body))
        elif id(it) in keep:
            out.append(it)
    return out


# Triton specializes an integer argument on whether it is 1 or a multiple of 16 and learns no
# other factor of it. A mask `xindex < xnumel` can only be as wide a vector as the factors of
# xnumel it knows, so a size that is not a multiple of 16 (24686420 = 4 x 6171605: 4-element
# vectors, not one element a load) is written into the kernel, where Triton sees all of its factors.
ARGUMENT_DIVISIBILITY = 16


def _written_sizes(numels: list[tuple[str, int]], body: str) -> list[str]:
    """`xnumel = 24686420` for each size the body uses that is even and not a multiple of 16
    (an odd size has no factor to learn)."""
    return [
        f"    {n} = {v}"
        for n, v in numels
        if v % ARGUMENT_DIVISIBILITY and v % 2 == 0 and re.search(rf"\b{n}\b", body)
    ]
