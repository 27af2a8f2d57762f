"""The rules that turn a generated Triton module into its golden check file (tests/filecheck.py).

A check file keeps what a kernel's structure is, not its text: per kernel, the strategy (the
header comment, with the tuned counts abstracted), a CHECK-LABEL on its `def`, its tile's
constexpr blocks, the program ids and axis indices (the grid's shape), loops, reductions, and
every load and store: its buffer, the axis along which its index is contiguous (the term of unit
stride), its mask and its eviction hint. The wrapper keeps each launch's grid rank, its launch
keywords and the cluster and dependent-launch structure around it.

Abstracted: temporaries (tmpN, _accN, winN: `{{[a-z0-9_]+}}`; a digit xN keeps its axis:
`x{{[0-9]+}}`), integer literals of tuning (blocks, chunks, rows, cells, grids: `{{[0-9]+}}`; 0 and 1
stay, and so do the sizes after `=` in a header), and the rest of an index beside its unit-stride
term. A kernel without masks also checks that its prologue defines none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fuseopt.codegen.layout import LINE_LENGTH

TEMP = "{{[a-z0-9_]+}}"
NUMBER = "{{[0-9]+}}"
# One pass: temporaries, digits of an axis (xN, yN, r0_N), integer literals (not in names or floats).
_ABSTRACT = re.compile(
    r"(?P<temp>\b(?:tmp\d+|_acc\d+(?:_[a-z]+)*|win\d+)\b)|\b(?P<axis>x|y|r0_)\d+\b"
    r"|(?<![\w.])(?<!\de[-+])\d+(?![\w.])"
)
_HEADER_INT = re.compile(r"(?<![\w.=])(?<!part )\d+(?![\w.])")
_NAME = re.compile(r"[A-Za-z_]\w*")
_REDUCTIONS = ("tl.sum(", "tl.max(", "tl.min(", "tl.reduce(", "_argmax_final(", "_argmin_final(")
_TEMP_NAME = re.compile(r"tmp\d+|_acc\d+(?:_[a-z]+)*|win\d+")
_AXIS_DIGIT = re.compile(r"(x|y|r0_)\d+")


class CheckRuleError(ValueError):
    """Generated code that the rules do not know how to abstract (extend this module)."""


@dataclass(frozen=True)
class Check:
    kind: str  # CHECK, CHECK-NEXT, CHECK-SAME, CHECK-NOT, CHECK-LABEL (CHECK-COUNT-n: `_counted`)
    pattern: str


# -- lines and statements ---------------------------------------------------------------------------
def _depth(text: str) -> int:
    depth = 0
    quote: str | None = None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth


def statements(lines: list[str]) -> Iterator[list[str]]:
    """Physical lines grouped into statements (a wrapped call continues until its brackets close)."""
    group: list[str] = []
    for line in lines:
        group.append(line)
        if _depth("\n".join(group)) <= 0:
            yield group
            group = []
    if group:
        yield group


def split_args(inner: str) -> list[str]:
    """Top-level comma-separated arguments."""
    out, cur, depth = [], "", 0
    for ch in inner:
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() else out


def _closing(text: str, open_at: int) -> int:
    """Index of the bracket closing the one at `open_at`."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += (text[i] in "([{") - (text[i] in ")]}")
        if depth == 0:
            return i
    raise CheckRuleError(f"unbalanced brackets in {text!r}")


# -- abstraction ----------------------------------------------------------------------------------
def abstract(text: str, numbers: bool = True) -> str:
    """Temporaries (and, with `numbers`, integer literals other than 0 and 1) as regex blocks."""

    def sub(m: re.Match[str]) -> str:
        if m.group("temp"):
            return TEMP
        if m.group("axis"):
            return m.group("axis") + NUMBER
        return NUMBER if numbers and m.group() not in ("0", "1") else m.group()

    return _ABSTRACT.sub(sub, text)


def _terms(index: str) -> list[str]:
    """The top-level terms of a sum, each with its sign (`+ a`, `- 3`); one outer pair of
    parentheses stripped."""
    if index.startswith("(") and _closing(index, 0) == len(index) - 1:
        index = index[1:-1]
    terms, cur, depth = [], "+ ", 0
    i = 0
    while i < len(index):
        ch = index[i]
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 0 and index.startswith((" + ", " - "), i):
            terms.append(cur)
            cur = index[i + 1 : i + 3]
            i += 3
            continue
        cur += ch
        i += 1
    return [*terms, cur]


def index_pattern(index: str) -> str:
    """An index as the term along which it is contiguous: one regex block for `a sum with the
    bare name T among its terms` (named axes chosen before temporaries); the index itself
    (temporaries abstracted) where no term has unit stride."""
    if "," in index:  # a broadcast (tl.full, tl.zeros) or a call: no sum of terms to read
        return abstract(index, numbers=False)
    names = [t[2:] for t in _terms(index) if t.startswith("+ ") and _NAME.fullmatch(t[2:])]
    if not names:
        return abstract(index, numbers=False)
    unit = min(names, key=lambda n: (abstract(n) != n, names.index(n)))
    if _TEMP_NAME.fullmatch(unit):
        term = "[a-z0-9_]+"
    elif m := _AXIS_DIGIT.fullmatch(unit):
        term = f"{m.group(1)}[0-9]+"
    else:
        term = re.escape(unit)
    return f"{{{{([^,]*[(+] ?)?{term}(\\)| [+-] [^,]*)?}}}}"


def call_pattern(fn: str, args: list[str]) -> str:
    """`tl.load(...)` / `tl.store(...)` with the pointer kept, the index as its unit term, values
    and masks abstracted, keyword arguments (other=, eviction_policy=) as written."""
    ptr, _, index = args[0].partition(" + ")
    if not index:
        raise CheckRuleError(f"{fn}: no `pointer + index` in {args[0]!r}")
    parts = [f"{ptr} + {index_pattern(index)}", *(abstract(a) for a in args[1:])]
    return f"{fn}({', '.join(parts)})"


def header_pattern(line: str) -> str:
    """A kernel's header comment: its strategy, with counts of tuning abstracted (a header cut
    at the line length loses its cut piece)."""
    if len(line) >= LINE_LENGTH and line.endswith("..."):
        line = line[:-3].rsplit(", ", 1)[0]
    return _HEADER_INT.sub(NUMBER, line)


# -- one kernel ---------------------------------------------------------------------------------------
def kernel_checks(name: str, signature: list[str], body: list[str]) -> list[Check]:
    out = [Check("CHECK-LABEL", f"def {name}(")]
    params = split_args("".join(s.strip() for s in signature)[len(f"def {name}(") : -2])
    out += [Check("CHECK", p) for p in params if p.endswith(": tl.constexpr")]
    masked = any(re.match(r"\s*\w*mask = ", line) for line in body)
    prologue = True
    for group in statements(body):
        checks = statement_checks(group)
        if prologue and checks and not _prologue(group[0]):
            prologue = False
            if not masked:
                out.append(Check("CHECK-NOT", "mask ="))
        out += checks
    return out


def _prologue(line: str) -> bool:
    """A statement of the prologue: the definition of a program id, an axis index or a mask (a
    fixed name), or a call such as `_gdc_wait(PDL)`; not a load, a loop, an accumulator."""
    m = re.match(r"\s*(\w+) = ", line)
    if m is None:
        return re.fullmatch(r"\s*\w+\(\w*\)", line) is not None
    return abstract(m.group(1)) == m.group(1) and "tl.load(" not in line


def statement_checks(group: list[str]) -> list[Check]:
    """The checks of one statement (its physical lines), or none where it is not structure."""
    text = " ".join(line.strip() for line in group)
    target, eq, rhs = text.partition(" = ")
    if not eq or not _NAME.fullmatch(target):
        target, rhs = "", text
    if "tl.load(" in rhs or rhs.startswith("tl.store("):
        return _access(group)
    if text.startswith("for ") or (target and abstract(target) == target):
        return _lines(group, abstract)
    if rhs.startswith(_REDUCTIONS) or (target.startswith("_acc") and rhs.startswith("tl.full(")):
        return _lines(group, lambda s: abstract(_rhs(s)))
    if not target and re.fullmatch(r"\w+\(.*\)", text) and "," not in text:  # _gdc_wait(PDL)
        return [Check("CHECK", text)]
    return []


def _rhs(line: str) -> str:
    target, eq, rhs = line.partition(" = ")
    return rhs if eq and _NAME.fullmatch(target) else line


def _lines(group: list[str], pattern: Callable[[str], str]) -> list[Check]:
    if len(group) > 1:
        raise CheckRuleError(f"a wrapped statement the rules do not split: {group[0].strip()!r}")
    return [Check("CHECK", pattern(group[0].strip()))]


def _access(group: list[str]) -> list[Check]:
    """A load or store: one check on its line, `{{$}}` so that nothing (a mask, a hint) follows
    unchecked; a call wrapped over three lines checks its argument line next."""
    first = _rhs(group[0].strip())
    fn = "tl.store" if first.startswith("tl.store(") else "tl.load"
    at = first.index(f"{fn}(")
    if len(group) == 1:
        end = _closing(first, at + len(fn))
        args = split_args(first[at + len(fn) + 1 : end])
        return [Check("CHECK", call_pattern(fn, args) + abstract(first[end + 1 :]) + "{{$}}")]
    if len(group) == 3 and first.endswith(f"{fn}(") and group[2].strip() == ")":
        args = split_args(group[1].strip())
        inner = call_pattern(fn, args)[len(fn) + 1 : -1]
        return [Check("CHECK", f"{fn}({{{{$}}}}"), Check("CHECK-NEXT", inner + "{{$}}")]
    raise CheckRuleError(f"a wrapped {fn} the rules do not split: {group[0].strip()!r}")


# -- the wrapper ----------------------------------------------------------------------------------------
_LAUNCH = re.compile(r"(triton_\w+)\[\((.*?)\)\]\(")


def wrapper_checks(body: list[str], module: str) -> list[Check]:
    out = [Check("CHECK-LABEL", "def call(")]
    if "_clusters(" not in module:
        out.append(Check("CHECK-NOT", "_clusters("))
    if "_pdl(" not in module:
        out.append(Check("CHECK-NOT", "pdl"))
    after_branch = False
    for group in statements(body):
        text = " ".join(line.strip() for line in group)
        m = _LAUNCH.match(text)
        if m:
            dims = [NUMBER for d in m.group(2).split(",") if d.strip()]
            grid = ", ".join(dims) + ("," if len(dims) == 1 else "")
            out.append(Check("CHECK-NEXT" if after_branch else "CHECK", f"{m.group(1)}[({grid})]("))
            args = split_args(text[m.end() : _closing(text, m.end() - 1)])
            kwargs = [re.sub(r"=\d+$", "=" + NUMBER, a) for a in args if re.match(r"\w+=", a)]
            if len(group) <= 3:  # on the head's line or the next: which one, the tuning decides
                out.append(Check("CHECK", ", ".join(kwargs)))
            else:  # one argument a line
                out += [Check("CHECK", f"{k},") for k in kwargs]
        elif text in ("if _clusters(device):", "else:", "pdl = _pdl(device)"):
            out.append(Check("CHECK", text))
        after_branch = text in ("if _clusters(device):", "else:")
    return out


# -- the module ----------------------------------------------------------------------------------------
def module_checks(module: str) -> list[Check]:
    """Every check of a generated module, in order."""
    lines = module.splitlines()
    out: list[Check] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("# plan kernel "):
            out.append(Check("CHECK", header_pattern(line)))
        m = re.match(r"def (triton_\w+)\(", line)
        if m and i and lines[i - 1] == "@triton.jit":
            j = i
            while not lines[j].endswith("):"):
                j += 1
            body_end = j + 1
            while body_end < len(lines) and (lines[body_end].startswith(" ") or not lines[body_end]):
                body_end += 1
            out += kernel_checks(m.group(1), lines[i : j + 1], [ln for ln in lines[j + 1 : body_end] if ln])
            i = body_end
            continue
        if line.startswith("def call("):
            while not lines[i].endswith(":"):
                i += 1
            body = [ln for ln in lines[i + 1 :] if ln.strip() and not ln.strip().startswith(("#", '"""'))]
            out += wrapper_checks(body, module)
            break
        i += 1
    return _counted(out)


def _counted(checks: list[Check]) -> list[Check]:
    """Runs of one plain CHECK as CHECK-COUNT-n."""
    out: list[tuple[Check, int]] = []
    for c in checks:
        if out and c.kind == "CHECK" and out[-1][0] == c:
            out[-1] = (c, out[-1][1] + 1)
        else:
            out.append((c, 1))
    return [Check(f"CHECK-COUNT-{n}", c.pattern) if n > 1 else c for c, n in out]


def render(module: str, title: list[str]) -> str:
    """The check file: `title` as comment lines, then one directive a line."""
    checks = module_checks(module)
    width = max(len(c.kind) for c in checks)
    body = [f"# {c.kind + ':':<{width + 1}} {c.pattern}" for c in checks]
    return "\n".join([*(f"# {t}" if t else "#" for t in title), *body]) + "\n"
