"""One error hierarchy for fuseopt: every user-facing failure is a Diagnostic with a location.

The CLI turns `FuseoptError` into located messages and an exit code (see README "Exit codes");
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# Documented exit codes (README "Exit codes").
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NO_GPU = 3


@dataclass(frozen=True, slots=True)
class Span:
    """Half-open character range [start, end) inside one expression string."""

    start: int
    end: int


@dataclass(frozen=True)
class Diagnostic:
    """A located problem in an input file.

    `pointer` is an RFC 6901 JSON pointer into the document (``/nodes/3/value``); `source` and
    `span` (when present) are the expression text and the offending characters inside it.
    `line`/`column` (1-based) locate the pointer's value in the file when the loader knows them.
    """

    message: str
    pointer: str = ""
    file: str = ""
    source: str | None = None
    span: Span | None = None
    code: str = "invalid"
    line: int | None = None
    column: int | None = None

    def with_location(
        self,
        *,
        file: str | None = None,
        pointer_prefix: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> Diagnostic:
        return Diagnostic(
            message=self.message,
            pointer=self.pointer if pointer_prefix is None else pointer_prefix + self.pointer,
            file=self.file if file is None else file,
            source=self.source,
            span=self.span,
            code=self.code,
            line=self.line if line is None else line,
            column=self.column if column is None else column,
        )

    def render(self) -> str:
        """Human-readable text: `file:line:col: pointer: message` plus a caret excerpt."""
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        # one line whatever the input holds: a newline in a key of the pointer (or in a file name)
        # would otherwise start a line of its own, which could read as another diagnostic
        head = f"{where}: {self.pointer or '/'}: {self.message}".replace("\n", "\\n")
        if self.source is None or self.span is None:
            return head
        return head + "\n" + caret_excerpt(self.source, self.span)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file,
            "pointer": self.pointer,
            "code": self.code,
            "message": self.message,
        }
        if self.line is not None:
            out["line"] = self.line
            out["column"] = self.column
        if self.source is not None and self.span is not None:
            out["source"] = self.source
            out["span"] = [self.span.start, self.span.end]
        return out


def caret_excerpt(source: str, span: Span, width: int = 100) -> str:
    """Two lines: the (windowed) expression and carets under the span."""
    start = max(0, min(span.start, len(source)))
    end = max(start + 1, min(span.end, len(source) + 1))
    lo = max(0, start - width // 2) if len(source) > width else 0
    hi = min(len(source), lo + width)
    text = source[lo:hi].replace("\n", " ").replace("\t", " ")
    prefix = "..." if lo > 0 else ""
    suffix = "..." if hi < len(source) else ""
    pad = " " * (4 + len(prefix) + start - lo)
    carets = "^" * max(1, min(end, hi + 1) - start)
    return f"    {prefix}{text}{suffix}\n{pad}{carets}"


class FuseoptError(Exception):
    """Base of every error fuseopt reports to a user (exit code `exit_code`)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, diagnostics: Iterable[Diagnostic] | str):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(diagnostics)]
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        super().__init__(self.diagnostics)

    def __str__(self) -> str:
        # Rendered when shown, not when raised: a graph with 60,000 errors is re-raised a few times
        # on its way out, and each rendering of all of them took seconds.
        return "\n".join(d.render() for d in self.diagnostics)

    def __reduce__(self) -> tuple[object, ...]:
        # Across processes (fuseopt ci's workers) with every field, whatever the subclass's __init__.
        return (_restore, (type(self), dict(self.__dict__)))

    def with_location(self, *, file: str | None = None, pointer_prefix: str | None = None) -> FuseoptError:
        new = type(self).__new__(type(self))
        FuseoptError.__init__(
            new, [d.with_location(file=file, pointer_prefix=pointer_prefix) for d in self.diagnostics]
        )
        return new


def _restore(cls: type[FuseoptError], state: dict[str, object]) -> FuseoptError:
    err = cls.__new__(cls)
    FuseoptError.__init__(err, state["diagnostics"])  # type: ignore[arg-type]
    err.__dict__.update(state)
    return err


class InputError(FuseoptError):
    """The input graph (or a command-line value) is malformed: exit 2."""


class ExprError(InputError):
    """An expression failed to parse or type-check; carries the span of the offending characters."""

    def __init__(self, message: str, source: str, span: Span, code: str = "expr"):
        super().__init__([Diagnostic(message, source=source, span=span, code=code)])
        self.message = message
        self.source = source
        self.span = span


class CheckFailed(FuseoptError):
    """A check ran and found a problem (divergence, mismatch, regression): exit 1."""

    exit_code = EXIT_CHECK_FAILED


class NoGPUError(FuseoptError):
    """A GPU was required and none is available: exit 3."""

    exit_code = EXIT_NO_GPU


@dataclass
class DiagnosticSink:
    """Collects diagnostics so one run reports every error it can find."""

    file: str = ""
    items: list[Diagnostic] = field(default_factory=list)

    def add(self, message: str, pointer: str, *, code: str = "invalid") -> None:
        self.items.append(Diagnostic(message, pointer=pointer, file=self.file, code=code))

    def add_error(self, err: FuseoptError, pointer: str) -> None:
        for d in err.diagnostics:
            self.items.append(d.with_location(file=self.file, pointer_prefix=pointer))

    def raise_if_any(self) -> None:
        if self.items:
            raise InputError(self.items)
