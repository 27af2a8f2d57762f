"""Errors of a run located in the graph file: the file, and the line:col of the failing node."""

from __future__ import annotations

from fuseopt.errors import FuseoptError, InputError
from fuseopt.io.files import read_regular_file
from fuseopt.io.load import MAX_FILE_BYTES
from fuseopt.io.locate import Positions


def located(err: FuseoptError, graph_file: str) -> FuseoptError:
    """The run-time error with the graph file and the line:col of the failing node."""
    try:
        text: str | None = read_regular_file(graph_file, MAX_FILE_BYTES).decode("utf-8-sig")
    except (InputError, UnicodeDecodeError):
        text = None
    diags = []
    positions = Positions(text) if text is not None else None  # one parse for every diagnostic
    for d in err.diagnostics:
        d = d.with_location(file=graph_file)
        pos = positions.at(d.pointer) if positions is not None and d.pointer and d.line is None else None
        diags.append(d if pos is None else d.with_location(line=pos[0], column=pos[1]))
    out = type(err).__new__(type(err))
    out.__dict__.update(err.__dict__)
    FuseoptError.__init__(out, diags)
    return out
