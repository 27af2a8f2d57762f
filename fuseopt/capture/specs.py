"""Input specs of `fuseopt capture`: `float32[1024,2048]` plus a layout, to example tensors and back.

Specs are parsed with a regular expression (never evaluated). Layouts: `contiguous`; `transposed`
(the last two dims stored swapped, as `randn(..., n, m).t()`); `channels_last` (4-d NHWC storage,
5-d NDHWC). Random values come from a seeded generator, so the same specs give the same tensors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fuseopt.errors import Diagnostic, InputError
from fuseopt.ir.dtypes import DType

if TYPE_CHECKING:
    import torch

LAYOUTS = ("contiguous", "transposed", "channels_last")
MAX_SPEC_NUMEL = 2**31 - 1
_SPEC = re.compile(r"^\s*([a-z0-9]+)\s*\[\s*((?:\d+\s*(?:,\s*\d+\s*)*)?)\]\s*$")


@dataclass(frozen=True)
class InputSpec:
    dtype: DType
    shape: tuple[int, ...]
    layout: str = "contiguous"

    def text(self) -> str:
        return f"{self.dtype.value}[{','.join(map(str, self.shape))}]"


def _bad(message: str) -> InputError:
    return InputError([Diagnostic(message, code="usage")])


def parse_spec(text: str, layout: str = "contiguous") -> InputSpec:
    """`float32[1024,2048]` (or `bool[]` for a 0-d tensor) -> InputSpec; errors name the spec."""
    m = _SPEC.match(text)
    if m is None:
        raise _bad(f"input spec {text!r} is not DTYPE[D0,D1,...] (e.g. float32[1024,2048])")
    try:
        dtype = DType(m.group(1))
    except ValueError:
        known = ", ".join(d.value for d in DType)
        raise _bad(f"input spec {text!r}: unknown dtype {m.group(1)!r} (known: {known})") from None
    shape = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    numel = 1
    for d in shape:
        if d < 1:
            raise _bad(f"input spec {text!r}: sizes must be positive")
        numel *= d
    if numel > MAX_SPEC_NUMEL:
        raise _bad(f"input spec {text!r} has {numel} elements (at most {MAX_SPEC_NUMEL})")
    if layout not in LAYOUTS:
        raise _bad(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if layout == "transposed" and len(shape) < 2:
        raise _bad(f"layout transposed needs at least 2 dims, {text!r} has {len(shape)}")
    if layout == "channels_last" and len(shape) not in (4, 5):
        raise _bad(f"layout channels_last needs 4 or 5 dims, {text!r} has {len(shape)}")
    return InputSpec(dtype, shape, layout)


def make_tensor(spec: InputSpec, generator: torch.Generator) -> torch.Tensor:
    """A random tensor of the spec: normal floats, integers in [0, 8), fair bools."""
    import torch

    from fuseopt.interp.ops import TORCH_DTYPE

    dtype = TORCH_DTYPE[spec.dtype]
    shape = spec.shape
    if spec.layout == "transposed":
        shape = (*shape[:-2], shape[-1], shape[-2])
    if spec.dtype.is_float:
        t = torch.randn(
            shape, generator=generator, dtype=torch.float64 if spec.dtype == DType.float64 else torch.float32
        )
    elif spec.dtype == DType.bool:
        t = torch.randint(0, 2, shape, generator=generator)
    else:
        t = torch.randint(0, 8, shape, generator=generator)
    t = t.to(dtype)
    if spec.layout == "transposed":
        return t.transpose(-1, -2)
    if spec.layout == "channels_last":
        fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
        return t.contiguous(memory_format=fmt)
    return t


def make_inputs(specs: list[InputSpec], seed: int = 0) -> list[torch.Tensor]:
    import torch

    gen = torch.Generator().manual_seed(seed)
    return [make_tensor(s, gen) for s in specs]


def describe_tensor(t: object) -> object:
    """A tensor as its spec text plus layout (`float32[8,4] transposed`); other values by type."""
    import torch

    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    text = f"{str(t.dtype).removeprefix('torch.')}[{','.join(map(str, t.shape))}]"
    layout = _layout_name(t)
    return text if layout == "contiguous" else f"{text} {layout}"


def _layout_name(t: torch.Tensor) -> str:
    import torch

    if t.is_contiguous():
        return "contiguous"
    if t.dim() >= 2 and t.transpose(-1, -2).is_contiguous():
        return "transposed"
    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
        return "channels_last"
    if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d):
        return "channels_last"
    extra = f" offset {t.storage_offset()}" if t.storage_offset() else ""
    return f"stride {list(t.stride())}{extra}"
