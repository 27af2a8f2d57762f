"""`fuseopt.bench.timing`: GPU time of a call, the host's launch overhead kept out. On the CPU,
against a simulated stream: the host queues work, the GPU runs it in order, no earlier than
it was queued, and an event reads the GPU's clock when the GPU reaches it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from fuseopt.bench import timing

CYCLES_PER_MS = 1.98e6


class _Stream:
    def __init__(self) -> None:
        self.host = 0.0  # ms
        self.gpu = 0.0  # ms: when the GPU is done with what was queued

    def queue(self, ms: float) -> float:
        self.gpu = max(self.gpu, self.host) + ms
        return self.gpu


@pytest.fixture
def stream(monkeypatch: pytest.MonkeyPatch) -> _Stream:
    s = _Stream()

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            self.at: float | None = None

        def record(self) -> None:
            self.at = s.queue(0.0)

        def elapsed_time(self, end: Event) -> float:
            assert self.at is not None and end.at is not None
            return end.at - self.at

    def synchronize(device: object = None) -> None:
        s.host = max(s.host, s.gpu)

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: s.queue(cycles / CYCLES_PER_MS))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: s.host / 1e3)
    monkeypatch.setattr(timing, "L2_FLUSH_BYTES", 1 << 10)  # the clear is not timed here
    return s


def _call(s: _Stream, host_ms: float, gpu_ms: float) -> Callable[[], None]:
    """A call whose launches take `host_ms` on the host and whose kernels take `gpu_ms`."""

    def fn() -> None:
        s.host += host_ms
        s.queue(gpu_ms)

    return fn


def _events_around(s: _Stream, fn: Callable[[], None]) -> float:
    """What an event pair around the call reads without the hold (do_bench's way)."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    a.record()
    fn()
    b.record()
    torch.cuda.synchronize()
    return float(a.elapsed_time(b))


@pytest.mark.parametrize("host, gpu", [(0.05, 0.006), (0.05, 0.2), (0.001, 0.03)])
def test_gpu_time_is_the_kernels_time_whatever_the_host_costs(
    stream: _Stream, host: float, gpu: float
) -> None:
    fn = _call(stream, host, gpu)
    got = timing.gpu_ms(fn, torch.device("cpu"), warmup=1, rep=5)
    assert got.ms == pytest.approx(gpu)
    assert got.host_ms == pytest.approx(host)
    # without the hold, a call faster on the GPU than on the host is timed by the host
    assert _events_around(stream, fn) == pytest.approx(host + gpu)


def test_a_call_of_several_launches_is_timed_back_to_back(stream: _Stream) -> None:
    """Three kernels of 4 us, each launched after 30 us of host work: 12 us of GPU time."""

    def fn() -> None:
        for _ in range(3):
            stream.host += 0.03
            stream.queue(0.004)

    got = timing.gpu_ms(fn, torch.device("cpu"), warmup=1, rep=5)
    assert got.ms == pytest.approx(0.012)
    assert got.host_ms == pytest.approx(0.09)
    assert _events_around(stream, fn) == pytest.approx(0.094)  # the last launch, then its kernel
