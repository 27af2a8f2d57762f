"""A small hand-written parser for FORMAT.md expressions: text in, `fuseopt.ir.expr` tree out.

Input is untrusted, so nothing here evaluates text: a regex tokenizer and a precedence-climbing
parser build the tree directly, under the limits of FORMAT.md (length, depth, node count, literal
size). Every error is an `ExprError` whose span points at the offending characters.

Precedence, loosest first: `|`, `&`, `~`, comparisons (non-chaining), `+ -`, `* / // %`,
unary `-`, then postfix `buf[...]` and calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from fuseopt.errors import ExprError, Span
from fuseopt.ir.dtypes import DTYPE_NAMES, DType
from fuseopt.ir.expr import (
    BINARY_FUNCS,
    REDUCTIONS,
    UNARY_FUNCS,
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
)

MAX_TEXT = 4096
MAX_DEPTH = 64
MAX_NODES = 1024
MAX_INT = 2**63  # |literal| < MAX_INT

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>\d+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>//|<=|>=|==|!=|[-+*/%<>&|~()\[\],])
    """,
    re.VERBOSE,
)

_BINOPS: dict[str, tuple[int, str]] = {
    "|": (1, "or"),
    "&": (2, "and"),
    "<": (4, "lt"),
    "<=": (4, "le"),
    ">": (4, "gt"),
    ">=": (4, "ge"),
    "==": (4, "eq"),
    "!=": (4, "ne"),
    "+": (5, "add"),
    "-": (5, "sub"),
    "*": (6, "mul"),
    "/": (6, "truediv"),
    "//": (6, "floordiv"),
    "%": (6, "mod"),
}
_NOT_PREC = 3
_COMPARE_PREC = 4
_NEG_PREC = 7


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # float | int | name | op | end
    text: str
    start: int

    @property
    def span(self) -> Span:
        return Span(self.start, self.start + max(1, len(self.text)))


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_TEXT:
        raise ExprError(
            f"expression is {len(text)} characters long; the limit is {MAX_TEXT}",
            text,
            Span(MAX_TEXT, len(text)),
            code="limit",
        )
    out: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExprError(f"unexpected character {text[pos]!r}", text, Span(pos, pos + 1), code="syntax")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(Token(kind, m.group(), pos))
        pos = m.end()
    out.append(Token("end", "", len(text)))
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0
        self.nodes = 0

    # -- helpers -----------------------------------------------------------------------------
    def error(self, message: str, span: Span, code: str = "syntax") -> ExprError:
        return ExprError(message, self.text, span, code=code)

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def advance(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text: str) -> Token:
        t = self.tok
        if t.kind != "op" or t.text != text:
            found = "end of expression" if t.kind == "end" else repr(t.text)
            raise self.error(f"expected {text!r}, found {found}", t.span)
        return self.advance()

    def node(self, e: Expr) -> Expr:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error(
                f"expression has more than {MAX_NODES} nodes", Span(e.span.start, e.span.end), code="limit"
            )
        return e

    def enter(self, at: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"expression nests deeper than {MAX_DEPTH} levels", at.span, code="limit")

    def leave(self) -> None:
        self.depth -= 1

    # -- grammar -----------------------------------------------------------------------------
    def parse(self) -> Expr:
        if self.tok.kind == "end":
            raise self.error("empty expression", Span(0, max(1, len(self.text))))
        e = self.expr(0)
        if self.tok.kind != "end":
            raise self.error(f"unexpected {self.tok.text!r} after a complete expression", self.tok.span)
        return e

    def expr(self, min_prec: int) -> Expr:
        self.enter(self.tok)
        left = self.prefix()
        while True:
            t = self.tok
            if t.kind != "op" or t.text not in _BINOPS:
                break
            prec, op = _BINOPS[t.text]
            if prec <= min_prec:
                break
            self.advance()
            right = self.expr(prec)
            if prec == _COMPARE_PREC and self._is_compare(left):
                raise self.error(
                    "comparisons do not chain; write (a < b) & (b < c)", Span(left.span.start, right.span.end)
                )
            left = self.node(Binary(op, left, right, span=Span(left.span.start, right.span.end)))
        self.leave()
        return left

    def _is_compare(self, e: Expr) -> bool:
        # A parenthesised comparison may be compared again: `(a < b) == c`.
        parenthesised = self.text[e.span.start : e.span.start + 1] == "("
        return isinstance(e, Binary) and e.op in ("lt", "le", "gt", "ge", "eq", "ne") and not parenthesised

    def prefix(self) -> Expr:
        t = self.tok
        if t.kind == "op" and t.text == "-":
            self.advance()
            nxt = self.tok
            if nxt.kind in ("int", "float"):
                lit = self.literal()
                assert isinstance(lit, Const)
                value = -lit.value
                return self.node(Const(value, span=Span(t.start, lit.span.end)))
            if nxt.kind == "name" and nxt.text == "inf":
                self.advance()
                return self.node(Const(float("-inf"), span=Span(t.start, nxt.span.end)))
            x = self.expr(_NEG_PREC)
            return self.node(Unary("neg", x, span=Span(t.start, x.span.end)))
        if t.kind == "op" and t.text == "~":
            self.advance()
            x = self.expr(_NOT_PREC)
            return self.node(Unary("not", x, span=Span(t.start, x.span.end)))
        if t.kind == "op" and t.text == "+":
            raise self.error("unary '+' is not part of the language", t.span)
        return self.primary()

    def literal(self) -> Expr:
        t = self.advance()
        if t.kind == "int":
            v = int(t.text)
            if v >= MAX_INT:
                raise self.error(
                    f"integer literal {t.text} is out of range (|v| < 2**63)", t.span, code="limit"
                )
            return Const(v, span=t.span)
        try:
            f = float(t.text)
        except ValueError as exc:  # pragma: no cover - the regex only admits valid floats
            raise self.error(f"bad float literal {t.text!r}", t.span) from exc
        if f in (float("inf"), float("-inf")):
            raise self.error(f"float literal {t.text} overflows; write inf", t.span, code="limit")
        return Const(f, span=t.span)

    def primary(self) -> Expr:
        t = self.tok
        if t.kind in ("int", "float"):
            return self.node(self.literal())
        if t.kind == "op" and t.text == "(":
            self.advance()
            e = self.expr(0)
            close = self.expect(")")
            # Keep the parenthesised span so carets cover what the user wrote.
            return _respan(e, Span(t.start, close.start + 1))
        if t.kind == "name":
            return self.name()
        if t.kind == "end":
            raise self.error("unexpected end of expression", t.span)
        raise self.error(f"unexpected {t.text!r}", t.span)

    def name(self) -> Expr:
        t = self.advance()
        word = t.text
        if word in ("inf", "nan", "true", "false"):
            value: float | bool = {"inf": float("inf"), "nan": float("nan"), "true": True, "false": False}[
                word
            ]
            return self.node(Const(value, span=t.span))
        if self.tok.kind == "op" and self.tok.text == "[":
            self.advance()
            index = self.expr(0)
            close = self.expect("]")
            return self.node(Load(word, index, span=Span(t.start, close.start + 1)))
        if self.tok.kind == "op" and self.tok.text == "(":
            return self.call(t)
        if word in _CALLABLES:
            raise self.error(f"{word!r} is a function and needs arguments: {word}(...)", t.span)
        if word.startswith("__"):
            raise self.error(f"names starting with '__' are not allowed: {word!r}", t.span)
        return self.node(Var(word, span=t.span))

    def call(self, name_tok: Token) -> Expr:
        word = name_tok.text
        if word not in _CALLABLES:
            raise self.error(f"unknown function {word!r}", name_tok.span, code="unknown-function")
        self.expect("(")
        args: list[Expr] = []
        arg_spans: list[Token] = []
        if not (self.tok.kind == "op" and self.tok.text == ")"):
            while True:
                arg_spans.append(self.tok)
                if word == "cast" and len(args) == 1:
                    args.append(self.dtype_arg())
                else:
                    args.append(self.expr(0))
                if self.tok.kind == "op" and self.tok.text == ",":
                    self.advance()
                    continue
                break
        close = self.expect(")")
        span = Span(name_tok.start, close.start + 1)
        allowed = _ARITY[word]
        if len(args) not in allowed:
            want = " or ".join(str(n) for n in sorted(allowed))
            raise self.error(f"{word}() takes {want} argument(s), got {len(args)}", span, code="arity")
        return self.node(_build_call(word, args, span))

    def dtype_arg(self) -> Expr:
        t = self.advance()
        if t.kind != "name" or t.text not in DTYPE_NAMES:
            raise self.error(
                f"cast() needs a dtype as its second argument ({', '.join(sorted(DTYPE_NAMES))})",
                t.span,
                code="dtype",
            )
        return _DTypeMarker(t.text, span=t.span)


@dataclass(frozen=True, slots=True)
class _DTypeMarker(Expr):
    """Only lives between parsing cast()'s arguments and building the Cast node."""

    name: str


_ARITY: dict[str, frozenset[int]] = {
    **{f: frozenset({1}) for f in UNARY_FUNCS},
    **{f: frozenset({2}) for f in BINARY_FUNCS},
    **{f: frozenset({1}) for f in REDUCTIONS},
    "min": frozenset({1, 2}),
    "max": frozenset({1, 2}),
    "where": frozenset({3}),
    "masked": frozenset({3}),
    "cast": frozenset({2}),
    "index": frozenset({1}),
}
_CALLABLES = frozenset(_ARITY)


def _build_call(word: str, args: list[Expr], span: Span) -> Expr:
    if word in ("min", "max") and len(args) == 2:
        return Binary("minimum" if word == "min" else "maximum", args[0], args[1], span=span)
    if word in REDUCTIONS:
        return Reduce(word, args[0], span=span)
    if word in UNARY_FUNCS:
        return Unary(word, args[0], span=span)
    if word in BINARY_FUNCS:
        return Binary(word, args[0], args[1], span=span)
    if word == "where":
        return Where(args[0], args[1], args[2], span=span)
    if word == "masked":
        return Masked(args[0], args[1], args[2], span=span)
    if word == "index":
        return IndexValue(args[0], span=span)
    marker = args[1]
    assert isinstance(marker, _DTypeMarker)
    return Cast(args[0], DType(marker.name), span=span)


def _respan(e: Expr, span: Span) -> Expr:
    return replace(e, span=span)


def parse_expr_text(text: str) -> Expr:
    """Parse one expression (index, condition or value). Raises ExprError with a span."""
    if not isinstance(text, str):
        raise ExprError("expression must be a string", str(text), Span(0, 1))
    return _Parser(text).parse()


def parse_store(text: str) -> Load:
    """Parse a `store` field: exactly `buffer[index]`."""
    e = parse_expr_text(text)
    if not isinstance(e, Load):
        raise ExprError("a store must be of the form buffer[index]", text, e.span, code="store")
    return e
