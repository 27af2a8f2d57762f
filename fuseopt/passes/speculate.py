"""One piece of planning run in a forked child process while this process does another.

The planner at the size cap makes two plans that do not depend on each other (`packing`): the
natural plan and the packed one. `Forked.start(work)` forks; the child runs `work()`, which returns
a small summary and a function that makes the full result; the child sends the summary at once
and the full result only if the parent asks for it (`result()`), so a plan that loses costs no
transfer. Both sides compute exactly what a single process would: the parent decides from the
same numbers, so the plan never depends on whether a child was used.

The child writes only to its own pipe and leaves with `os._exit` (no atexit handlers, no flush
of buffers it inherited); on Linux it is killed when the parent ends, however the parent ends. A
child that fails, or dies, answers None: the caller then does the work itself. Where `os.fork`
does not exist, `start` returns None. The pipe carries pickles that this process's own child made
of its own objects (`pickle.dumps`); nothing read from input is ever unpickled.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
from collections.abc import Callable
from typing import Any, Generic, TypeVar

S = TypeVar("S")
R = TypeVar("R")

_LENGTH = struct.Struct("<Q")


def cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _die_with(parent: int) -> None:
    """In the child: end when the parent ends, however it ends (Linux; elsewhere the child ends
    at its next write to the closed pipe)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


_PR_SET_PDEATHSIG = 1


def _send(fd: int, payload: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def _recv(fd: int) -> bytes | None:
    """One message, or None at end of file (the child died)."""
    head = _read_exactly(fd, _LENGTH.size)
    if head is None:
        return None
    return _read_exactly(fd, _LENGTH.unpack(head)[0])


def _unpickle(raw: bytes) -> Any:
    """A message of this process's own forked child, which pickled its own objects."""
    return pickle.loads(raw)  # safe: bytes our forked child pickled from its own objects, never input


def _read_exactly(fd: int, n: int) -> bytes | None:
    parts: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


class Forked(Generic[S, R]):
    """A child process running `work`; see the module docstring."""

    def __init__(self, pid: int, from_child: int, to_child: int) -> None:
        self.pid, self._from, self._to = pid, from_child, to_child
        self._summary: Any = None
        self._asked = False

    @staticmethod
    def start(work: Callable[[], tuple[S, Callable[[], R]]]) -> Forked[S, R] | None:
        if not hasattr(os, "fork"):
            return None
        from_child, child_out = os.pipe()
        child_in, to_child = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(from_child)
            os.close(to_child)
            code = 1
            try:
                _die_with(parent)
                summary, full = work()
                _send(child_out, pickle.dumps(("ok", summary), protocol=pickle.HIGHEST_PROTOCOL))
                if os.read(child_in, 1) == b"1":
                    _send(child_out, pickle.dumps(full(), protocol=pickle.HIGHEST_PROTOCOL))
                code = 0
            except BaseException:  # noqa: BLE001 - the parent redoes the work; nothing to report here
                pass
            finally:
                os._exit(code)
        os.close(child_out)
        os.close(child_in)
        return Forked(pid, from_child, to_child)

    def ready(self) -> bool:
        """Whether the child's summary is here (or the child ended), without waiting."""
        if self._summary is not None:
            return True
        readable, _, _ = select.select([self._from], [], [], 0)
        return bool(readable)

    def summary(self) -> S | None:
        """The child's summary (waits for it); None if the child failed."""
        if self._summary is None:
            raw = _recv(self._from)
            message = _unpickle(raw) if raw is not None else ("failed", None)
            self._summary = message
        status, value = self._summary
        return value if status == "ok" else None

    def result(self) -> R | None:
        """The child's full result (asks for it; waits); None if the child failed."""
        if self.summary() is None or self._asked:
            return None
        self._asked = True
        try:
            os.write(self._to, b"1")
        except BrokenPipeError:
            return None
        raw = _recv(self._from)
        out: R | None = _unpickle(raw) if raw is not None else None
        self.close()
        return out

    def close(self) -> None:
        """End the child (it is not needed, or has sent all) and reap it."""
        if self.pid < 0:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self._from)
        os.close(self._to)
        self.pid = -1
