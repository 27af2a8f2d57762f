"""Inductor's sympy index expressions -> fuseopt expression trees, printed by walking the sympy tree.

Nothing is printed with `str()` and parsed back: each sympy node kind has a rule (a table keyed by
the class name), and an unknown kind is an error naming it. Loop variables are the symbols the
capture passed to the loop body; an indirect-indexing symbol stands for the value loaded for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sympy

from fuseopt.capture.digits import merge_radix, simplified_digit
from fuseopt.capture.errors import CaptureError
from fuseopt.ir.expr import Binary, Const, Expr, Unary, Var


def _fold(op: str, items: list[Expr]) -> Expr:
    out = items[0]
    for item in items[1:]:
        out = Binary(op, out, item)
    return out


class IndexPrinter:
    """Converts one node's index expressions. `indirect` maps indirect symbols to their value trees."""

    def __init__(
        self, loop_vars: Mapping[sympy.Symbol, str], indirect: Mapping[sympy.Symbol, Expr], node: str
    ):
        self.loop_vars = loop_vars
        self.indirect = indirect
        self.node = node
        self._rules: dict[str, Callable[[Any], Expr]] = {
            "Integer": self._integer,
            "Zero": self._integer,
            "One": self._integer,
            "NegativeOne": self._integer,
            "IntegerConstant": self._integer,
            "Symbol": self._symbol,
            "Add": self._add,
            "Mul": self._mul,
            "Pow": self._pow,
            "FloorDiv": self._floordiv,
            "CleanDiv": self._floordiv,
            "ModularIndexing": self._modular_indexing,
            "Mod": self._mod,
            "PythonMod": self._mod,
            "Min": self._minmax,
            "Max": self._minmax,
            "Identity": self._identity,  # a wrapper that blocks sympy simplification
            "Abs": self._abs,
        }

    def __call__(self, e: Any) -> Expr:
        if isinstance(e, bool):
            raise self._error(f"a boolean ({e}) where an index was expected")
        if isinstance(e, int):
            return Const(e)
        rule = self._rules.get(type(e).__name__)
        if rule is None:
            raise self._error(
                f"index function {type(e).__name__} is not supported (in {e}); FORMAT v1 index "
                "expressions have + - * // % min max (and abs, as max(a, -a)) and loads"
            )
        return rule(e)

    def _error(self, message: str) -> CaptureError:
        return CaptureError(message, node=self.node)

    def _term_key(self, t: Any) -> tuple[int, Any]:
        """Terms of a sum in loop order (outermost variable first), constants last."""
        order = list(self.loop_vars)
        positions = [order.index(s) for s in t.free_symbols if s in self.loop_vars]
        return (
            min(positions) if positions else len(order) + (0 if t.free_symbols else 1),
            sympy.default_sort_key(t),
        )

    def _integer(self, e: sympy.Integer) -> Expr:
        return Const(int(e))

    def _symbol(self, e: sympy.Symbol) -> Expr:
        if e in self.loop_vars:
            return Var(self.loop_vars[e])
        if e in self.indirect:
            return self.indirect[e]
        raise self._error(
            f"symbol {e.name} in an index is not a loop variable (dynamic shapes are not supported)"
        )

    def _add(self, e: sympy.Add) -> Expr:
        # The printer's term order (deterministic), constants last; negative terms subtract.
        merged = merge_radix(e)
        if not isinstance(merged, sympy.Add):
            return self(merged)
        terms = sorted(sympy.Add.make_args(merged), key=self._term_key)
        out: Expr | None = None
        for t in terms:
            negative = bool(t.as_coeff_Mul()[0].is_negative)
            tree = self(-t) if negative else self(t)
            if out is None:
                out = Unary("neg", tree) if negative else tree
            else:
                out = Binary("sub" if negative else "add", out, tree)
        assert out is not None
        return out

    def _mul(self, e: sympy.Mul) -> Expr:
        coeff, rest = e.as_coeff_Mul()
        factors = [self(f) for f in sympy.Mul.make_args(rest)]
        if coeff == 1:
            return _fold("mul", factors)
        if not coeff.is_Integer:
            raise self._error(f"non-integer coefficient {coeff} in index {e}")
        return _fold("mul", [Const(int(coeff)), *factors])

    def _pow(self, e: sympy.Pow) -> Expr:
        base, exp = e.args
        if not (exp.is_Integer and 1 <= int(exp) <= 8):
            raise self._error(f"power {e} in an index is not supported")
        return _fold("mul", [self(base)] * int(exp))

    def _positive(self, e: Any, what: str) -> int:
        if not (getattr(e, "is_Integer", False) and int(e) > 0):
            raise self._error(f"{what} must be a positive integer literal in FORMAT v1, got {e}")
        return int(e)

    def _floordiv(self, e: Any) -> Expr:
        simpler = simplified_digit(e)
        if simpler is not e:
            return self(simpler)
        base, div = e.args
        return Binary("floordiv", self(base), Const(self._positive(div, "a floor-division divisor")))

    def _modular_indexing(self, e: Any) -> Expr:
        simpler = simplified_digit(e)
        if simpler is not e:
            return self(simpler)
        base, div, mod = e.args
        d = self._positive(div, "a ModularIndexing divisor")
        m = self._positive(mod, "a ModularIndexing modulus")
        inner = self(base) if d == 1 else Binary("floordiv", self(base), Const(d))
        return Binary("mod", inner, Const(m))

    def _mod(self, e: Any) -> Expr:
        simpler = simplified_digit(e)
        if simpler is not e:
            return self(simpler)
        base, mod = e.args
        return Binary("mod", self(base), Const(self._positive(mod, "a modulus")))

    def _abs(self, e: Any) -> Expr:
        """|a| = max(a, -a) (T5's relative positions: `Abs(x1 - x2)`)."""
        a = self(e.args[0])
        return Binary("maximum", a, Unary("neg", a))

    def _identity(self, e: Any) -> Expr:
        return self(e.args[0])

    def _minmax(self, e: Any) -> Expr:
        op = "minimum" if type(e).__name__ == "Min" else "maximum"
        args = sorted(e.args, key=sympy.default_sort_key)
        return _fold(op, [self(a) for a in args])
