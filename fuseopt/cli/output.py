"""Writing output files all-or-nothing: files are staged in a temporary folder, then moved in."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fuseopt.errors import Diagnostic, InputError


def write_outputs(out_dir: str | os.PathLike[str], files: dict[str, str]) -> list[Path]:
    """Write {name: text} into out_dir. Nothing is written unless every file could be staged."""
    target = Path(out_dir)
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target, prefix=".fuseopt-") as tmp:
            staged = []
            for name, text in files.items():
                p = Path(tmp) / name
                p.write_text(text, encoding="utf-8")
                staged.append((p, target / name))
            for src, dst in staged:
                os.replace(src, dst)
    except OSError as exc:
        raise InputError([Diagnostic(f"cannot write output: {exc}", "", str(out_dir), code="io")]) from None
    return [dst for _, dst in staged]
