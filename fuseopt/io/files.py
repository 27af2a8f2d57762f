"""Reading an input file: regular files only, with a bounded read.

A FIFO blocks a reader until some writer opens it (forever, in a CI job), and a device such as
/dev/zero never ends, so anything but a regular file is refused before it is opened (os.stat does
not block), and again on the opened descriptor, opened non-blocking, in case the path was swapped
in between. The read itself stops one byte past the limit, so even a file that grows while it is
read costs at most the limit.
"""

from __future__ import annotations

import os
import stat

from fuseopt.errors import Diagnostic, InputError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"{kind}, not a regular file: fuseopt reads regular files only"


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most `limit + 1` bytes of the regular file at `path` (more than `limit` tells the caller
    that the file is too large). Raises InputError (code "io") naming the file otherwise."""
    file = os.fspath(path)

    def refuse(message: str) -> InputError:
        return InputError([Diagnostic(message, "", str(file), code="io")])

    try:
        why = _not_regular(os.stat(file).st_mode)
        if why is not None:
            raise refuse(why)
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise refuse(f"cannot read file: {exc.strerror or exc}") from None
    try:
        why = _not_regular(os.fstat(fd).st_mode)
        if why is not None:
            raise refuse(why)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise refuse(f"cannot read file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
