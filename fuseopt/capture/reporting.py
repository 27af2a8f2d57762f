"""What a failed capture says: the innermost cause of torch's exception chain and the user's line
Dynamo names (`real_cause`), the chain for --verbose (`chain_text`), and torch's log kept quiet
while it compiles (`torch_log_quiet`)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def real_cause(exc: BaseException) -> str:
    """The first line of the innermost exception of the chain (torch wraps the real error, e.g. a
    shape mismatch, in several layers), and the user's line Dynamo names (`from user code:`)."""
    chain = _chain(exc)
    inner = next((e for e in reversed(chain) if str(e).strip()), exc)
    text = str(inner).strip() or type(inner).__name__
    first = text.splitlines()[0]
    if type(inner).__name__ not in ("RuntimeError", "Exception") and not first.startswith(
        type(inner).__name__
    ):
        first = f"{type(inner).__name__}: {first}"
    where = _user_line(chain)
    return f"{first} ({where})" if where else first


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in out and len(out) < 32:
        out.append(e)
        nxt = getattr(e, "inner_exception", None) or e.__cause__ or e.__context__
        e = nxt if isinstance(nxt, BaseException) else None
    return out


_USER_CODE = re.compile(r'File "([^"]+)", line (\d+), in ([A-Za-z_][A-Za-z0-9_<>]*)\n\s*(\S[^\n]*)')


def _user_line(chain: Sequence[BaseException]) -> str:
    for e in chain:
        text = str(e)
        if "from user code:" not in text:
            continue
        hits = _USER_CODE.findall(text.split("from user code:", 1)[1])
        if hits:
            path, line, func, code = hits[-1]
            return f"at {os.path.basename(path)}:{line} in {func}: {code.strip()}"
    return ""


def chain_text(exc: BaseException) -> list[str]:
    return [f"{type(e).__name__}: {e}" for e in _chain(exc)]


@contextmanager
def torch_log_quiet(quiet: bool) -> Iterator[None]:
    """No log records while torch compiles (its fake-tensor tracebacks and warnings would bury the
    cause): `logging.disable` for the duration, restored afterwards. `quiet=False` leaves torch's
    log as torch configures it (`fuseopt capture --verbose`)."""
    import logging

    if not quiet:
        yield
        return
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)
