"""`fuseopt run GRAPH`: run a graph on a backend, summarise each output buffer, and give a verdict.

`--backend reference` runs fuseopt's reference interpreter (the oracle) and says so: there is
nothing to check it against. `--backend triton` plans the graph (the planning options: the
command line, else the graph's meta), emits Triton, runs it (GPU, or the CPU under
TRITON_INTERPRET=1) from poisoned buffers, runs the reference on the same inputs, and compares
every output (`fuseopt.runtime.compare.check_outputs`): `match`, or `MISMATCH` with the first
differing element (buffer, index, both values, the tolerance), exit 1. Every backend gets the
same input storages (`make_inputs(graph, seed)`). `--save DIR` writes the outputs as .npy files
once the run finished. A graph whose storage or loop boxes are over `--max-memory` /
`--max-points` is refused before anything is allocated (`fuseopt.interp.limits`).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch
from rich.table import Table

from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import dump_json, stdout
from fuseopt.cli.located import located
from fuseopt.cli.main import cli
from fuseopt.cli.options import graph_options, limit_options, planning_options
from fuseopt.errors import EXIT_CHECK_FAILED, FuseoptError
from fuseopt.interp import Limits, check_limits, make_inputs, run_graph
from fuseopt.interp.ops import TORCH_DTYPE
from fuseopt.interp.run import logical_view
from fuseopt.io.load import load_graph
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.report.escaping import shown
from fuseopt.report.plan_text import options_text
from fuseopt.report.words import plural
from fuseopt.runtime.backend import triton_backend
from fuseopt.runtime.compare import OutputCheck, check_outputs
from fuseopt.runtime.float64 import multiplier

RUN_FORMAT = "fuseopt-run/2"

# graph, input storages, planning options -> the flat storage of (at least) every output buffer
Backend = Callable[[Graph, Mapping[str, torch.Tensor], Options], Mapping[str, torch.Tensor]]


def _reference(
    graph: Graph, inputs: Mapping[str, torch.Tensor], _opts: Options
) -> Mapping[str, torch.Tensor]:
    return run_graph(graph, inputs, limits=None)  # `run` checked the limits it was given


def _triton(graph: Graph, inputs: Mapping[str, torch.Tensor], opts: Options) -> Mapping[str, torch.Tensor]:
    return triton_backend(graph, inputs, opts, poison=True)  # an unwritten element shows as NaN


BACKENDS: dict[str, Backend] = {
    "reference": _reference,
    "triton": _triton,  # plan, emit Triton, run (GPU, or CPU with TRITON_INTERPRET=1)
}
# Backends whose outputs are checked against the reference interpreter.
CHECKED = ("triton",)
WHAT_RAN = {
    "reference": "fuseopt's reference interpreter (the oracle: nothing to check it against; "
    "--backend triton checks the generated kernels against it)",
    "triton": "the generated Triton kernels and call() wrapper, checked against the reference interpreter",
}


@cli.command("run", short_help=SUMMARIES["run"])
@click.argument("graph_file", metavar="GRAPH", type=click.Path(dir_okay=False))
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option(
    "--save",
    "save_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write each output buffer to DIR/<name>.npy (bfloat16 as float32) after a successful run.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default="reference",
    show_default=True,
    help="Who runs it.",
)
@limit_options
@planning_options
def run(
    graph_file: str,
    seed: int,
    save_dir: str | None,
    fmt: str,
    backend: str,
    max_memory: int,
    max_points: int,
    scoring: str | None,
    max_fusion_size: int | None,
    no_loop_order: bool | None,
) -> None:
    """Run GRAPH on random inputs and print shape, dtype, min/max/mean and a checksum of each output.

    With --backend triton, also run the reference interpreter on the same inputs and say `match`
    or `MISMATCH` for each output (the first differing element, both values, the tolerance).
    Exit 0 ran (and matched), 1 a mismatch, 2 bad input, 3 no GPU (and no TRITON_INTERPRET=1).
    """
    graph = load_graph(graph_file)
    resolved = graph_options(graph, scoring, max_fusion_size, no_loop_order)
    checks: list[OutputCheck] | None = None
    try:
        check_limits(graph, Limits(max_memory, max_points))  # before allocating
        inputs = make_inputs(graph, seed, limits=None)
        # The reference first: what it refuses at run time (a masked load outside its buffer
        # where its mask holds, an integer division by zero) is an input error, located, before
        # generated code runs into it (out of bounds on a device, or in the interpreter's memory).
        expected = (
            run_graph(graph, {k: v.clone() for k, v in inputs.items()}, limits=None)
            if backend in CHECKED
            else None
        )
        storages = BACKENDS[backend](graph, {k: v.clone() for k, v in inputs.items()}, resolved.options)
        if expected is not None:
            checks = check_outputs(graph, storages, expected, inputs=inputs)
    except FuseoptError as err:
        raise located(err, graph_file) from None
    # every output the backend returned (a generated module missing one is a check failure)
    outputs = {
        b.name: logical_view(graph, b.name, storages[b.name]) for b in graph.outputs if b.name in storages
    }
    summaries = [summarize(name, t) for name, t in outputs.items()]
    saved: list[str] = []
    if save_dir is not None:
        saved = save_outputs(Path(save_dir), outputs)
    ok = checks is None or all(c.ok for c in checks)
    if fmt == "json":
        doc: dict[str, Any] = {
            "format": RUN_FORMAT,
            "graph": graph.name,
            "backend": backend,
            "ran": WHAT_RAN[backend],
            "seed": seed,
            "options": resolved.options.to_json() if backend in CHECKED else None,
            "verdict": None if checks is None else ("match" if ok else "mismatch"),
            "checks": None if checks is None else [c.to_json() for c in checks],
            "outputs": summaries,
            "saved": saved,
        }
        click.echo(dump_json(doc), nl=False)
    else:
        _print_text(
            graph,
            backend,
            seed,
            summaries,
            saved,
            checks,
            options_text(resolved.options.to_json(), resolved.sources),
        )
    if not ok:
        raise SystemExit(EXIT_CHECK_FAILED)


def summarize(name: str, t: torch.Tensor) -> dict[str, Any]:
    """Statistics of one logical output tensor (ints stay ints; non-finite floats as strings)."""
    exact = not t.dtype.is_floating_point
    wide = t.to(torch.int64) if exact else t.to(torch.float64)
    empty = wide.numel() == 0
    raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return {
        "name": name,
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "dtype": str(t.dtype).removeprefix("torch."),
        "min": None if empty else _number(wide.min().item()),
        "max": None if empty else _number(wide.max().item()),
        "mean": None if empty else _number(wide.to(torch.float64).mean().item()),
        "sum": _number(wide.sum().item()),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }


def _number(v: float | int) -> float | int | str:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # nan, inf, -inf: keep the JSON valid
    return v


def save_outputs(directory: Path, outputs: Mapping[str, torch.Tensor]) -> list[str]:
    """Write DIR/<name>.npy per output; each file appears whole (written aside, then renamed)."""
    arrays = {name: _to_numpy(t) for name, t in outputs.items()}
    directory.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for name, arr in arrays.items():
        path = directory / f"{name}.npy"
        tmp = directory / f".{name}.npy.tmp"
        with open(tmp, "wb") as f:
            np.save(f, arr)
        os.replace(tmp, path)
        written.append(str(path))
    return written


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    # numpy has no bfloat16; float32 holds every bfloat16 value exactly.
    t = t.contiguous()
    return (t.to(torch.float32) if t.dtype == torch.bfloat16 else t).numpy()


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "-" if v is None else str(v)


def _print_text(
    graph: Graph,
    backend: str,
    seed: int,
    summaries: list[dict[str, Any]],
    saved: list[str],
    checks: list[OutputCheck] | None,
    options: str,
) -> None:
    stdout.print(
        f"graph [bold]{shown(graph.name)}[/]: {plural(len(graph.nodes), 'node')}, "
        f"{plural(len(summaries), 'output')} (backend {backend}, seed {seed})"
    )
    stdout.print(f"ran {WHAT_RAN[backend]}")
    if checks is not None:
        stdout.print(f"options: {shown(options)}")
    verdicts = {c.buffer: c for c in checks or []}
    table = Table(show_edge=False, pad_edge=False)
    columns = [("buffer", "left"), ("shape", "left"), ("dtype", "left"), ("min", "right"),
               ("max", "right"), ("mean", "right"), ("sha256", "left")]  # fmt: skip
    if checks is not None:
        columns.append(("check", "left"))
    for col, justify in columns:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for s in summaries:
        row = [
            shown(s["name"]),
            "x".join(str(d) for d in s["shape"]) or "scalar",
            s["dtype"],
            _fmt(s["min"]),
            _fmt(s["max"]),
            _fmt(s["mean"]),
            s["sha256"][:16],
        ]
        if checks is not None:
            c = verdicts.get(s["name"])
            row.append(
                "[bold red]MISMATCH[/]"
                if c is not None and not c.ok
                else "[green]match[/]" + ("*" if c is not None and c.float64 else "")
            )
        table.add_row(*row)
    stdout.print(table)
    for path in saved:
        stdout.print(f"saved {shown(path)}")
    if checks is None:
        return
    bad = [c for c in checks if not c.ok]
    for c in checks:
        if c.float64:
            m = multiplier(TORCH_DTYPE[graph.buffer(c.buffer).dtype])
            stdout.print(
                f"* {shown(c.buffer)}: {plural(c.float64, 'element')} outside the tolerance, each as close to "
                f"the graph run in float64 as the reference is (within {m:g}x its distance, plus the tolerance)"
            )
    if not bad:
        stdout.print(
            f"[bold green]match[/]: {plural(len(checks), 'output')} checked, each equal to the reference "
            "interpreter's within its tolerance"
            + (", or decided by a float64 run (*)" if any(c.float64 for c in checks) else "")
        )
        return
    stdout.print(
        f"[bold red]MISMATCH[/]: {len(bad)} of {plural(len(checks), 'output')} differ from the reference"
    )
    for c in bad:
        stdout.print(f"  {shown(_mismatch_text(c))}")


def _mismatch_text(c: OutputCheck) -> str:
    m = c.mismatch
    if m is None:
        return c.message()
    return (
        f"{c.buffer}: {m.count} of {plural(m.total, 'element')} differ ({m.tolerance()}); first at "
        f"index {list(m.first)}: got {_fmt(m.first_got)}, expected {_fmt(m.first_expected)}; "
        f"worst at index {list(m.index)}: got {_fmt(m.got)}, expected {_fmt(m.expected)}"
    )
