"""Writing output files all-or-nothing: every file is staged next to its target, then all are
moved in; a failure before that removes what was staged (and folders made for it)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from fuseopt.errors import Diagnostic, InputError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _make_dirs(folder: Path, made: list[Path]) -> None:
    """mkdir -p, remembering the folders it created (innermost last)."""
    missing = []
    for p in (folder, *folder.parents):
        if p.exists():
            break
        missing.append(p)
    for p in reversed(missing):
        p.mkdir(exist_ok=True)
        made.append(p)


def write_files(files: Mapping[str, str]) -> list[Path]:
    """Write {path: text} (UTF-8, `\\n` line ends). Nothing is written unless every file could be
    staged; an OSError is an InputError (exit 2) naming the path."""
    made: list[Path] = []
    staged: list[tuple[Path, Path]] = []
    current: Path | None = None
    try:
        for name, text in files.items():
            current = target = Path(name)
            _make_dirs(target.parent, made)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fuseopt-", suffix=".tmp")
            staged.append((Path(tmp), target))
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600: give the file the usual mode
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        for tmp_path, target in staged:
            current = target
            os.replace(tmp_path, target)
    except OSError as exc:
        for tmp_path, _ in staged:
            tmp_path.unlink(missing_ok=True)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                break
        where = str(current) if current is not None else ""
        raise InputError(
            [Diagnostic(f"cannot write {where}: {exc.strerror or exc}", "", where, code="io")]
        ) from None
    return [target for _, target in staged]


def write_outputs(out_dir: str | os.PathLike[str], files: Mapping[str, str]) -> list[Path]:
    """Write {name: text} into out_dir, all-or-nothing (`write_files`)."""
    return write_files({os.path.join(out_dir, name): text for name, text in files.items()})
