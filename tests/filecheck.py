"""A FileCheck-style matcher: the subset of LLVM FileCheck that the golden kernel checks use.

A directive may sit anywhere on a line of the check file (`# CHECK: tl.load(x_ptr + xindex)`);
what follows its colon, stripped, is the pattern: literal text, where a run of whitespace matches
any run of whitespace, and `{{regex}}` blocks (Python `re`; `{{$}}` anchors at the line's end).
Lines without a directive are comments. Matching is line by line, as in LLVM FileCheck:

- `CHECK:` the pattern anywhere after the previous match (on its line too);
- `CHECK-NEXT:` on the line after the previous match's line;
- `CHECK-SAME:` on the previous match's line, after it;
- `CHECK-NOT:` nowhere between the previous match and the next one (or the end of the block);
- `CHECK-COUNT-<n>:` n times in a row, as n `CHECK:` lines would (a later `CHECK-NOT:` rules out
  more);
- `CHECK-LABEL:` matched first, in order, each after the one before: the labels cut the input
  into blocks, and the directives after a label match within its block (those before the first
  label, before it).

`check(checks, text)` raises `FileCheckError` naming the check line that failed and showing the
input where it looked.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

_DIRECTIVE = re.compile(r"(?<![\w-])CHECK(-[A-Z]+(?:-\d+)?)?:")
_KINDS = {None: "CHECK", "-NEXT": "CHECK-NEXT", "-SAME": "CHECK-SAME", "-NOT": "CHECK-NOT"}
_KINDS["-LABEL"] = "CHECK-LABEL"
_SPACE = re.compile(r"[ \t]+")
CONTEXT = 3  # input lines shown after the place a failed check looked from


class FileCheckError(AssertionError):
    """A check that does not hold (or a malformed check file): the message says where."""


@dataclass(frozen=True)
class Directive:
    kind: str  # CHECK, CHECK-NEXT, CHECK-SAME, CHECK-NOT, CHECK-LABEL or CHECK-COUNT
    text: str  # the pattern as written
    pattern: re.Pattern[str]
    line: int  # 1-based, in the check file
    count: int = 1  # matches in a row (CHECK-COUNT-<n>)

    @property
    def name(self) -> str:
        return f"CHECK-COUNT-{self.count}" if self.kind == "CHECK-COUNT" else self.kind


@dataclass(frozen=True, order=True)
class Pos:
    line: int  # 0-based input line
    col: int  # in the line with its whitespace runs made single spaces


@dataclass(frozen=True)
class Match:
    line: int
    start: int
    end: int

    @property
    def begin(self) -> Pos:
        return Pos(self.line, self.start)

    @property
    def after(self) -> Pos:
        return Pos(self.line, self.end)


# -- the check file ---------------------------------------------------------------------------------
def parse(checks: str, name: str = "checks") -> tuple[Directive, ...]:
    """The directives of a check file, in order; raises FileCheckError on a malformed one."""
    out: list[Directive] = []
    for number, line in enumerate(checks.splitlines(), 1):
        m = _DIRECTIVE.search(line)
        if m is None:
            continue
        where = f"{name}:{number}"
        suffix = m.group(1)
        count = 1
        if suffix is not None and (c := re.fullmatch(r"-COUNT-(\d+)", suffix)):
            kind, count = "CHECK-COUNT", int(c.group(1))
            if count < 1:
                raise FileCheckError(f"{where}: error: CHECK-COUNT needs a positive count")
        elif suffix in _KINDS:
            kind = _KINDS[suffix]
        else:
            raise FileCheckError(f"{where}: error: unsupported directive CHECK{suffix}")
        text = line[m.end() :].strip()
        if not text:
            raise FileCheckError(f"{where}: error: {kind} has an empty pattern")
        if kind in ("CHECK-NEXT", "CHECK-SAME") and not any(d.kind != "CHECK-NOT" for d in out):
            raise FileCheckError(f"{where}: error: {kind} without a match before it to follow")
        out.append(Directive(kind, text, compile_pattern(text, where), number, count))
    if not out:
        raise FileCheckError(f"{name}: error: no check directives found")
    return tuple(out)


def compile_pattern(text: str, where: str = "pattern") -> re.Pattern[str]:
    """Literal text (whitespace runs match whitespace runs) with `{{regex}}` blocks; leading and
    trailing whitespace is not part of the pattern."""
    text = text.strip()
    parts: list[str] = []
    i = 0
    while i < len(text):
        start = text.find("{{", i)
        if start < 0:
            parts.append(_literal(text[i:]))
            break
        parts.append(_literal(text[i:start]))
        end = text.find("}}", start + 2)
        if end < 0:
            raise FileCheckError(f"{where}: error: '{{{{' without '}}}}' in {text!r}")
        while text.startswith("}}}", end):  # `{{a{2}}}`: the regex ends at the last brace pair
            end += 1
        regex = text[start + 2 : end]
        try:
            re.compile(regex)
        except re.error as e:
            raise FileCheckError(f"{where}: error: bad regex {{{{{regex}}}}}: {e}") from None
        parts.append(f"(?:{regex})")
        i = end + 2
    return re.compile("".join(parts))


def _literal(text: str) -> str:
    return " ".join(re.escape(piece) for piece in _SPACE.split(text))


# -- matching ---------------------------------------------------------------------------------------
def check(checks: str, text: str, *, checks_name: str = "checks", input_name: str = "input") -> None:
    """Raise FileCheckError unless `text` satisfies the check file `checks`."""
    directives = parse(checks, checks_name)
    _Run(directives, text, checks_name, input_name).run()


class _Run:
    def __init__(self, directives: Sequence[Directive], text: str, checks_name: str, input_name: str):
        self.directives = directives
        self.raw = text.split("\n")
        self.lines = [_SPACE.sub(" ", line) for line in self.raw]
        self.checks_name = checks_name
        self.input_name = input_name

    def run(self) -> None:
        eof = Pos(len(self.lines) - 1, len(self.lines[-1]))
        labels: list[Match] = []
        pos = Pos(0, 0)
        for d in self.directives:
            if d.kind == "CHECK-LABEL":
                m = self.search(d.pattern, pos, eof)
                if m is None:
                    self.fail(d, "label not found in input", pos, eof)
                labels.append(m)
                pos = m.after
        groups: list[list[Directive]] = [[]]
        for d in self.directives:
            if d.kind == "CHECK-LABEL":
                groups.append([])
            else:
                groups[-1].append(d)
        for i, group in enumerate(groups):
            label = labels[i - 1] if i else None
            start = label.after if label else Pos(0, 0)
            end = labels[i].begin if i < len(labels) else eof
            self.block(group, start, end, label)

    def block(self, group: list[Directive], pos: Pos, end: Pos, prev: Match | None) -> None:
        nots: list[Directive] = []
        for d in group:
            if d.kind == "CHECK-NOT":
                nots.append(d)
                continue
            for _ in range(d.count):
                if d.kind == "CHECK-SAME":
                    assert prev is not None
                    m = self.search(d.pattern, pos, min(end, Pos(prev.line, len(self.lines[prev.line]))))
                    if m is None:
                        self.fail(d, "expected string not found on the line of the previous match", pos, end)
                else:
                    m = self.search(d.pattern, pos, end)
                    if m is None:
                        self.fail(d, "expected string not found in input", pos, end)
                if d.kind == "CHECK-NEXT":
                    assert prev is not None
                    if m.line != prev.line + 1:
                        where = "on the same line as" if m.line == prev.line else "not on the line after"
                        what = f"found, but {where} the previous match (input line {prev.line + 1})"
                        self.fail(d, what, m.begin, end, found=m)
                self.excluded(nots, pos, m.begin)
                nots = []
                prev, pos = m, m.after
        self.excluded(nots, pos, end)

    def excluded(self, nots: list[Directive], start: Pos, end: Pos) -> None:
        for d in nots:
            m = self.search(d.pattern, start, end)
            if m is not None:
                self.fail(d, "excluded string found in input", m.begin, end, found=m)

    def search(self, pattern: re.Pattern[str], start: Pos, end: Pos) -> Match | None:
        """The first match at or after `start` that ends at or before `end` (within one line)."""
        for n in range(start.line, min(end.line, len(self.lines) - 1) + 1):
            line = self.lines[n]
            lo = start.col if n == start.line else 0
            hi = end.col if n == end.line else len(line)
            if lo > hi:
                continue
            m = pattern.search(line, lo, hi)
            if m is not None:
                return Match(n, m.start(), m.end())
        return None

    # -- reporting -----------------------------------------------------------------------------------
    def fail(self, d: Directive, what: str, pos: Pos, end: Pos, found: Match | None = None) -> NoReturn:
        at = found.line if found else pos.line
        verb = "found here" if found else "scanning from here"
        out = [
            f"{self.checks_name}:{d.line}: error: {d.name}: {what}",
            f"  {d.name}: {d.text}",
            f"{self.input_name}:{at + 1}: {verb}",
            *self.excerpt(at, at + CONTEXT + 1, mark=at),
        ]
        if found is None:
            near = self.closest(d, pos.line, end.line)
            if near is not None and not pos.line <= near <= pos.line + CONTEXT:
                out += [
                    f"{self.input_name}:{near + 1}: the closest line",
                    *self.excerpt(near, near + 1, near),
                ]
        raise FileCheckError("\n".join(out))

    def excerpt(self, first: int, stop: int, mark: int) -> list[str]:
        return [
            f"{'>' if n == mark else ' '} {n + 1:5} | {self.raw[n]}"
            for n in range(max(0, first), min(stop, len(self.raw)))
        ]

    def closest(self, d: Directive, first: int, last: int) -> int | None:
        """The input line in the range most like the pattern's literal text (a likely intended match)."""
        want = _SPACE.sub(" ", re.sub(r"\{\{.*?\}\}", " ", d.text)).strip()
        best, score = None, 0.5  # below half alike is no hint
        for n in range(first, min(last, len(self.lines) - 1) + 1):
            s = difflib.SequenceMatcher(None, want, self.lines[n].strip(), autojunk=False).ratio()
            if s > score:
                best, score = n, s
        return best
