"""Output helpers: rich for people (stderr for diagnostics), plain JSON for machines.

Input-derived text (names, meta values, file paths, messages quoting them) goes into a rich
string only through `shown`, so markup in it prints as text; emoji codes (`:warning:`) are off.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console

from fuseopt.errors import Diagnostic
from fuseopt.report.escaping import json_text, shown
from fuseopt.report.words import plural

__all__ = ["dump_json", "print_diagnostics", "shown", "stderr", "stdout"]

stdout = Console(highlight=False, soft_wrap=True, emoji=False)
stderr = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


# Diagnostics printed for people, per file: rendering 60,000 took minutes, and nobody reads them.
# `fuseopt validate --format json` lists every one.
MAX_SHOWN = 100


def print_diagnostics(diags: Iterable[Diagnostic]) -> None:
    items = list(diags)
    per_file: dict[str, int] = {}
    for d in items:
        n = per_file[d.file] = per_file.get(d.file, 0) + 1
        if n > MAX_SHOWN:
            continue
        head, _, excerpt = d.render().partition("\n")
        stderr.print(f"[bold red]error[/]: {shown(head)}")
        if excerpt:
            stderr.print(shown(excerpt))
    for file, n in per_file.items():
        if n > MAX_SHOWN:
            where = shown(file or "<input>")
            stderr.print(
                f"[red]... and {n - MAX_SHOWN} more in {where}[/] (`fuseopt validate --format json` lists all)"
            )
    if len(items) > 1:
        stderr.print(f"[red]{plural(len(items), 'error')}[/]")


def dump_json(obj: Any) -> str:
    """Stable JSON for machines: sorted keys only where the producer did not order them itself;
    lone surrogates of the input as `\\uXXXX` escapes (UTF-8 cannot hold them)."""
    return json_text(obj) + "\n"
