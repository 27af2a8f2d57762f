"""What a launch reads and writes, counted from the kernel IR (never from emitted code): bytes by
the axis each access is contiguous along, distinct loads a point of a tile, the digit an index is
contiguous along, special-function work a point. The launch configurations (`launch_configs`)
and the strategies' costs weigh these.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from fuseopt.codegen.common import prod
from fuseopt.codegen.indexing import Digit
from fuseopt.codegen.schedule import ComputeLaunch, Placement, digits_of
from fuseopt.ir.bounds import linear_form
from fuseopt.ir.expr import Binary, Const, Expr, Unary, Var, free_vars, walk
from fuseopt.ir.graph import Graph


def x_contiguous(along: dict[str, int], ratio: int) -> bool:
    """Whether the tile reads or writes a large share of its data contiguously along x (an outer
    or transposed reduction), so that rows of x are worth widening.

    Each distinct access counts the elements it touches (a broadcast along x, such as a bias
    indexed by r, touches only its own few). An access contiguous along x moves XBLOCK elements
    per memory segment, so narrow tiles waste bandwidth on it; an access contiguous along r is
    indifferent to XBLOCK. So 1/`ratio` as many bytes along x as along r already decide
    (softmax_bias_t: the input along x, the output along r).
    """
    return along["xindex"] > 0 and ratio * along["xindex"] >= along["r0_index"]


def contiguous_bytes(graph: Graph, launch: ComputeLaunch) -> tuple[dict[str, int], int]:
    """Bytes the tile's distinct accesses touch, by the axis each is contiguous along (xindex,
    r0_index), and the smallest itemsize among those contiguous along x (0: none)."""
    sizes = {a.name: a.numel for a in launch.axes}
    seen: set[tuple[str, Expr]] = set()
    along = {"xindex": 0, "r0_index": 0}
    x_item = 0
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        digits = digits_of(p, sizes)
        for buf, index, _ in launch_accesses(graph, launch, p):
            d, _ = unit_digit(index, digits)
            touched = _touched(index, p.node.var_sizes)
            if d is None:  # not affine: contiguous in runs between the wraps of its // and %
                d, touched = _run_digit(index, digits), prod(p.node.var_sizes[v] for v in free_vars(index))
            if d is None or d.div != 1 or d.base not in along or (buf, index) in seen:
                continue
            seen.add((buf, index))
            item = graph.buffer(buf).dtype.itemsize
            along[d.base] += touched * item
            if d.base == "xindex":
                x_item = min(x_item or item, item)
    return along, x_item


def rows_aligned(graph: Graph, launch: ComputeLaunch, vector_bytes: int) -> bool:
    """Whether every global read contiguous along r starts each row of x on a `vector_bytes`
    boundary (its constant offset and each coefficient of an x digit in its index, in bytes, a
    multiple of it: a buffer's storage starts on one), so that a row can be read in vectors
    wherever a chunk of r starts. Non-affine reads are not."""
    sizes = {a.name: a.numel for a in launch.axes}
    produced = launch.producer()
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        digits = digits_of(p, sizes)
        for ld in p.node.reads():
            if ld.buffer in produced:
                continue
            d, _ = unit_digit(ld.index, digits)
            if d is None or d.base != "r0_index":
                if d is None and linear_form(ld.index).coeffs:
                    return False
                continue
            item = graph.buffer(ld.buffer).dtype.itemsize
            f = linear_form(ld.index)
            if f.const * item % vector_bytes:  # a slice that starts inside a vector: x[:, 1:]
                return False
            for atom, k in f.coeffs:
                if not isinstance(atom, Var):
                    return False
                x = digits.get(atom.name)
                if x is not None and x.base == "xindex" and k * item % vector_bytes:
                    return False
    return True


def read_bytes(graph: Graph, launch: ComputeLaunch) -> int:
    """The smallest itemsize among the tile's global reads (0: none): every loop of the kernel
    reads at least that much a point."""
    produced = launch.producer()
    return min(
        (
            graph.buffer(ld.buffer).dtype.itemsize
            for p in launch.placements
            if p.role in ("inner", "reduction")
            for ld in p.node.reads()
            if ld.buffer not in produced
        ),
        default=0,
    )


def _touched(index: Expr, var_sizes: dict[str, int]) -> int:
    """How many points an affine index of loop variables can touch: the product of their sizes."""
    return prod(var_sizes.get(atom.name, 1) for atom, _ in linear_form(index).coeffs if isinstance(atom, Var))


_SFU_OPS = frozenset(
    {"exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh"}
    | {"sigmoid", "erf", "pow", "atan2"}
)


def sfu_per_point(launch: ComputeLaunch) -> bool:
    """Whether some point of the tile (not just a row of x) runs a special-function op: one whose
    operands vary along r (`exp(x[...r...] - max)` does; `rsqrt(var[x0] + eps)` does not)."""
    sizes = {a.name: a.numel for a in launch.axes}
    for p in launch.placements:
        if p.role not in ("inner", "reduction"):
            continue
        per_point = {v for v, d in digits_of(p, sizes).items() if d is not None and d.base != "xindex"}
        for e in walk(p.node.value):
            sfu = isinstance(e, (Unary, Binary)) and e.op in _SFU_OPS
            if sfu and any(isinstance(v, Var) and v.name in per_point for v in walk(e)):
                return True
    return False


def launch_accesses(graph: Graph, launch: ComputeLaunch, p: Placement) -> Iterator[tuple[str, Expr, int]]:
    """(buffer, index, bytes) of each global memory access of a placed node (fused reads
    excluded)."""
    produced = launch.producer()
    node = p.node
    for ld in node.reads():
        if ld.buffer not in produced:
            yield ld.buffer, ld.index, graph.buffer(ld.buffer).dtype.itemsize * node.numel * node.rnumel
    if node.output in launch.stores:
        yield node.output, node.store.index, graph.buffer(node.output).dtype.itemsize * node.numel


def _run_digit(index: Expr, digits: dict[str, Digit | None]) -> Digit | None:
    """The digit along which a non-affine index steps by one between the wraps of its `//` and
    `%` by literals (`(8029 * x0 + r) % 12544`: along r's), where `run_steps` knows every step."""
    steps = run_steps(index)
    if steps is None:
        return None
    ones = [d for v, k in steps.items() if k == 1 and (d := digits.get(v)) is not None]
    return min(ones, key=lambda d: d.div, default=None)


def run_steps(e: Expr) -> dict[str, int] | None:
    """Each loop variable's step in an integer index between the wraps of its `//` and `%` by
    positive literals: an affine index's coefficients; `a % m` steps as `a` does (a coefficient
    m divides: 0), `a // m` by a coefficient m divides over m, else 0. None where another
    operator (min, max, a load, a float) leaves the step unknown."""
    if isinstance(e, Var):
        return {e.name: 1}
    if isinstance(e, Const):
        return {} if type(e.value) is int else None
    if not isinstance(e, Binary):
        return None
    if e.op in ("add", "sub"):
        a, b = run_steps(e.a), run_steps(e.b)
        if a is None or b is None:
            return None
        sign = -1 if e.op == "sub" else 1
        return {v: a.get(v, 0) + sign * b.get(v, 0) for v in dict.fromkeys([*a, *b])}
    if e.op == "mul":
        for other, factor in ((e.a, e.b), (e.b, e.a)):
            if isinstance(factor, Const) and type(factor.value) is int:
                f, c = run_steps(other), factor.value
                return None if f is None else {v: k * c for v, k in f.items()}
        return None
    if e.op in ("floordiv", "mod") and isinstance(e.b, Const) and type(e.b.value) is int and e.b.value > 0:
        f, m = run_steps(e.a), e.b.value
        if f is None:
            return None
        if e.op == "mod":
            return {v: 0 if k % m == 0 else k for v, k in f.items()}
        return {v: k // m if k % m == 0 else 0 for v, k in f.items()}
    return None


def unit_digit(index: Expr, digits: dict[str, Digit | None]) -> tuple[Digit | None, bool]:
    """The digit along which `index` is contiguous (coefficient 1), and whether the index varies
    along any axis's fastest digit (div 1). Non-affine indices give (None, False)."""
    f = linear_form(index)
    best: Digit | None = None
    fastest = False
    for atom, k in f.coeffs:
        if not isinstance(atom, Var):
            return None, False
        d = digits.get(atom.name)
        if d is None:
            continue
        if d.div == 1:
            fastest = True
        if k == 1 and (best is None or d.div < best.div):
            best = d
    return best, fastest


def point_loads(launch: ComputeLaunch) -> int:
    """Distinct global loads a point of a 2D row tile that read a distinct element at every
    point, varying along both of its axes (one the tile's rows or columns share is a value a row
    or a column of a thread), each point of an unrolled reduction its own; reads of buffers the
    kernel produces are fused. At least one."""
    produced = launch.producer()
    tile = {f"{a.name}index" for a in launch.axes if a.name != "r0_"}
    sizes = {a.name: a.numel for a in launch.axes}
    sizes.setdefault("r0_", max((p.node.rnumel for p in launch.placements), default=1))
    n = 0
    for p in launch.placements:
        digits = digits_of(p, sizes)
        every = {
            (ld.buffer, ld.index)
            for ld in p.node.reads()
            if ld.buffer not in produced and tile <= _bases(ld.index, digits)
        }
        n += len(every) * (p.node.rnumel if p.role == "reduction" else 1)
    return max(1, n)


def _bases(index: Expr, digits: Mapping[str, Digit | None]) -> set[str]:
    """The axes an index varies along (a flat base counts for each of its axes)."""
    out: set[str] = set()
    for v in walk(index):
        if isinstance(v, Var) and (d := digits.get(v.name)) is not None:
            if d.base.startswith("flat_"):
                out.update(f"{a}index" for a in d.base.removeprefix("flat_").split("_"))
            else:
                out.add(d.base)
    return out


def tile_accesses(launch: ComputeLaunch) -> int:
    """Global loads and stores in a reduction kernel's loop body (reads of fused buffers excluded)."""
    produced = launch.producer()
    n = 0
    for p in launch.placements:
        if p.role in ("inner", "reduction"):
            n += _distinct_reads(p, produced)
            n += int(p.role == "inner" and p.node.output in launch.stores)
    return max(1, n)


def tile_loads(launch: ComputeLaunch) -> int:
    """Distinct global loads a point of a pointwise tile (reads of buffers the kernel produces
    are fused, not loaded), at least one."""
    produced = launch.producer()
    return max(1, sum(_distinct_reads(p, produced) for p in launch.placements))


def _distinct_reads(p: Placement, produced: Mapping[str, Placement]) -> int:
    """A node's distinct global loads (reads of buffers the kernel produces are fused)."""
    return len({(ld.buffer, ld.index) for ld in p.node.reads() if ld.buffer not in produced})
