"""Running CI jobs: inline, on a local process pool, or on a Ray cluster -- one `run_job`, one loop.

Every executor submits all jobs, then reports each result as it completes (`on_done`, for the
progress bar); results are returned in job order, so reports do not depend on completion order.
The process pool starts its workers from a fork server that has imported fuseopt once (fast, and
safe with the progress bar's thread). Ray is imported only when asked for (`pip install
'fuseopt[ray]'`); without an address it starts a local instance with `workers` CPUs.
A worker that dies (killed, out of memory) turns its jobs into `error` results.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any

from fuseopt.ci.checks import Job, run_job
from fuseopt.ci.model import ERROR, CheckResult, Finding, GraphResult
from fuseopt.errors import Diagnostic, InputError

EXECUTORS = ("process", "ray")
OnDone = Callable[[GraphResult], None]


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _lost(job: Job, exc: BaseException) -> GraphResult:
    """The result of a job whose worker failed outside `run_job` (it never raises by itself)."""
    message = f"the worker running this graph failed: {type(exc).__name__}: {exc}".rstrip(": ")
    f = Finding("crash", "error", message, job.file)
    return GraphResult(job.index, job.file, job.key, None, (CheckResult("validate", ERROR, message, (f,)),))


def _inline(jobs: Sequence[Job], on_done: OnDone) -> list[GraphResult]:
    out = []
    for job in jobs:
        res = run_job(job)
        on_done(res)
        out.append(res)
    return out


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        # aten_ops: torch, which validating a library call needs (the emitter no longer imports it)
        ctx.set_forkserver_preload(["fuseopt.ci.checks", "fuseopt.codegen.triton", "fuseopt.ir.aten_ops"])
        return ctx
    return multiprocessing.get_context("spawn")


def _pool(jobs: Sequence[Job], workers: int, on_done: OnDone) -> list[GraphResult]:
    results: dict[int, GraphResult] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        futures: dict[Future[GraphResult], Job] = {pool.submit(run_job, job): job for job in jobs}
        for fut in as_completed(futures):
            job = futures[fut]
            try:
                res = fut.result()
            except Exception as exc:  # BrokenProcessPool and the like: the worker died
                res = _lost(job, exc)
            results[job.index] = res
            on_done(res)
    return [results[j.index] for j in jobs]


def _ray(jobs: Sequence[Job], workers: int, on_done: OnDone, address: str | None) -> list[GraphResult]:
    try:
        import ray
    except ImportError:
        raise InputError(
            [
                Diagnostic(
                    "--executor ray needs the ray package: pip install 'fuseopt[ray]' (or pip install 'ray>=2.9')",
                    "/executor",
                    "<command line>",
                    code="usage",
                )
            ]
        ) from None
    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is None:
            kwargs["num_cpus"] = workers
        ray.init(address=address, **kwargs)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_job)
        pending = {remote.remote(job): job for job in jobs}
        results: dict[int, GraphResult] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                job = pending.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as exc:  # the task's worker died
                    res = _lost(job, exc)
                results[job.index] = res
                on_done(res)
        return [results[j.index] for j in jobs]
    finally:
        if started:
            ray.shutdown()


def run_jobs(
    jobs: Sequence[Job],
    *,
    executor: str = "process",
    workers: int = 1,
    on_done: OnDone | None = None,
    ray_address: str | None = None,
) -> list[GraphResult]:
    """Run every job; results in job order. `workers` 1 (or a single job) runs inline."""
    tick: OnDone = on_done or (lambda _res: None)
    if executor == "ray":
        return _ray(jobs, workers, tick, ray_address)
    if executor != "process":
        raise ValueError(f"executor must be one of {EXECUTORS}")
    if workers <= 1 or len(jobs) <= 1:
        return _inline(jobs, tick)
    return _pool(jobs, min(workers, len(jobs)), tick)
