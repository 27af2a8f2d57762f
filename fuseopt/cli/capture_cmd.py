"""`fuseopt capture FILE.py:FUNCTION --input SPEC ... -o GRAPH`: a PyTorch program as a fuseopt graph.

torch is imported only when the command runs; the graph file is written only after a successful
capture (staged next to the target, then renamed).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import click

from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.console import stdout
from fuseopt.cli.main import cli
from fuseopt.errors import Diagnostic, InputError
from fuseopt.report.escaping import shown
from fuseopt.report.words import plural

LAYOUT_CHOICES = ("contiguous", "transposed", "channels_last")


@cli.command("capture", short_help=SUMMARIES["capture"])
@click.argument("target", metavar="FILE.py:FUNCTION")
@click.option(
    "--module",
    "as_module",
    is_flag=True,
    help="FUNCTION is a factory: call it with no arguments (after seeding torch with --seed) to get "
    "the nn.Module to capture, in eval mode. An nn.Module instance as FUNCTION is captured as is.",
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="SPEC",
    help="One example input per argument of FUNCTION, in order: DTYPE[D0,D1,...], e.g. "
    "'float32[1024,2048]' ('int64[]' for a 0-d tensor). Values are random (see --seed).",
)
@click.option(
    "--layout",
    "layouts",
    multiple=True,
    type=click.Choice(LAYOUT_CHOICES),
    help="Storage layout of the --input at the same position (repeat per input; missing ones are "
    "contiguous): transposed stores the last two dims swapped, channels_last is NHWC (4-d/5-d).",
)
@click.option(
    "-o",
    "--out",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Graph file to write (.json: JSON, else YAML).",
)
@click.option("--name", default=None, help="Graph name (default: FUNCTION's name).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random example inputs.")
@click.option(
    "--gpu-emulation/--no-gpu-emulation",
    "emulate",
    default=True,
    show_default=True,
    help="Plan as Inductor does for a GPU (unmerged loops, loop reordering); off: as for the CPU.",
)
@click.option(
    "--verbose", is_flag=True, help="Keep torch's own log; on failure, also print the exception chain."
)
def capture_cmd(
    target: str,
    as_module: bool,
    verbose: bool,
    inputs: tuple[str, ...],
    layouts: tuple[str, ...],
    out_path: str,
    name: str | None,
    seed: int,
    emulate: bool,
) -> None:
    """Capture FUNCTION of FILE.py with torch.compile (Inductor) as a fuseopt graph, with Inductor's
    own fusion result in meta.inductor (kernels, kernel_count, num_bytes_accessed).

    This imports and runs FILE.py: it executes your program's code, so capture only programs you
    trust. The graph holds Inductor's scheduler nodes before fusion, planned as for a GPU although
    it runs on the CPU; see docs/capture.md.
    """
    from fuseopt.capture import capture_program
    from fuseopt.capture.program import load_function, load_module
    from fuseopt.capture.specs import make_inputs, parse_spec
    from fuseopt.ir.serialize import dump_json, dump_yaml

    if len(layouts) > len(inputs):
        raise InputError(
            [Diagnostic(f"{len(layouts)} --layout options for {len(inputs)} --input specs", code="usage")]
        )
    full_layouts = list(layouts) + ["contiguous"] * (len(inputs) - len(layouts))
    specs = [parse_spec(text, layout) for text, layout in zip(inputs, full_layouts, strict=True)]
    fn = load_module(target, seed) if as_module else load_function(target)
    file = target.rpartition(":")[0].replace(os.sep, "/")
    source = {
        "file": file,
        "function": target.rpartition(":")[2],
        "inputs": [s.text() for s in specs],
        "layouts": [s.layout for s in specs],
        "seed": seed,
    }
    if as_module:
        source["module_factory"] = True
    default_name = name or (type(fn).__name__ if as_module else None)
    try:
        result = capture_program(
            fn,
            *make_inputs(specs, seed),
            name=default_name,
            source=source,
            emulate_gpu=emulate,
            quiet=not verbose,
        )
    except InputError as err:
        if verbose:
            for line in getattr(err, "details", []):
                click.echo(line, err=True)
        raise err.with_location(file=file) from None
    graph = result.graph
    text = dump_json(graph) if out_path.endswith(".json") else dump_yaml(graph)
    _write_atomically(Path(out_path), text)
    ind = graph.meta["inductor"]
    stdout.print(
        f"captured [bold]{shown(graph.name)}[/]: {plural(len(graph.nodes), 'node')}, {plural(len(graph.buffers), 'buffer')}; "
        f"Inductor: {shown(ind['kernel_count'])} kernels, {shown(ind['num_bytes_accessed'])} bytes "
        f"-> {shown(out_path)}"
    )


def _write_atomically(path: Path, text: str) -> None:
    """Write next to the target, then rename: a reader sees the old file or the whole new one. The
    staging file is opened normally (not mkstemp's 0600), so the result gets the umask's mode."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(tmp, "x", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise InputError([Diagnostic(f"cannot write {path}: {exc}", file=str(path), code="io")]) from None
