"""Golden plans: the plan of every sample in every mode, byte for byte.

After a deliberate change to the planner, regenerate with `python -m tests.update_golden` and
review the diff.
"""

from __future__ import annotations

import pytest

from tests.planning import sample_name, sample_paths
from tests.update_golden import MODES, golden_path, render


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("path", sample_paths(), ids=sample_name)
def test_plan_matches_golden(path: str, mode: str) -> None:
    with open(golden_path(sample_name(path), mode), encoding="utf-8") as f:
        want = f.read()
    got = render(path, mode)
    assert got == want, (
        f"plan changed; if intended, run: python -m tests.update_golden ({sample_name(path)}, {mode})"
    )
