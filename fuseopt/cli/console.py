"""Output helpers: rich for people (stderr for diagnostics), plain JSON for machines."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape

from fuseopt.errors import Diagnostic

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def print_diagnostics(diags: Iterable[Diagnostic]) -> None:
    items = list(diags)
    for d in items:
        head, _, excerpt = d.render().partition("\n")
        stderr.print(f"[bold red]error[/]: {escape(head)}")
        if excerpt:
            stderr.print(escape(excerpt))
    if len(items) > 1:
        stderr.print(f"[red]{len(items)} errors[/]")


def dump_json(obj: Any) -> str:
    """Stable JSON for machines: sorted keys only where the producer did not order them itself."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
