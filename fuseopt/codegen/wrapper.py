"""The generated module as a whole: imports, helpers, kernels and the `call` wrapper.

`call(inputs)` takes flat storages (1-D tensors of each buffer's storage size, keyed by buffer
name), launches the kernels in plan order (torch for extern and template nodes, on the logical
as_strided views) and returns the output storages. Each materialised buffer is allocated at the
launch that first uses it (a library call's result becomes its buffer: `calls.take_lines`), and an
intermediate is deleted after the launch that last uses it (`_lifetimes`); with
`intermediates=True` they are kept and returned too. Fused-away intermediates never exist. The
module needs only torch and triton.
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Mapping, Sequence

from fuseopt.codegen.calls import CALL_RUNTIME, Call, call_lines, take_lines
from fuseopt.codegen.choice import choose
from fuseopt.codegen.common import TORCH_DTYPE
from fuseopt.codegen.emitter import EmittedKernel, kernel_name
from fuseopt.codegen.fission import fission
from fuseopt.codegen.helpers import HELPERS, INTERPRETED_PREAMBLE, helper_closure, helpers_used
from fuseopt.codegen.kernel import KernelEmitter
from fuseopt.codegen.layout import truncate_comment, wrap
from fuseopt.codegen.rules import library_rule
from fuseopt.codegen.schedule import ComputeLaunch, LibraryLaunch, Schedule, build_schedule
from fuseopt.codegen.source_text import check_module, comment_text, graph_name, ident, literal, python_name
from fuseopt.codegen.strategies import SplitFinish, SplitPartial
from fuseopt.codegen.tile_shapes import finish_tiling
from fuseopt.codegen.tiling import CodegenOptions, LaunchConfig, Tiling
from fuseopt.codegen.windows.sliding import Key
from fuseopt.ir.graph import BufferInfo, Graph, LibraryNode, View
from fuseopt.plan import Plan

_RUNTIME = """\
def _input(inputs: dict[str, torch.Tensor], name: str, size: int, dtype: torch.dtype) -> torch.Tensor:
    t = inputs[name]
    if t.dtype != dtype or t.dim() != 1 or t.numel() != size:
        raise ValueError(
            f"input {name!r}: expected a flat {dtype} storage of {size} elements, "
            f"got {t.dtype} of shape {tuple(t.shape)}"
        )
    return t.contiguous()


def _empty(size: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if not POISON:
        return torch.empty(size, dtype=dtype, device=device)
    if dtype.is_floating_point:
        return torch.full((size,), float("nan"), dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.ones(size, dtype=dtype, device=device)
    return torch.full((size,), torch.iinfo(dtype).max, dtype=dtype, device=device)


def _view(
    storage: torch.Tensor, shape: tuple[int, ...], stride: tuple[int, ...], offset: int
) -> torch.Tensor:
    return torch.as_strided(storage, shape, stride, offset)
"""

_DEFAULT_DEVICE = """\
def _default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""

_GRID = '''\
def _grid(*dims: dict[str, int]):
    """Launch grid of an autotuned kernel, for the config's block sizes: per grid dimension, the
    product of its axes' tile counts (a block named "" is a fixed count, a split's chunks)."""

    def grid(meta: dict[str, int]) -> tuple[int, ...]:
        out = []
        for dim in dims:
            n = 1
            for block, numel in dim.items():
                n *= triton.cdiv(numel, meta[block]) if block else numel
            out.append(n)
        return tuple(out)

    return grid
'''

_CLUSTERS = """\
# Launches with thread-block clusters (num_ctas > 1) need an NVIDIA GPU of compute capability 9.0
# or later; elsewhere those kernels run their single-program launch. CLUSTERS = True or False
# decides instead (tests run the cluster launch under the interpreter, which ignores num_ctas).
CLUSTERS = None


def _clusters(device: torch.device) -> bool:
    if CLUSTERS is not None:
        return CLUSTERS
    if device.type != "cuda" or torch.version.hip is not None:
        return False
    return torch.cuda.get_device_capability(device)[0] >= 9
"""

_PDL = """\
# A split reduction's finishing kernel is launched with programmatic dependent launch on NVIDIA
# GPUs of compute capability 9.0 or later: it starts while the partial kernel's last programs run
# and waits for their results before its first load (_gdc_wait; triton 3.4+). PDL = True or
# False decides instead (the interpreter has no grid dependency control).
PDL = None


def _pdl(device: torch.device) -> bool:
    if PDL is not None:
        return PDL
    if device.type != "cuda" or torch.version.hip is not None or not hasattr(tl.extra.cuda, "gdc_wait"):
        return False
    return torch.cuda.get_device_capability(device)[0] >= 9
"""

_PRUNE = """\
def _prune(configs: list[triton.Config], named_args: dict, **kwargs: object) -> list[triton.Config]:
    \"\"\"Autotune candidates: under TRITON_INTERPRET=1, which cannot time them, only the first
    (the launch fuseopt fixes without --autotune).\"\"\"
    return configs[:1] if os.environ.get("TRITON_INTERPRET", "0") == "1" else configs
"""

_CLUSTER_PRUNE = """\
def _prune(configs: list[triton.Config], named_args: dict, **kwargs: object) -> list[triton.Config]:
    \"\"\"Autotune candidates for the launch's device (when it tunes): cluster launches only where
    the device has them, or CLUSTERS says so; under TRITON_INTERPRET=1, which cannot time them,
    only the first left (the launch fuseopt fixes without --autotune).\"\"\"
    device = next(a.device for a in named_args.values() if isinstance(a, torch.Tensor))
    kept = [c for c in configs if c.num_ctas == 1 or _clusters(device)]
    return kept[:1] if os.environ.get("TRITON_INTERPRET", "0") == "1" else kept
"""

_FIXED_NAMES = frozenset(
    {"torch", "triton", "tl", "inputs", "intermediates", "device", "result", "call", "POISON"}
    | {"_input", "_empty", "_view", "_grid", "_default_device", "CLUSTERS", "_clusters", "_prune"}
    | {"PDL", "_pdl", "pdl", "_take_results", "kept"}
)


def build_module(
    graph: Graph,
    plan: Plan,
    options: CodegenOptions,
    forced: Mapping[int, tuple[Tiling, dict[Key, Key]]] | None = None,
    tilings: Sequence[LaunchTilings] | None = None,
) -> str:
    """The module's source; `forced` gives the tiling of some launches (by their index in the
    schedule), each with what a sliding window carries, instead of `choice.choose`'s;
    `tilings`, every launch's (`launch_tilings`), where already made."""
    schedule = build_schedule(graph, plan)
    kernels: list[EmittedKernel] = []
    emitted_for: list[list[EmittedKernel]] = []
    made = launch_tilings(graph, schedule, options, forced) if tilings is None else tilings
    for launch_kernels, carry in made:
        group = []
        for tiling in launch_kernels:
            emitter = KernelEmitter(graph, tiling, kernel_name(tiling, len(kernels)), carry)
            emitted = emitter.emit_kernel()
            kernels.append(emitted)
            group.append(emitted)
        emitted_for.append(group)
    workspaces = list(dict.fromkeys(w for k in kernels for w in k.workspaces))
    names = _local_names(graph, [k.name for k in kernels], [w for w, _, _ in workspaces])

    body: list[str] = []
    inputs = sorted(graph.inputs, key=lambda b: b.name)  # by name: the text ignores buffer list order
    for b in inputs:
        body.append(
            f'{names[b.name]} = _input(inputs, "{ident(b.name)}", {b.storage_size}, {TORCH_DTYPE[b.dtype]})'
        )
    body.append(f"device = {names[inputs[0].name]}.device" if inputs else "device = _default_device()")
    first, last = _lifetimes(schedule, emitted_for)

    def alloc(name: str) -> str:
        b = graph.buffer(name)
        return f"{names[name]} = _empty({b.storage_size}, {TORCH_DTYPE[b.dtype]}, device)"

    body.extend(alloc(n) for n in schedule.materialised if n not in first)  # used by no launch
    freed = [n for n in schedule.materialised if n in last and graph.buffer(n).role == "intermediate"]
    if freed:  # an intermediate is deleted after its last use; `intermediates` keeps it here
        body.append("kept: dict[str, torch.Tensor] = {}")
    pdl_known = False
    own = set(schedule.materialised)  # allocated at first use; a group allocates what its loops apart pass
    for index, (launch, group) in enumerate(zip(schedule.launches, emitted_for, strict=True)):
        body.append("")
        starting = [n for n in schedule.materialised if first.get(n) == index]
        if isinstance(launch, LibraryLaunch):  # its outputs are the call's results (`_take_results`)
            allocated = [alloc(n) for n in starting if n not in launch.node.outputs]
            lines = _library_call(graph, launch, names)
            at = next(i for i, line in enumerate(lines) if not line.startswith("#"))  # after its comments
            body.extend([*lines[:at], *allocated, *lines[at:]])
        else:
            nodes = ", ".join(ident(p.node.name) for p in launch.placements)
            kernel = comment_text(launch.plan_kernel)
            if not group:
                body.append(f"# {kernel}: {nodes}: nothing to run (no output is read or returned)")
                continue
            body.append(f"# {kernel}: {nodes}{_group_note(group)}")
            body.extend(alloc(n) for n in starting)
            temporary = list(dict.fromkeys(w for k in group for w, _, _ in k.workspaces))
            for w, dt, size in dict.fromkeys(w for k in group for w in k.workspaces):
                body.append(f"{names[w]} = torch.empty({size}, dtype={TORCH_DTYPE[dt]}, device=device)")
            for passed in dict.fromkeys(s for k in group for s in k.tiling.launch.stores if s not in own):
                body.append(alloc(passed))  # a result one loop apart passes to a later one (`fission`)
                temporary.append(passed)
            split = any(isinstance(k.tiling.strategy, SplitPartial) for k in group)
            if split and not pdl_known:  # decided once, before the first split's launches
                body.append("pdl = _pdl(device)")
                pdl_known = True
            body.extend(line for k in group for line in _launch(k, names))
            if temporary:
                body.append("del " + ", ".join(names[t] for t in temporary))
        done = [n for n in freed if last[n] == index]
        if done:
            body.append("if intermediates:")
            body.append("    kept.update({" + ", ".join(f'"{ident(n)}": {names[n]}' for n in done) + "})")
            body.append("del " + ", ".join(names[n] for n in done))
    outputs = sorted(b.name for b in graph.outputs)
    unused = [
        f'"{ident(n)}": {names[n]}' for n in schedule.materialised if n not in last and n not in outputs
    ]
    body.append("")
    body.append("result = {" + ", ".join(f'"{ident(n)}": {names[n]}' for n in outputs) + "}")
    if freed or unused:
        body.append("if intermediates:")
        body.append(
            "    result.update(kept)"
            if not unused
            else "    result.update({" + ", ".join(["**kept"] * bool(freed) + unused) + "})"
        )
    body.append("return result")

    helpers = helper_closure([h for k in kernels for h in helpers_used(k.source)])
    parts: list[str] = [_docstring(graph, plan, kernels, options)]
    imports = "import torch\nimport triton\nimport triton.language as tl\n"
    interpreted = any(HELPERS[h].interpreted for h in helpers)
    tuned = any(len(k.tiling.autotune) > 1 for k in kernels)
    clusters = any(c.num_ctas > 1 for k in kernels for c in k.tiling.configs)
    if interpreted or tuned:  # reads TRITON_INTERPRET
        imports = "import os\n\n" + imports
    if any("libdevice." in HELPERS[h].source for h in helpers):
        imports += "from triton.language.extra import libdevice\n"
    parts.append(imports)
    parts.append(
        "# fuseopt.runtime sets POISON for checked runs: fresh buffers then start as NaN (or the\n"
        "# dtype's largest value), so an element no kernel writes cannot pass a comparison.\n"
        "POISON = False\n"
    )
    if clusters:
        parts.append(_CLUSTERS)
    if tuned:
        parts.append(_CLUSTER_PRUNE if clusters else _PRUNE)
    if any(isinstance(k.tiling.strategy, SplitPartial | SplitFinish) for k in kernels):
        parts.append(_PDL)
    if interpreted:
        parts.append(INTERPRETED_PREAMBLE)
    parts.extend(HELPERS[h].source for h in helpers)
    parts.extend(k.source for k in kernels)
    parts.append(_RUNTIME)
    if any(isinstance(n, LibraryNode) for n in graph.nodes):
        parts.append(CALL_RUNTIME)
    if not inputs:
        parts.append(_DEFAULT_DEVICE)
    if options.autotune and kernels:
        parts.append(_GRID)
    call = [
        "def call(inputs: dict[str, torch.Tensor], *, intermediates: bool = False) -> dict[str, torch.Tensor]:",
        '    """Run the graph on flat input storages; returns flat output storages by buffer name."""',
    ]
    for line in body:
        call.extend(wrap(f"    {line}") if line else [""])
    parts.append("\n".join(call) + "\n")
    text = parts[0].rstrip("\n") + "\n\n" + "\n\n".join(p.rstrip("\n") + "\n" for p in parts[1:])
    return check_module(text.replace("\n\n\n\n", "\n\n\n"))


def _lifetimes(
    schedule: Schedule, emitted_for: list[list[EmittedKernel]]
) -> tuple[dict[str, int], dict[str, int]]:
    """Each materialised buffer's first and last launch (by index) that reads or writes it; one
    no launch uses is in neither."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for index, (launch, group) in enumerate(zip(schedule.launches, emitted_for, strict=True)):
        if isinstance(launch, LibraryLaunch):
            used = [*launch.node.read_buffers(), *launch.node.outputs]
        else:
            used = [b for k in group for b in k.args]
        for b in used:
            first.setdefault(b, index)
            last[b] = index
    return first, last


def _group_note(group: list[EmittedKernel]) -> str:
    """What the comment above a launch's kernels says of their shape: its loops apart, a split."""
    parts = len({id(k.tiling.launch) for k in group})  # a split's two kernels share their launch
    splits = [k.tiling.strategy.chunks for k in group if isinstance(k.tiling.strategy, SplitPartial)]
    chunks = ", ".join(str(c) for c in splits)
    split = f"split reduction: {chunks} chunks of r, then their combination" if splits else ""
    if parts > 1:
        return f" (its {parts} r loops apart" + (f"; {split})" if split else ")")
    return f" ({split})" if split else ""


# A launch's Triton kernels' tilings (none, one, a split's two, or its r loops' apart) and what a sliding
# window carries.
LaunchTilings = tuple[tuple[Tiling, ...], dict[Key, Key]]


def launch_tilings(
    graph: Graph,
    schedule: Schedule,
    options: CodegenOptions,
    forced: Mapping[int, tuple[Tiling, dict[Key, Key]]] | None = None,
) -> list[LaunchTilings]:
    """Per launch of the schedule, the tilings of its Triton kernels (a split reduction's two,
    a looped reduction's loops apart (`fission`), none for a library call or a launch that
    stores nothing) and what a sliding window carries from row to row; `forced`, by launch
    index, instead of `choice.choose`'s (and of fission)."""
    out: list[LaunchTilings] = []
    for index, launch in enumerate(schedule.launches):
        if not isinstance(launch, ComputeLaunch) or not launch.stores:
            out.append(((), {}))
            continue
        if forced and index in forced:
            first, carry = forced[index]
        else:
            first, carry = choose(graph, launch, options)
            apart = fission(graph, launch, first, options)
            if apart is not None:
                out.append((apart, carry))
                continue
        split = isinstance(first.strategy, SplitPartial)
        out.append(((first, finish_tiling(first, options)) if split else (first,), carry))
    return out


def _docstring(graph: Graph, plan: Plan, kernels: list[EmittedKernel], options: CodegenOptions) -> str:
    n_lib = sum(1 for k in plan.kernels if k.kind in ("extern", "template"))
    tuned = "autotuned" if options.autotune else "fixed launch parameters"
    return (
        f'"""Triton kernels for graph {graph_name(graph.name)!r}, generated by fuseopt; do not edit.\n'
        "\n"
        f"Planned kernels: {len(plan.kernels)}; Triton kernels: {len(kernels)} ({tuned}); "
        f"torch library calls: {n_lib}.\n"
        "call(inputs) takes and returns flat storages: 1-D tensors of each buffer's storage size.\n"
        '"""\n'
    )


def _local_names(graph: Graph, kernel_names: list[str], workspaces: list[str]) -> dict[str, str]:
    """Python names for buffers (and split reductions' partials) inside `call` (a buffer may be
    named like a keyword or a global)."""
    taken = set(_FIXED_NAMES) | set(kernel_names) | set(HELPERS) | set(dir(builtins))
    taken |= set(keyword.kwlist) | set(keyword.softkwlist)
    out: dict[str, str] = {}
    for name in sorted(ident(b.name) for b in graph.buffers) + workspaces:
        key = name
        while name in taken:
            name += "_"
        taken.add(name)
        out[key] = python_name(name)
    return out


def _launch(k: EmittedKernel, names: dict[str, str]) -> list[str]:
    """The kernel's launch; with a cluster launch, chosen at run time against its fallback."""
    args = [names[b] for b in k.args] + [str(n) for _, n in k.numels]
    kernel = python_name(k.name)
    t = k.tiling
    # A split's kernels take PDL; the finishing one is launched dependent on the partial one.
    pdl = (
        ["PDL=pdl"]
        if isinstance(t.strategy, SplitPartial)
        else ["PDL=pdl", "launch_pdl=pdl"]
        if isinstance(t.strategy, SplitFinish)
        else []
    )
    if t.autotune:
        per_dim = (
            "{" + ", ".join(f'"{b}": {n}' for b, n in dim.items()) + "}" for dim in t.grid_dims(t.config)
        )
        grid = "_grid(" + ", ".join(per_dim) + ")"
        return [f"{kernel}[{grid}]({', '.join(args + pdl)})"]

    def fixed(c: LaunchConfig) -> str:
        dims = t.grid(c)
        grid = f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(map(str, dims))})"
        kw = [f"{name}={value}" for name, value in c.blocks] + [f"num_warps={c.num_warps}"]
        kw += ([f"num_ctas={c.num_ctas}"] if c.num_ctas > 1 else []) + pdl
        return f"{kernel}[{grid}]({', '.join(args + kw)})"

    if t.fallback is None:
        return [fixed(t.config)]
    return ["if _clusters(device):", f"    {fixed(t.config)}", "else:", f"    {fixed(t.fallback)}"]


def _view(b: BufferInfo, local: str) -> str:
    return f"_view({local}, {tuple(b.shape)!r}, {tuple(b.stride)!r}, {b.offset})"


def _library_call(graph: Graph, launch: LibraryLaunch, names: dict[str, str]) -> list[str]:
    node = launch.node
    if node.call is not None:
        what = f"{comment_text(node.kind)} {comment_text(node.op)}"
        head = f"# {comment_text(launch.plan_kernel)}: {ident(node.name)} ({what}, run by torch)"
        return [head, *call_lines(node.call, names, {b.name: b for b in graph.buffers}, 4)]
    views = tuple(_view(graph.buffer(b), names[b]) for b in node.inputs)
    out = graph.buffer(node.output)
    what = f"{comment_text(node.kind)} {comment_text(node.op)}"
    lines = [f"# {comment_text(launch.plan_kernel)}: {ident(node.name)} ({what}, run by torch)"]
    if node.kind == "template" and node.choices:
        best = node.best_choice()
        assert best is not None
        # Choice names are free text (a compiler's dump may hold any): only ever string literals.
        choices = ", ".join(f"{literal(c)} {t}us" for c, t in node.choices)
        lines.append(truncate_comment(f"    # template choices: {choices}; picked {literal(best[0])}.")[4:])
        lines.append(
            "# The template itself runs as the torch call; a fused epilogue is a separate Triton kernel."
        )
    whole = View(out.name, out.shape, out.stride, out.offset)
    run = Call(library_rule(node.op), views)
    return lines + take_lines(run, [(out, whole)], node.op, node.inputs, names, 4)
