"""Import a generated module (from its file, or from source written to a temporary file) and run it.

Triton's `@jit` reads each kernel's source from its file, so source text is always written to a
file first. Files of modules built from source live in one temporary directory, removed at exit.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from fuseopt.interp.limits import DEFAULT_LIMITS, Limits, check_limits
from fuseopt.ir.graph import Graph

_TMP: Path | None = None


def _tmp_dir() -> Path:
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="fuseopt-kernels-"))
        atexit.register(shutil.rmtree, _TMP, True)
    return _TMP


def load_module(path_or_source: str | Path) -> ModuleType:
    """Import a generated module: a `Path`, an existing file name, or module source text.

    Every call imports afresh (a new module object), so module state such as POISON is per call.
    """
    if isinstance(path_or_source, Path) or ("\n" not in path_or_source and Path(path_or_source).is_file()):
        path = Path(path_or_source)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    else:
        digest = hashlib.sha256(path_or_source.encode()).hexdigest()[:16]
        path = _tmp_dir() / f"fuseopt_kernels_{digest}.py"
        if not path.exists():
            path.write_text(path_or_source, encoding="utf-8")
    name = f"fuseopt_kernels_{digest}_{len(sys.modules)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def run_module(
    path_or_source: str | Path | ModuleType,
    inputs: dict[str, torch.Tensor],
    *,
    poison: bool = False,
    intermediates: bool = False,
    graph: Graph | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, torch.Tensor]:
    """Run a generated module's `call` on flat input storages; returns flat output storages.

    `poison=True` makes fresh buffers start as NaN (ints: their largest value) so that an element
    no kernel writes shows up in a comparison. Given the `graph` the module was generated from,
    a run over `limits` is refused before the module is imported (`call` allocates the buffers
    the plan materialises, sized by the graph; `fuseopt.interp.limits`).
    """
    if graph is not None:
        check_limits(graph, limits)
    module = path_or_source if isinstance(path_or_source, ModuleType) else load_module(path_or_source)
    module_any: Any = module
    before = module_any.POISON
    module_any.POISON = poison
    try:
        out: dict[str, torch.Tensor] = module_any.call(inputs, intermediates=intermediates)
    finally:
        # A checked (poisoned) run must not leave the module poisoning later runs: a timed
        # call would then also time filling every output with NaN.
        module_any.POISON = before
    return out
