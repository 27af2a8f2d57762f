"""GPU time of one call, with the host's launch overhead kept out of it.

`triton.testing.do_bench` records an event, calls `fn`, records another. When one call's kernels
take less GPU time than the host takes to launch them (a wrapper's Python, a 2,000 x 768 layer
norm is 6 us on an H200 and 40-60 us to launch), the GPU waits for the host between the events and
the figure is the host's. `gpu_ms` holds the GPU first: before each timed call it queues a sleep
kernel (`torch.cuda._sleep`) longer than the call's host time, so the call's launches are queued
before the GPU reaches them and run back to back. The L2 cache is cleared before each call, as
do_bench does. What the host costs is reported apart (`host_ms`: wall time of one call's
launches, nothing waited for).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

# How much longer than a call's measured host time the GPU is held: the host's time varies from
# call to call (allocator, Python), and a hold that is too short lets a gap into the timed span.
HOLD_FACTOR = 2.0
L2_FLUSH_BYTES = 256 << 20  # as triton.testing.do_bench: several times any GPU's L2


@dataclass(frozen=True)
class Timing:
    ms: float  # median GPU time of one call
    host_ms: float  # median host time of one call's launches


def _cycles_per_ms(device: torch.device) -> float:
    """Clock cycles of `torch.cuda._sleep` per millisecond, measured on the device."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 2_000_000
    torch.cuda._sleep(cycles)  # the first call loads the kernel
    torch.cuda.synchronize(device)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize(device)
    return cycles / max(start.elapsed_time(end), 1e-3)


def host_ms(fn: Callable[[], object], device: torch.device, calls: int = 10) -> float:
    """Median host time of one call: launches queued, the GPU not waited for."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize(device)
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    torch.cuda.synchronize(device)
    return statistics.median(times)


def gpu_ms(fn: Callable[[], object], device: torch.device, warmup: float = 25, rep: float = 100) -> Timing:
    """Median GPU time of one call of `fn` over about `rep` ms of calls after `warmup` ms (as
    do_bench's arguments), each call after an L2 clear and a sleep kernel that outlasts its launch."""
    fn()
    torch.cuda.synchronize(device)
    cache = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device)
    launch = host_ms(fn, device)
    hold = int(_cycles_per_ms(device) * launch * HOLD_FACTOR)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def one(s: torch.cuda.Event, e: torch.cuda.Event) -> None:
        cache.zero_()
        torch.cuda._sleep(hold)
        s.record()
        fn()
        e.record()

    outer = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    outer[0].record()
    for _ in range(3):
        one(start, end)
    outer[1].record()
    torch.cuda.synchronize(device)
    per_call = max(start.elapsed_time(end), launch, 1e-3)  # warm-up calls are not held
    for _ in range(max(1, int(warmup / per_call))):
        fn()
    n = max(1, int(rep / max(outer[0].elapsed_time(outer[1]) / 3, 1e-3)))  # held calls
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in events:
        one(s, e)
    torch.cuda.synchronize(device)
    return Timing(statistics.median(s.elapsed_time(e) for s, e in events), launch)
