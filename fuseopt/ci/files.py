"""Writing report files: each file appears whole or not at all (staged next to it, then renamed)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fuseopt.errors import Diagnostic, InputError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` to `path` (creating parent folders); an OSError becomes an InputError (exit 2)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fuseopt-", suffix=".tmp")
        try:
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600: give the file the usual mode
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise InputError(
            [Diagnostic(f"cannot write {target}: {exc.strerror or exc}", "", str(target), code="io")]
        ) from None
