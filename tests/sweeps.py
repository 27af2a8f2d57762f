"""How many examples the expensive property tests draw.

The README's quick command (`python3 -m pytest`) runs every hypothesis test, the expensive ones with a
fifth of their examples. `.ci/run` then runs the long sweeps and every hypothesis test again at full
strength: `FUSEOPT_SWEEP=1 python3 -m pytest -m "slow or hypothesis"`.
"""

from __future__ import annotations

import os

FULL = os.environ.get("FUSEOPT_SWEEP", "") == "1"


def examples(full: int, quick: int | None = None) -> int:
    """`full` examples in a sweep run; `quick` (default a fifth of them, at least 4) in the quick run."""
    if FULL:
        return full
    return quick if quick is not None else max(4, full // 5)
