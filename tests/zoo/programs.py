"""`fuseopt capture` targets for the small zoo models, one function per model:

    fuseopt capture tests/zoo/programs.py:resnet --input 'float32[2,3,32,32]' -o resnet.json

Each function calls its model (`tests.zoo.build(name, "small")`, seed 0, all built when the file
is imported: torch.compile traces the call, not the building) on the given tensors. The file is
imported by path, so it puts the repository root on sys.path.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.zoo.models import ZOO, build  # noqa: E402

_BUILT: dict[str, Any] = {name: build(name, "small").module for name in ZOO}


def _model(name: str) -> Any:
    return _BUILT[name]


def gpt2(ids: Any) -> Any:
    return _model("gpt2")(ids)


def llama(ids: Any) -> Any:
    return _model("llama")(ids)


def bert(ids: Any) -> Any:
    return _model("bert")(ids)


def vit(pixels: Any) -> Any:
    return _model("vit")(pixels)


def resnet(pixels: Any) -> Any:
    return _model("resnet")(pixels)


def convnext(pixels: Any) -> Any:
    return _model("convnext")(pixels)


def inception(pixels: Any) -> Any:
    return _model("inception")(pixels)


assert set(ZOO) == {"gpt2", "llama", "bert", "vit", "resnet", "convnext", "inception"}
