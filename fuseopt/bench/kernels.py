"""Per-kernel device time of one variant: which kernels a whole model's time goes to.

`slowest_kernels` runs the variant under `torch.profiler` (device activity only) a few times and
reports each kernel's device time per run, slowest first (ties by name, so the order is stable).
Library calls appear under their own kernels' names (cuBLAS, cuDNN), generated ones under theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def slowest_kernels(
    fn: Callable[[], object], device: torch.device, top: int = 10, runs: int = 10
) -> list[dict[str, Any]]:
    """The `top` kernels by device time per run of `fn` (already checked and warmed up)."""
    from torch.profiler import ProfilerActivity, profile

    if device.type != "cuda" or top <= 0:
        return []
    fn()
    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize(device)
    rows = []
    total = 0.0
    for e in prof.key_averages():
        us = float(getattr(e, "self_device_time_total", 0.0) or getattr(e, "self_cuda_time_total", 0.0))
        if us <= 0:
            continue
        total += us
        rows.append({"kernel": e.key[:200], "calls_per_run": e.count / runs, "us_per_run": us / runs})
    rows.sort(key=lambda r: (-r["us_per_run"], r["kernel"]))
    for r in rows:
        r["share"] = r["us_per_run"] * runs / total if total else None
    return rows[:top]
