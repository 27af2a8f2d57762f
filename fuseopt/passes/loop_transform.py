"""Loop transformations of one node -- permute, merge, re-factor -- each proven a bijection.

Every function returns a new `ComputeNode` (the input is never changed) whose loop box is in
one-to-one correspondence with the old one and whose expressions are rewritten so that every point
computes the same value at the same address. The proofs are exact polynomial identities on
expressions built directly (never parsed from text):
  - a permutation of loops is a bijection by construction (checked: the order is a permutation);
    the reduce loops of an argmax/argmin are never permuted: its result is a position in their
    row-major order, and its first occurrence is first in that order (`keeps_reduce_order`);
  - merging and re-factoring keep the row-major flat position: sum(old_i * T_i), with each old
    variable written in the new ones, must simplify to sum(new_j * S_j).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from fuseopt.errors import CheckFailed
from fuseopt.ir.bounds import Linear, interval, linear_form
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import (
    Binary,
    Const,
    Expr,
    IndexValue,
    Load,
    Reduce,
    Var,
    substitute_vars,
    to_text,
    transform,
    walk,
)
from fuseopt.ir.fold import fold_minmax
from fuseopt.ir.graph import ComputeNode, Graph, LoopVar

_I64 = DType.int64


def keeps_reduce_order(node: ComputeNode) -> bool:
    """Whether the node's value depends on the order of its reduce loops, beyond rounding: an
    argmax/argmin returns a position in their row-major order (ties: the first in it)."""
    return isinstance(node.value, Reduce) and node.value.op in ("argmax", "argmin")


def permute(node: ComputeNode, order: Sequence[int], rorder: Sequence[int] | None = None) -> ComputeNode:
    """New loop order: new position p holds old loop order[p] (same for `reduce` with rorder)."""
    if sorted(order) != list(range(len(node.loops))):
        raise CheckFailed(f"{node.name}: {list(order)} is not a permutation of {len(node.loops)} loops")
    loops = tuple(node.loops[i] for i in order)
    red = node.reduce
    if rorder is not None:
        if sorted(rorder) != list(range(len(node.reduce))):
            raise CheckFailed(f"{node.name}: {list(rorder)} is not a permutation of the reduce loops")
        if list(rorder) != sorted(rorder) and keeps_reduce_order(node):
            raise CheckFailed(f"{node.name}: an argmax/argmin's reduce loops keep their order")
        red = tuple(node.reduce[i] for i in rorder)
    return replace(node, loops=loops, reduce=red)


# -- expressions in the new variables ---------------------------------------------------------
def _c(v: int) -> Const:
    return Const(v, dtype=_I64)


def _add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    return Binary("add", a, b, dtype=_I64)


def _mul(k: int, e: Expr) -> Expr:
    if k == 1:
        return e
    if isinstance(e, Const):
        return _c(k * int(e.value))
    return Binary("mul", _c(k), e, dtype=_I64)


def _fdiv(e: Expr, d: int) -> Expr:
    return e if d == 1 else Binary("floordiv", e, _c(d), dtype=_I64)


def _mod(e: Expr, m: int) -> Expr:
    return Binary("mod", e, _c(m), dtype=_I64)


def linear_to_expr(f: Linear) -> Expr:
    """Rebuild an index from its linear form: terms in order, then the constant (a - for negatives)."""
    out: Expr = _c(0)
    for atom, k in f.coeffs:
        if k < 0 and not isinstance(out, Const):
            out = Binary("sub", out, _mul(-k, atom), dtype=_I64)
        else:
            out = _add(out, _mul(k, atom))
    if isinstance(out, Const):
        return _c(int(out.value) + f.const)
    if f.const > 0:
        return _add(out, _c(f.const))
    if f.const < 0:
        return Binary("sub", out, _c(-f.const), dtype=_I64)
    return out


def _suffix_products(sizes: Sequence[int]) -> list[int]:
    out = [1]
    for s in reversed(sizes):
        out.append(out[-1] * s)
    return list(reversed(out))  # out[i] = prod(sizes[i:]), out[-1] = 1


def refactor_map(old: Sequence[LoopVar], new: Sequence[LoopVar]) -> dict[str, Expr] | None:
    """Old loop variables written in new ones, for two row-major factorizations of the same box.

    Exists when the boundaries (suffix products) of both factorizations form a divisibility chain;
    then each old variable is a sum of fine digits, each digit (new // a) % b of one new variable.
    """
    so = _suffix_products([lv.size for lv in old])
    sn = _suffix_products([lv.size for lv in new])
    if so[0] != sn[0]:
        return None
    bounds = sorted(set(so) | set(sn))
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b % a:
            return None
    out: dict[str, Expr] = {}
    for i, lv in enumerate(old):
        hi, lo = so[i], so[i + 1]  # old var i covers flat digits [lo, hi)
        expr: Expr = _c(0)
        for j, nv in enumerate(new):
            nhi, nlo = sn[j], sn[j + 1]
            a, b = max(lo, nlo), min(hi, nhi)  # overlap of the two digit ranges
            if a >= b:
                continue
            digit: Expr = Var(nv.name, dtype=_I64)
            digit = _fdiv(digit, a // nlo)
            if b < nhi:
                digit = _mod(digit, b // a)
            expr = _add(expr, _mul(a // lo, digit))
        out[lv.name] = expr
    return out


def prove_refactor(old: Sequence[LoopVar], new: Sequence[LoopVar], mapping: dict[str, Expr]) -> None:
    """See `_prove`; proofs are memoised by the mapping's shape (sizes and digit structure)."""
    names = {lv.name: f"o{i}" for i, lv in enumerate(old)} | {lv.name: f"n{i}" for i, lv in enumerate(new)}
    canon = tuple(
        to_text(substitute_vars(mapping[lv.name], {k: Var(v) for k, v in names.items()})) for lv in old
    )
    key = (tuple(lv.size for lv in old), tuple(lv.size for lv in new), canon)
    if key not in _PROVEN:
        _prove(old, new, mapping)
        _PROVEN.add(key)


_PROVEN: set[tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]] = set()


def _prove(old: Sequence[LoopVar], new: Sequence[LoopVar], mapping: dict[str, Expr]) -> None:
    """Prove that `mapping` (old variables in new ones) is a bijection of the loop box.

    Each new variable n is written in mixed-radix digits D = (n // a) % b, which must tile its
    range exactly (then n = sum(D * a) over n's box: the mixed-radix identity). With every digit an
    unknown, the old row-major position sum(old_i * T_i) must expand to exactly the new one,
    sum(n_j * S_j): a polynomial identity, checked exactly on the expanded forms (`_Poly`). Equal
    positions on both sides of two row-major factorizations of one box is a bijection.
    """
    digits: set[tuple[str, int, int | None]] = set()

    def digit(var: str, a: int, b: int | None) -> _Poly:
        digits.add((var, a, b))
        return _Poly.unknown((var, a, b))

    def conv(e: Expr) -> _Poly:
        d = _as_digit(e)
        if isinstance(e, Var):
            return digit(e.name, 1, None)
        if d is not None and isinstance(d[0], Var):
            return digit(d[0].name, d[1], d[2])
        if isinstance(e, Const) and isinstance(e.value, int):
            return _Poly.constant(e.value)
        if isinstance(e, Binary) and e.op in ("add", "sub", "mul"):
            a, b = conv(e.a), conv(e.b)
            return a + b if e.op == "add" else a + b.scaled(-1) if e.op == "sub" else a * b
        raise CheckFailed(f"loop re-factoring: {type(e).__name__} is not a digit expression")

    so = _suffix_products([lv.size for lv in old])
    sn = _suffix_products([lv.size for lv in new])
    flat_old = _Poly.constant(0)
    for i, lv in enumerate(old):
        flat_old = flat_old + conv(mapping[lv.name]).scaled(so[i + 1])
    flat_new = _Poly.constant(0)
    for j, lv in enumerate(new):
        used = sorted((a, b) for (v, a, b) in digits if v == lv.name)
        value = _Poly.constant(0)
        width = 1
        for a, b in used:  # digits must tile [0, size): a == product of the digits below it
            top = b is None or a * b >= lv.size
            if a != width or (b is not None and a * b > lv.size):
                raise CheckFailed(f"loop re-factoring: digits of {lv.name} do not tile its range")
            value = value + digit(lv.name, a, b).scaled(a)
            width = lv.size if top else a * b  # type: ignore[operator]
        if lv.size > 1 and width != lv.size:
            raise CheckFailed(f"loop re-factoring: digits of {lv.name} do not cover its range")
        flat_new = flat_new + value.scaled(sn[j + 1])
    # A size-1 loop's digits are 0 everywhere in the box.
    ones = {lv.name for lv in new if lv.size == 1}
    if (flat_old + flat_new.scaled(-1)).without(lambda d: d[0] in ones).terms:
        raise CheckFailed(
            f"loop re-factoring {[lv.size for lv in old]} -> {[lv.size for lv in new]} is not a bijection"
        )


_Unknown = tuple[str, int, "int | None"]


@dataclass(frozen=True)
class _Poly:
    """A polynomial with integer coefficients in unknowns, expanded: monomial (the sorted
    unknowns, with repeats) -> a non-zero coefficient. Two polynomials are equal exactly when
    their expanded forms are, so `p - q` with no terms proves p == q for every value."""

    terms: dict[tuple[_Unknown, ...], int]

    @staticmethod
    def constant(c: int) -> _Poly:
        return _Poly({(): c} if c else {})

    @staticmethod
    def unknown(u: _Unknown) -> _Poly:
        return _Poly({(u,): 1})

    def scaled(self, k: int) -> _Poly:
        return _Poly({m: c * k for m, c in self.terms.items()} if k else {})

    def __add__(self, other: _Poly) -> _Poly:
        out = dict(self.terms)
        for m, c in other.terms.items():
            total = out.get(m, 0) + c
            if total:
                out[m] = total
            else:
                out.pop(m, None)
        return _Poly(out)

    def __mul__(self, other: _Poly) -> _Poly:
        out = _Poly.constant(0)
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                key = tuple(sorted((*m1, *m2), key=lambda u: (u[0], u[1], -1 if u[2] is None else u[2])))
                out = out + _Poly({key: c1 * c2})
        return out

    def without(self, zero: Callable[[_Unknown], bool]) -> _Poly:
        """The polynomial with the unknowns `zero` names set to 0."""
        return _Poly({m: c for m, c in self.terms.items() if not any(zero(u) for u in m)})


def refactor(node: ComputeNode, new_loops: Sequence[LoopVar]) -> ComputeNode | None:
    """Re-factor a pointwise node's loops to `new_loops` (same numel), rewriting every expression."""
    mapping = refactor_map(node.loops, new_loops)
    if mapping is None:
        return None
    prove_refactor(node.loops, new_loops, mapping)
    return _rewrite(node, tuple(new_loops), node.reduce, mapping)


# A digit of X: (X // a) % b, with b None for no modulus. Digits of one X recombine:
#   c*digit(X, a, b) + c*b*digit(X, a*b, b2) == c*digit(X, a, b*b2)      (Y % b + b*(Y // b) == Y)
Digit = tuple[Expr, int, int | None]


def _as_digit(e: Expr) -> Digit | None:
    def const(x: Expr) -> int | None:
        return int(x.value) if isinstance(x, Const) and isinstance(x.value, int) and x.value > 0 else None

    if isinstance(e, Binary) and e.op == "mod" and (b := const(e.b)) is not None:
        inner = e.a
        if isinstance(inner, Binary) and inner.op == "floordiv" and (a := const(inner.b)) is not None:
            return (_strip(inner.a), a, b)
        return (_strip(inner), 1, b)
    if isinstance(e, Binary) and e.op == "floordiv" and (a := const(e.b)) is not None:
        return (_strip(e.a), a, None)
    return None


def _strip(e: Expr) -> Expr:
    return transform(e, lambda n: replace(n, dtype=None) if n.dtype is not None else None)


def _digit_expr(d: Digit) -> Expr:
    x, a, b = d
    out = _fdiv(x, a)
    return out if b is None else _mod(out, b)


def simplify_digits(f: Linear) -> Linear:
    """Recombine digits of the same expression (what merging and re-factoring leave behind)."""
    terms: dict[Expr | Digit, int] = {}
    for atom, k in f.coeffs:
        d = _as_digit(atom)
        key: Expr | Digit = d if d is not None else _strip(atom)
        if isinstance(key, Var):
            key = (key, 1, None)
        terms[key] = terms.get(key, 0) + k
    changed = True
    while changed:
        changed = False
        digits = [t for t in terms if isinstance(t, tuple) and terms[t] != 0]
        for lo in digits:
            x, a, b = lo  # type: ignore[misc]
            if b is None:
                continue
            for hi in digits:
                if hi is lo or terms.get(hi, 0) == 0:
                    continue
                x2, a2, b2 = hi  # type: ignore[misc]
                if x2 == x and a2 == a * b and terms[hi] == terms[lo] * b:
                    k = terms.pop(lo)
                    terms.pop(hi)
                    new = (x, a, None if b2 is None else b * b2)
                    terms[new] = terms.get(new, 0) + k
                    changed = True
                    break
            if changed:
                break
    coeffs: list[tuple[Expr, int]] = []
    for t, k in terms.items():
        if k == 0:
            continue
        if isinstance(t, tuple):
            x, a, b = t
            atom = x if (a == 1 and b is None) else _digit_expr(t)
        else:
            atom = t
        coeffs.append((atom, k))
    return Linear(tuple(coeffs), f.const)


def simplify(e: Expr, ranges: Mapping[str, int]) -> Expr:
    """Simplify an index over a loop box: floor division and modulo of linear forms, digits.

    (d*A + B) // d == A + B // d and (d*A + B) % d == B % d for integer A; B // d == 0 and
    B % d == B when 0 <= B < d over the box (bounds from `interval`); min(A, B) == A when A <= B
    over the box (a clamp that never binds), max likewise. Then digits of the same expression
    recombine. Each rule is an identity over the box, so meaning is preserved.
    """

    def visit(n: Expr) -> Expr | None:
        if not (isinstance(n, Binary) and n.op in ("floordiv", "mod") and isinstance(n.b, Const)):
            return None
        d = int(n.b.value)
        a = n.a
        if isinstance(a, Binary) and a.op in ("mod", "floordiv") and isinstance(a.b, Const):
            m = int(a.b.value)
            if n.op == "floordiv" and a.op == "mod" and m % d == 0:  # (X % dk) // d == (X // d) % k
                return _mod(_fdiv(a.a, d), m // d)
            if n.op == "mod" and a.op == "mod" and m % d == 0:  # (X % dk) % d == X % d
                return _mod(a.a, d)
            if n.op == "floordiv" and a.op == "floordiv":  # (X // m) // d == X // (m*d)
                return _fdiv(a.a, m * d)
        f = linear_form(n.a)
        quot = Linear(tuple((atom, k // d) for atom, k in f.coeffs if k % d == 0), f.const // d)
        rest = Linear(tuple((atom, k) for atom, k in f.coeffs if k % d), f.const % d)
        if not quot.coeffs and not quot.const:
            r = interval(n.a, ranges)
            if n.op == "mod" and r is not None and r[0] >= 0 and r[1] < d:
                return n.a
            if n.op == "floordiv" and r is not None and r[0] >= 0 and r[1] < d:
                return _c(0)
            return None
        inner = linear_to_expr(rest)
        r = interval(inner, ranges)
        small = r is not None and r[0] >= 0 and r[1] < d
        if n.op == "mod":
            return inner if small else _mod(inner, d)
        if small:
            return linear_to_expr(quot)
        return linear_to_expr(Linear((*quot.coeffs, (_fdiv(inner, d), 1)), quot.const))

    out = linear_to_expr(simplify_digits(linear_form(transform(fold_minmax(e, ranges), visit))))
    # Atoms come back from linear forms untyped; an index is int64 throughout.
    return transform(out, lambda n: replace(n, dtype=_I64) if n.dtype is None else None)


def _rewrite(
    node: ComputeNode, loops: tuple[LoopVar, ...], red: tuple[LoopVar, ...], mapping: dict[str, Expr]
) -> ComputeNode:
    ranges = {lv.name: lv.size for lv in (*loops, *red)}

    def simplify_index(e: Expr) -> Expr:
        # Indices are kept as linear forms over atoms with digits recombined, so a merged index
        # reads `192*m + c`, not `6720*(m // 35) + 192*(m % 35) + c`.
        if any(isinstance(n, Load) for n in walk(e)):
            return e
        return simplify(e, ranges)

    def rewrite_loads(e: Expr) -> Expr:
        e = substitute_vars(e, mapping)
        return _map_indices(e, simplify_index)

    def rewrite_conditions(e: Expr) -> Expr:
        # Integer operands of comparisons (mask conditions) read better simplified too.
        def visit(n: Expr) -> Expr | None:
            if isinstance(n, Binary) and n.op in ("lt", "le", "gt", "ge", "eq", "ne"):
                sides = [
                    simplify_index(x)
                    if x.dtype == _I64 and not isinstance(x, Const) and _pure_index(x)
                    else x
                    for x in (n.a, n.b)
                ]
                return replace(n, a=sides[0], b=sides[1])
            return None

        return transform(e, visit)

    store = rewrite_loads(node.store)
    assert isinstance(store, Load)
    return replace(
        node, loops=loops, reduce=red, store=store, value=rewrite_conditions(rewrite_loads(node.value))
    )


def simplify_indices(node: ComputeNode) -> ComputeNode:
    """The node with each index of a load, a store or an `index(e)` simplified (`simplify`, over
    the node's loop box) where that leaves fewer floor divisions, modulos and clamps: a graph
    written by hand may index `16*((256*i + j) // 16) + (256*i + j) % 16` for `256*i + j`, or
    clamp an index that never leaves its range. An index with no fewer is kept as the graph
    writes it; one that reads a load is kept.

    Mask conditions are kept as written, even where the box decides them: the window strategies
    share a load between neighbouring points only where their masks have the same form, and a
    captured pooling window writes every tap's bounds check, the center's too."""
    ranges = {lv.name: lv.size for lv in (*node.loops, *node.reduce)}

    def fewer(e: Expr) -> Expr:
        before = _nonlinear_ops(e)
        if not before or any(isinstance(n, Load) for n in walk(e)):
            return e
        out = simplify(e, ranges)
        return out if _nonlinear_ops(out) < before else e

    store = _map_indices(node.store, fewer)
    value = _map_indices(node.value, fewer)
    if store == node.store and value == node.value:
        return node
    assert isinstance(store, Load)
    return replace(node, store=store, value=value)


def simplify_graph(graph: Graph) -> Graph:
    """Every compute node's indices through `simplify_indices`; the graph itself where none
    changes."""
    nodes = tuple(simplify_indices(n) if isinstance(n, ComputeNode) else n for n in graph.nodes)
    if all(a is b for a, b in zip(nodes, graph.nodes, strict=True)):
        return graph
    return graph.replace(nodes=nodes)


def _nonlinear_ops(e: Expr) -> int:
    """The floor divisions, modulos and clamps (min, max) of an index: what `simplify` takes out."""
    return sum(isinstance(n, Binary) and n.op in ("floordiv", "mod", "minimum", "maximum") for n in walk(e))


def _pure_index(e: Expr) -> bool:
    """Integer arithmetic over loop variables only (no loads, no value ops)."""
    return all(
        isinstance(n, Var | Const)
        or (isinstance(n, Binary) and n.op in ("add", "sub", "mul", "floordiv", "mod"))
        for n in walk(e)
    )


def _map_indices(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    def visit(n: Expr) -> Expr | None:
        if isinstance(n, Load | IndexValue):
            return replace(n, index=fn(n.index))
        return None

    return transform(e, visit)


def boundary(node: ComputeNode, k: int, scale: int = 1) -> int:
    """The boundary between position k-1 and k of loops+reduce, as the number of points after it
    (times `scale`: a node of fewer points than its kernel counts in the kernel's units)."""
    seq = (*node.loops, *node.reduce)
    n = 1
    for lv in seq[k:]:
        n *= lv.size
    return n * scale


def mergeable_pairs(
    node: ComputeNode, split: int | None = None, allowed: set[int] | None = None, scale: int = 1
) -> list[int]:
    """Positions k (within loops, then within reduce) where loop k-1 and k chain in every access.

    `split` (a position in `loops`) is a boundary that must stay: the x|r split of a pointwise
    node inside a reduction kernel. With `allowed`, only boundaries in it may go.
    """
    out = []
    for group, offset in ((node.loops, 0), (node.reduce, len(node.loops))):
        for k in range(1, len(group)):
            if offset == 0 and split is not None and k == split:
                continue
            if allowed is not None and boundary(node, offset + k, scale) not in allowed:
                continue
            if _chains(node, group[k - 1], group[k]):
                out.append(offset + k)
    return out


def _chains(node: ComputeNode, outer: LoopVar, inner: LoopVar) -> bool:
    """stride_outer == stride_inner * size_inner in every access (load and store index), with both
    variables used linearly there."""
    accesses = [node.store, *[ld for ld in walk(node.value) if isinstance(ld, Load)]]
    names = {outer.name, inner.name}
    for ld in accesses:
        f = linear_form(ld.index)
        co = ci = 0
        for atom, k in f.coeffs:
            if isinstance(atom, Var):
                if atom.name == outer.name:
                    co += k
                elif atom.name == inner.name:
                    ci += k
            elif names & {n.name for n in walk(atom) if isinstance(n, Var)}:
                return False
        if co != ci * inner.size:
            return False
    # Uses outside load/store indices (mask conditions, index(), bare variables) are rewritten with
    # // and % of the merged variable, which keeps their meaning.
    return True


def merge_at(node: ComputeNode, k: int) -> ComputeNode:
    """Merge loop k-1 (outer) and k (inner) into one loop named after the outer one."""
    nl = len(node.loops)
    in_reduce = k >= nl
    group = list(node.reduce if in_reduce else node.loops)
    kk = k - nl if in_reduce else k
    outer, inner = group[kk - 1], group[kk]
    merged = LoopVar(outer.name, outer.size * inner.size)
    new_group = [*group[: kk - 1], merged, *group[kk + 1 :]]
    mapping = refactor_map([outer, inner], [merged])
    assert mapping is not None
    prove_refactor(
        [outer, inner],
        [LoopVar(merged.name + "_m", merged.size)],
        {
            n: substitute_vars(v, {merged.name: Var(merged.name + "_m", dtype=_I64)})
            for n, v in mapping.items()
        },
    )
    loops = node.loops if in_reduce else tuple(new_group)
    red = tuple(new_group) if in_reduce else node.reduce
    return _rewrite(node, loops, red, mapping)


def merge_all(
    node: ComputeNode, split: int | None = None, allowed: set[int] | None = None, scale: int = 1
) -> tuple[ComputeNode, int]:
    """Merge every chaining pair (whose boundary is allowed) until none is left; returns the node
    and the number of merges."""
    if len(node.loops) < 2 and len(node.reduce) < 2:
        return node, 0
    count = 0
    while True:
        pairs = mergeable_pairs(node, split, allowed, scale)
        if not pairs:
            return node, count
        k = pairs[-1]
        node = merge_at(node, k)
        if split is not None and k < split:
            split -= 1
        count += 1
