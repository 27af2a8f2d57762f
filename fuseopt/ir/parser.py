"""A small hand-written parser for docs/format.md expressions: text in, `fuseopt.ir.expr` tree out.

Input is untrusted, so nothing here evaluates text: a regex tokenizer and a precedence-climbing
parser build the tree directly, under the limits of docs/format.md (length, depth, node count, literal
size). Every error is an `ExprError` whose span points at the offending characters.

Precedence, loosest first: `|`, `&`, `~`, comparisons (non-chaining), `+ -`, `* / // %`,
unary `-`, then postfix `buf[...]` and calls.

Only ASCII is accepted (`\\d` and `\\s` would let Unicode digits and spaces in).

Loading a large graph parses tens of thousands of expressions, so the parser works on parallel
token lists rather than token objects, and `parse_expr_text` memoises short texts (trees are
frozen, so sharing one is safe; the cache is bounded in entries and in text length, so that it
never holds much memory). Within texts, an index repeated at the same offset (`b1[128*i0 + i1]`,
`b2[128*i0 + i1]`) is parsed once (`_Parser.bracketed`), and spans are shared values.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from types import FrameType

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
MAX_DEPTH = 64  # levels of the tree: a chain a + b + ... of n terms is n levels
# Levels of parentheses, brackets and calls in the text (the parser's recursion): `to_text` of a
# tree of n levels nests at most 2n - 1 deep (`-(-(...))`, `a - (b - (...))`). Every tree within
# MAX_DEPTH must print to text that parses, and one a level over it should hear about its depth.
MAX_NESTING = 2 * (MAX_DEPTH + 1)
MAX_NODES = 1024
MAX_INT = 2**63  # |literal| < MAX_INT

# Token kinds.
_FLOAT, _INT, _NAME, _OP, _BAD, _END = 1, 2, 3, 4, 5, 6
_KIND_NAMES = {_FLOAT: "float", _INT: "int", _NAME: "name", _OP: "op", _END: "end"}

# Every non-blank character starts some alternative (the last one catches the rest), so matches
# are contiguous: the blanks before each token (group 1) and the tokens give every start position.
# Names and operators, the most frequent tokens, are tried first (no other alternative can start
# like them); a float before an int, which is a float's prefix. ASCII only: `\d` and `\s` would
# admit Unicode digits and spaces.
_BLANKS = " \t\r\n\f\v"
_TOKEN = re.compile(
    r"""([ \t\r\n\f\v]*)(?:
      ([A-Za-z_][A-Za-z0-9_]*)
    | (//|<=|>=|==|!=|[-+*/%<>&|~()\[\],])
    | ((?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
    | ([0-9]+)
    | ([^ \t\r\n\f\v])
    )""",
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
_COMPARE_OPS = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})
_WORD_CONSTS: dict[str, float | bool] = {
    "inf": float("inf"),
    "nan": float("nan"),
    "true": True,
    "false": False,
}


# Spans are frozen values, and a graph's expressions share a few hundred (start, end) pairs: the
# parser takes one object per pair instead of constructing one per node.
_span: Callable[[int, int], Span] = lru_cache(maxsize=1 << 14)(Span)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # float | int | name | op | end
    text: str
    start: int

    @property
    def span(self) -> Span:
        return Span(self.start, self.start + max(1, len(self.text)))


def _too_long(text: str) -> ExprError:
    return ExprError(
        f"expression is {len(text)} characters long; the limit is {MAX_TEXT}",
        text,
        Span(MAX_TEXT, len(text)),
        code="limit",
    )


def _lex(text: str) -> tuple[list[int], list[str], list[int]]:
    """Parallel lists (kind, text, start), ending with an `_END` token."""
    if len(text) > MAX_TEXT:
        raise _too_long(text)
    kinds: list[int] = []
    texts: list[str] = []
    starts: list[int] = []
    add_kind, add_text, add_start = kinds.append, texts.append, starts.append
    pos = 0
    # Up to the last token: trailing blanks made every start position among them backtrack the
    # whole run (4096 blanks took seconds). `findall` and tuples: match objects cost a third more.
    for blank, word, op, flt, num, bad in _TOKEN.findall(text, 0, len(text.rstrip(_BLANKS))):
        if blank:
            pos += len(blank)
        if word:
            add_kind(_NAME)
            tok = word
        elif op:
            add_kind(_OP)
            tok = op
        elif num:
            add_kind(_INT)
            tok = num
        elif flt:
            add_kind(_FLOAT)
            tok = flt
        else:
            raise ExprError(f"unexpected character {bad!r}", text, Span(pos, pos + 1), code="syntax")
        add_text(tok)
        add_start(pos)
        pos += len(tok)
    add_kind(_END)
    add_text("")
    add_start(len(text))
    return kinds, texts, starts


def tokenize(text: str) -> list[Token]:
    """The token stream (for tools and tests; the parser uses `_lex` directly)."""
    kinds, texts, starts = _lex(text)
    return [Token(_KIND_NAMES[k], t, s) for k, t, s in zip(kinds, texts, starts, strict=True)]


class _Parser:
    __slots__ = ("text", "kinds", "texts", "starts", "i", "depth", "nodes")

    def __init__(self, text: str):
        self.text = text
        self.kinds, self.texts, self.starts = _lex(text)
        self.i = 0
        self.depth = 0
        self.nodes = 0

    # -- helpers -----------------------------------------------------------------------------
    def error(self, message: str, span: Span, code: str = "syntax") -> ExprError:
        return ExprError(message, self.text, span, code=code)

    def span_at(self, i: int) -> Span:
        s = self.starts[i]
        return Span(s, s + max(1, len(self.texts[i])))

    def is_op(self, text: str) -> bool:
        return self.kinds[self.i] == _OP and self.texts[self.i] == text

    def expect(self, text: str) -> int:
        """Consume the operator `text`; returns its start."""
        i = self.i
        if self.kinds[i] != _OP or self.texts[i] != text:
            found = "end of expression" if self.kinds[i] == _END else repr(self.texts[i])
            raise self.error(f"expected {text!r}, found {found}", self.span_at(i))
        self.i = i + 1
        return self.starts[i]

    def count(self, span: Span) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error(f"expression has more than {MAX_NODES} nodes", span, code="limit")

    # -- grammar -----------------------------------------------------------------------------
    def parse(self) -> Expr:
        if self.kinds[0] == _END:
            raise self.error("empty expression", Span(0, max(1, len(self.text))))
        e = self.expr(0)
        if self.kinds[self.i] != _END:
            raise self.error(
                f"unexpected {self.texts[self.i]!r} after a complete expression", self.span_at(self.i)
            )
        # A tree is never deeper than it has nodes: most expressions need no walk.
        height, too_deep = tree_height(e) if self.nodes > MAX_DEPTH else (0, None)
        if too_deep is not None:
            raise self.error(
                f"expression nests deeper than {MAX_DEPTH} levels: its tree is {height} levels deep "
                f"(each operation, call or load is a level above its operands: a chain "
                f"a + b + ... of {MAX_DEPTH + 1} terms is {MAX_DEPTH + 1} levels)",
                too_deep.span,
                code="limit",
            )
        return e

    def expr(self, min_prec: int) -> Expr:
        # Bounds the parser's own recursion (parentheses, brackets, calls, prefix operators);
        # `tree_height` bounds the tree, which left-associated chains deepen without recursing.
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(
                f"parentheses, brackets and calls nest deeper than {MAX_NESTING} levels",
                self.span_at(self.i),
                code="limit",
            )
        kinds, texts = self.kinds, self.texts
        # Names and literals are most operands: skip the prefix/primary dispatch for them.
        k = kinds[self.i]
        if k == _NAME:
            left = self.name()
        elif k == _INT:
            left = self.literal()
            self.count(left.span)
        else:
            left = self.prefix()
        while kinds[self.i] == _OP:
            info = _BINOPS.get(texts[self.i])
            if info is None:
                break
            prec, op = info
            if prec <= min_prec:
                break
            self.i += 1
            right = self.expr(prec)
            span = _span(left.span.start, right.span.end)
            if prec == _COMPARE_PREC and self._is_compare(left):
                raise self.error("comparisons do not chain; write (a < b) & (b < c)", span)
            self.nodes += 1  # self.count(span), inline: this runs for every operator
            if self.nodes > MAX_NODES:
                raise self.error(f"expression has more than {MAX_NODES} nodes", span, code="limit")
            left = Binary(op, left, right, span=span)
        self.depth -= 1
        return left

    def _is_compare(self, e: Expr) -> bool:
        # A parenthesised comparison may be compared again: `(a < b) == c`.
        parenthesised = self.text[e.span.start : e.span.start + 1] == "("
        return isinstance(e, Binary) and e.op in _COMPARE_OPS and not parenthesised

    def prefix(self) -> Expr:
        i = self.i
        if self.kinds[i] == _OP:
            t = self.texts[i]
            start = self.starts[i]
            if t == "-":
                self.i = i + 1
                nk = self.kinds[i + 1]
                if nk in (_INT, _FLOAT):
                    lit = self.literal()
                    span = _span(start, lit.span.end)
                    self.count(span)
                    return Const(-lit.value, span=span)
                if nk == _NAME and self.texts[i + 1] == "inf":
                    self.i = i + 2
                    span = _span(start, self.starts[i + 1] + 3)
                    self.count(span)
                    return Const(float("-inf"), span=span)
                x = self.expr(_NEG_PREC)
                span = _span(start, x.span.end)
                self.count(span)
                return Unary("neg", x, span=span)
            if t == "~":
                self.i = i + 1
                x = self.expr(_NOT_PREC)
                span = _span(start, x.span.end)
                self.count(span)
                return Unary("not", x, span=span)
            if t == "+":
                raise self.error("unary '+' is not part of the language", self.span_at(i))
        return self.primary()

    def literal(self) -> Const:
        i = self.i
        self.i = i + 1
        text = self.texts[i]
        start = self.starts[i]
        span = _span(start, start + len(text))
        if self.kinds[i] == _INT:
            v = int(text)
            if v >= MAX_INT:
                raise self.error(f"integer literal {text} is out of range (|v| < 2**63)", span, code="limit")
            return Const(v, span=span)
        f = float(text)  # the regex only admits valid float literals
        if f == float("inf"):
            raise self.error(f"float literal {text} overflows; write inf", span, code="limit")
        return Const(f, span=span)

    def primary(self) -> Expr:
        i = self.i
        k = self.kinds[i]
        if k == _NAME:
            return self.name()
        if k in (_INT, _FLOAT):
            lit = self.literal()
            self.count(lit.span)
            return lit
        if k == _OP and self.texts[i] == "(":
            self.i = i + 1
            e = self.expr(0)
            close = self.expect(")")
            # Keep the parenthesised span so carets cover what the user wrote.
            return replace(e, span=_span(self.starts[i], close + 1))
        if k == _END:
            raise self.error("unexpected end of expression", self.span_at(i))
        raise self.error(f"unexpected {self.texts[i]!r}", self.span_at(i))

    def name(self) -> Expr:
        i = self.i
        word = self.texts[i]
        start = self.starts[i]
        self.i = i + 1
        const = _WORD_CONSTS.get(word)
        if const is not None:
            span = _span(start, start + len(word))
            self.count(span)
            return Const(const, span=span)
        if self.kinds[i + 1] == _OP:
            nxt = self.texts[i + 1]
            if nxt == "[":
                self.i = i + 2
                index = self.bracketed()
                close = self.expect("]")
                span = _span(start, close + 1)
                self.count(span)
                return Load(word, index, span=span)
            if nxt == "(":
                return self.call(i)
        span = _span(start, start + len(word))
        if word in _CALLABLES:
            raise self.error(f"{word!r} is a function and needs arguments: {word}(...)", span)
        self.nodes += 1  # self.count(span), inline: most nodes are variables
        if self.nodes > MAX_NODES:
            raise self.error(f"expression has more than {MAX_NODES} nodes", span, code="limit")
        return Var(word, span=span)

    def bracketed(self) -> Expr:
        """The index of `name[...]`, its `[` consumed; the parse stops before the `]`.

        A graph's nodes repeat a few index texts at the same offsets (`b1[128*i0 + i1]`,
        `b2[128*i0 + i1]`): the tree of one is every other's (same tokens at the same positions,
        so the same spans), shared, as trees are frozen. Only a tree that parsed is kept, with its
        node count, and it is reused only where the limits leave room for it (else the text is
        parsed again, to the same error).
        """
        first = self.i
        texts = self.texts
        try:
            close = texts.index("]", first)  # only an operator token reads "]"
        except ValueError:
            return self.expr(0)
        if "[" in texts[first:close]:  # nested brackets (indirect indexing): not kept
            return self.expr(0)
        start = self.starts[first]
        key = (self.text[start : self.starts[close]], start)
        hit = _INDICES.get(key)
        if hit is not None and self.nodes + hit[1] <= MAX_NODES and self.depth + close - first < MAX_NESTING:
            # Each level of the parser's recursion consumes a token first: parsing these tokens
            # again would stay within MAX_NESTING, and add hit[1] nodes.
            self.nodes += hit[1]
            self.i = close
            return hit[0]
        nodes = self.nodes
        e = self.expr(0)
        if self.i == close and len(key[0]) <= _CACHED_INDEX:
            if len(_INDICES) >= _INDICES_MAX:
                _INDICES.clear()
            _INDICES[key] = (e, self.nodes - nodes)
        return e

    def call(self, name_i: int) -> Expr:
        word = self.texts[name_i]
        if word not in _CALLABLES:
            raise self.error(f"unknown function {word!r}", self.span_at(name_i), code="unknown-function")
        self.expect("(")
        args: list[Expr] = []
        if not self.is_op(")"):
            while True:
                if word == "cast" and len(args) == 1:
                    args.append(self.dtype_arg())
                else:
                    args.append(self.expr(0))
                if self.is_op(","):
                    self.i += 1
                    continue
                break
        close = self.expect(")")
        span = _span(self.starts[name_i], close + 1)
        allowed = _ARITY[word]
        if len(args) not in allowed:
            counts = sorted(allowed)
            want = " or ".join(str(n) for n in counts)
            noun = "argument" if counts == [1] else "arguments"
            raise self.error(f"{word}() takes {want} {noun}, got {len(args)}", span, code="arity")
        self.count(span)
        return _build_call(word, args, span)

    def dtype_arg(self) -> Expr:
        i = self.i
        self.i = i + 1
        if self.kinds[i] != _NAME or self.texts[i] not in DTYPE_NAMES:
            raise self.error(
                f"cast() needs a dtype as its second argument ({', '.join(sorted(DTYPE_NAMES))})",
                self.span_at(i),
                code="dtype",
            )
        return _DTypeMarker(self.texts[i], span=self.span_at(i))


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


def tree_height(e: Expr) -> tuple[int, Expr | None]:
    """The tree's height (a leaf is 1), and its lowest subtree over MAX_DEPTH levels, if any.

    Iterative, so that it is safe on any tree; every recursive walker of the code base relies on
    parsed trees being at most MAX_DEPTH levels deep."""
    heights: dict[int, int] = {}
    too_deep: Expr | None = None
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, done = stack.pop()
        kids = node.children()
        if not done and kids:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
            continue
        h = 1 + max((heights[id(k)] for k in kids), default=0)
        heights[id(node)] = h
        if h == MAX_DEPTH + 1 and too_deep is None:
            too_deep = node
    return heights[id(e)], too_deep


_CACHED_TEXT = 256
# Bracketed indices kept by `_Parser.bracketed`: (text, offset) -> (tree, nodes); bounded.
_INDICES: dict[tuple[str, int], tuple[Expr, int]] = {}
_INDICES_MAX = 4096
_CACHED_INDEX = 128


@lru_cache(maxsize=2048)
def _parse_cached(text: str) -> Expr:
    return _Parser(text).parse()


# Python frames one level of nesting takes in the parser (expr -> prefix -> primary -> expr, with
# a prefix operator's own frame), for the stack headroom of deeply nested text.
_FRAMES_PER_LEVEL = 5
_SHALLOW = 24  # texts with fewer opening symbols than this cannot nest deep enough to need it


def parse_expr_text(text: str) -> Expr:
    """Parse one expression (index, condition or value). Raises ExprError with a span.

    Text nested up to MAX_NESTING levels parses from any caller's stack depth: the recursion
    limit is raised for the parse where the frames in use leave too little room."""
    if not isinstance(text, str):
        raise ExprError("expression must be a string", str(text), Span(0, 1))
    parse = _parse_cached if len(text) <= _CACHED_TEXT else (lambda t: _Parser(t).parse())
    if sum(text.count(c) for c in "([-~") < _SHALLOW:
        return parse(text)
    limit = sys.getrecursionlimit()
    need = _frames_in_use() + _FRAMES_PER_LEVEL * (MAX_NESTING + 2) + 100
    if need <= limit:
        return parse(text)
    sys.setrecursionlimit(need)
    try:
        return parse(text)
    finally:
        sys.setrecursionlimit(limit)


def _frames_in_use() -> int:
    frame: FrameType | None = sys._getframe()
    n = 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def parse_store(text: str) -> Load:
    """Parse a `store` field: exactly `buffer[index]`."""
    e = parse_expr_text(text)
    if not isinstance(e, Load):
        raise ExprError("a store must be of the form buffer[index]", text, e.span, code="store")
    return e
