"""Loading `FILE.py:FUNCTION` for `fuseopt capture`: this executes FILE.py, the user's own program."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuseopt.capture.errors import CaptureError


def split_target(target: str) -> tuple[str, str]:
    """`FILE.py:FUNCTION` -> (FILE.py, which must exist, and FUNCTION), importing nothing."""
    path_text, sep, attr = target.rpartition(":")
    if not sep or not path_text or not attr:
        raise CaptureError(f"expected FILE.py:FUNCTION, got {target!r}", code="usage")
    if not Path(path_text).is_file():
        raise CaptureError(f"no such file: {path_text}", file=path_text, code="usage")
    return path_text, attr


def load_function(target: str) -> Callable[..., Any]:
    """Import FILE.py as a fresh module (its directory first on sys.path while it loads) and return
    its attribute FUNCTION (a dotted path such as `Block.forward` is followed)."""
    path_text, attr = split_target(target)
    path = Path(path_text)
    spec = importlib.util.spec_from_file_location(f"_fuseopt_capture_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CaptureError(f"cannot load {path_text} as a Python module", file=path_text, code="usage")
    module = importlib.util.module_from_spec(spec)
    directory = str(path.resolve().parent)
    sys.path.insert(0, directory)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise CaptureError(
            f"running {path_text} failed: {type(exc).__name__}: {exc}", file=path_text
        ) from exc
    finally:
        if sys.path and sys.path[0] == directory:
            sys.path.pop(0)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CaptureError(f"{path_text} has no attribute {attr!r}", file=path_text, code="usage")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CaptureError(f"{path_text}:{attr} is not callable", file=path_text, code="usage")
    return obj  # type: ignore[no-any-return]


def load_module(target: str, seed: int) -> Any:
    """`FILE.py:FACTORY` for `--module`: FACTORY() after `torch.manual_seed(seed)` (so the weights
    are the same on every run), which must return an nn.Module; it is put in eval mode."""
    import torch

    factory = load_function(target)
    path_text = target.rpartition(":")[0]
    torch.manual_seed(seed)
    try:
        module = factory()
    except Exception as exc:
        raise CaptureError(f"{target}() failed: {type(exc).__name__}: {exc}", file=path_text) from exc
    if not isinstance(module, torch.nn.Module):
        raise CaptureError(
            f"{target}() returned a {type(module).__name__}, not an nn.Module (--module)",
            file=path_text,
            code="usage",
        )
    return module.eval()  # safe: nn.Module.eval() switches off training mode, evaluates no text
