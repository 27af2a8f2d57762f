"""Where each graph input comes from (a user argument, a module's parameter or buffer), and its name.

Dynamo records, per graph input, the source it read the value from: `L['x']` (the argument `x`),
`L['self']._modules['fc1']._parameters['weight']` (a parameter of the module being called), or
`G['model']._modules['h']._modules['0']._buffers['mask']` (a module the function reads from its
globals). The source's text is parsed by a regular expression (never evaluated) into a kind and a
module path (`fc1.weight`, `model.h.0.mask`). Parameters and buffers are named after their path,
lower-cased and sanitised to the name grammar (`fc1_weight`); names that collide get `_2`, `_3`, ... in graph-input
order; a path too long for a name keeps its head and a digest of the whole path. The original path
stays in `meta.capture.call` with the argument order, so a tool can call the program with the same
tensors (`fuseopt.capture.origins.CallRecord`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fuseopt.ir.expr import KEYWORDS
from fuseopt.ir.models import NAME_PATTERN

_SOURCE = re.compile(
    r"^(?P<root>[LG])\['(?P<name>[A-Za-z_][A-Za-z0-9_]*)'\]"
    r"(?P<chain>(?:\._(?:modules|parameters|buffers)\['[^'\\]{1,200}'\])*)$"
)
# Dynamo's wrapper frame for a module it does not inline (`fn(*args)`): argument i is L['args'][i].
_VARARG = re.compile(r"^L\['args'\]\[(\d{1,6})\]$")
_LINK = re.compile(r"\._(modules|parameters|buffers)\['([^'\\]{1,200})'\]")
_INDUCTOR_NAME = re.compile(r"^(buf\d+|arg\d+_\d+|primals_\d+|[xr]\d+|op\d+)$")
MAX_NAME = 64


@dataclass(frozen=True)
class Origin:
    """`kind`: "arg" (the user's positional argument `position`), "parameter" or "buffer" (of a
    module, at `path`), or "other" (anything else Dynamo lifted: a global tensor, a closure)."""

    kind: str
    path: str = ""
    position: int = -1
    hint: str = ""  # a readable name from Dynamo's placeholder, for "other"


@dataclass
class CallRecord:
    """How to call the captured program again: buffer per user argument, parameters by path."""

    args: list[str | None] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)  # buffer -> module path
    buffers: dict[str, str] = field(default_factory=dict)
    module: str | None = None  # the nn.Module class captured, when the program is one

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"args": list(self.args)}
        if self.module is not None:
            out["module"] = self.module
        out["parameters"] = dict(self.parameters)
        out["buffers"] = dict(self.buffers)
        return out


def origin_of(source: str, self_name: str | None, arg_names: Sequence[str], placeholder: str) -> Origin:
    """The origin of one graph input from Dynamo's source text (`L['x']`, `L['self']._modules[...]`)."""
    va = _VARARG.match(source)
    if va is not None:
        return Origin("arg", position=int(va.group(1)))
    m = _SOURCE.match(source)
    if m is None:
        return Origin("other", hint=placeholder)
    links = _LINK.findall(m.group("chain"))
    root, name = m.group("root"), m.group("name")
    if not links:
        if root == "L" and name in arg_names:
            return Origin("arg", position=list(arg_names).index(name))
        return Origin("other", hint=placeholder)
    kind = links[-1][0]
    if kind == "modules":
        return Origin("other", hint=placeholder)
    parts = [key for _, key in links]
    # A local that is not an argument is the module itself: `self` in forward, or `fn` in Dynamo's
    # wrapper frame `fn(*args)` for a module it does not inline (nn.Sequential).
    is_self = root == "L" and self_name is not None and (name == self_name or name not in arg_names)
    if not is_self:
        parts.insert(0, name)  # a module read from a global or passed as an argument
    return Origin("parameter" if kind == "parameters" else "buffer", path=".".join(parts))


def sanitized(path: str) -> str:
    """A module path as a buffer name, lower case as Dynamo's own names are:
    `h.0.attn.c_attn.weight` -> `h_0_attn_c_attn_weight`, `MLP.fc1.weight` -> `mlp_fc1_weight`."""
    name = re.sub(r"[^a-z0-9_]", "_", path.lower()).strip("_") or "param"
    if not re.match(r"^[A-Za-z_]", name) or _INDUCTOR_NAME.match(name) or name in KEYWORDS:
        name = f"p_{name}"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(path.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def _readable(placeholder: str) -> str:
    s = re.sub(r"^[lLgG]_", "", placeholder)
    s = s.rstrip("_")
    for noise in ("self_modules_", "self_", "_modules_", "_parameters_", "_buffers_"):
        s = s.replace(noise, "_" if noise.startswith("_") else "")
    return re.sub(r"[^A-Za-z0-9_]", "_", s).strip("_")


def input_names(
    inductor_names: Sequence[str], origins: Sequence[Origin], arg_names: Sequence[str]
) -> dict[str, str]:
    """Inductor graph input -> buffer name: the argument's name, the parameter's sanitised path, a
    readable form of Dynamo's placeholder, else Inductor's own name; collisions get `_2`, `_3`..."""
    out: dict[str, str] = {}
    taken = set(inductor_names)
    for iname, o in zip(inductor_names, origins, strict=True):
        if o.kind == "arg":
            cand = arg_names[o.position] if o.position < len(arg_names) else _readable(o.hint)
        elif o.kind in ("parameter", "buffer"):
            cand = sanitized(o.path)
        else:
            cand = _readable(o.hint)
        ok = bool(re.match(NAME_PATTERN, cand)) and cand not in KEYWORDS and not _INDUCTOR_NAME.match(cand)
        if not ok:
            out[iname] = iname
            continue
        name, k = cand, 2
        while name in taken:
            suffix = f"_{k}"
            name = f"{cand[: MAX_NAME - len(suffix)]}{suffix}"
            k += 1
        out[iname] = name
        taken.add(name)
    return out


def call_record(
    inductor_names: Sequence[str],
    origins: Sequence[Origin],
    renames: dict[str, str],
    n_args: int,
    module: str | None,
) -> CallRecord:
    rec = CallRecord(args=[None] * n_args, module=module)
    for iname, o in zip(inductor_names, origins, strict=True):
        name = renames[iname]
        if o.kind == "arg" and 0 <= o.position < n_args:
            rec.args[o.position] = name
        elif o.kind == "parameter":
            rec.parameters[name] = o.path
        elif o.kind == "buffer":
            rec.buffers[name] = o.path
    return rec
