"""GPU targets: one file per GPU, each a frozen `Target` (hardware facts and tuned constants).

`get(name)` and `names()` are the registry (`--target NAME`); `detect()` maps the GPU torch sees
to a known target, or describes an unknown one from its properties with the default target's
tuning. Importing this package imports neither torch nor the code generator.
"""

from __future__ import annotations

import re
from typing import Any

from fuseopt.targets.a100 import A100
from fuseopt.targets.base import Target, Tuned, Tuning, inherited
from fuseopt.targets.h100 import H100
from fuseopt.targets.h200 import H200

__all__ = [
    "A100",
    "DEFAULT",
    "H100",
    "H200",
    "Target",
    "Tuned",
    "Tuning",
    "detect",
    "from_properties",
    "get",
    "names",
]

DEFAULT = H200  # what code generation targets unless told: the GPU it is tuned on

_TARGETS: dict[str, Target] = {t.name: t for t in (H200, H100, A100)}


def names() -> list[str]:
    """Every known target's name, sorted."""
    return sorted(_TARGETS)


def get(name: str) -> Target:
    """The target called `name`; a `KeyError` that lists the known names otherwise."""
    try:
        return _TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r}; known: {', '.join(names())}") from None


def detect(device: int = 0) -> Target | None:
    """The target of CUDA device `device` (`from_properties` of what torch reports), or None
    when torch sees no GPU. Imports torch."""
    import torch

    if not torch.cuda.is_available():
        return None
    return from_properties(torch.cuda.get_device_properties(device), hip=torch.version.hip is not None)


def _bandwidth_gbps(props: Any) -> int:
    """DRAM bandwidth from the memory clock (kHz, double data rate) and bus width (bits) torch
    reports where it does; 0 where it does not."""
    clock, bus = getattr(props, "memory_clock_rate", 0) or 0, getattr(props, "memory_bus_width", 0) or 0
    return int(2 * int(clock) * 1000 * int(bus) // 8 // 10**9)


def from_properties(props: Any, *, hip: bool = False) -> Target:
    """The known target whose device names and multiprocessor count match `props` (a
    `torch.cuda.get_device_properties` result, or anything with its attributes), else a target
    built from them (named after the device) with the default target's tuning, marked as not
    measured there. NVIDIA's clusters and programmatic dependent launch come with compute
    capability 9.0; a ROCm device (`hip`) has neither."""
    name = str(props.name)
    sms = int(props.multi_processor_count)
    for t in _TARGETS.values():
        if t.multiprocessors == sms and any(n.lower() in name.lower() for n in t.device_names):
            return t
    cc = (int(props.major), int(props.minor))
    hopper = not hip and cc >= (9, 0)
    base = DEFAULT
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"

    def prop(attr: str, default: int) -> int:
        value = getattr(props, attr, None)
        return int(value) if value else default

    smem_block = prop("shared_memory_per_block_optin", prop("shared_memory_per_block", 49152))
    return Target(
        name=slug,
        description=f"{name} (detected; tuning of the {base.name.upper()}, not measured here)",
        device_names=(name,),
        compute_capability=cc,
        multiprocessors=sms,
        warp_size=prop("warp_size", 64 if hip else 32),
        registers_per_multiprocessor=prop("regs_per_multiprocessor", 65536),
        max_warps_per_multiprocessor=prop("max_threads_per_multi_processor", 2048)
        // prop("warp_size", 64 if hip else 32),
        max_programs_per_multiprocessor=base.max_programs_per_multiprocessor,
        max_registers_per_thread=255,
        max_threads_per_block=prop("max_threads_per_block", 1024),
        shared_memory_per_block=smem_block,
        shared_memory_per_multiprocessor=prop("shared_memory_per_multiprocessor", smem_block),
        l2_bytes=prop("L2_cache_size", 0),
        cache_line_bytes=base.cache_line_bytes,
        clock_mhz=prop("clock_rate", base.clock_mhz * 1000) // 1000,
        sector_bytes=base.sector_bytes,
        memory_bandwidth_gbps=_bandwidth_gbps(props) or base.memory_bandwidth_gbps,
        max_vector_bytes=base.max_vector_bytes,
        max_cluster_size=8 if hopper else 1,
        programmatic_dependent_launch=hopper,
        max_grid_y=base.max_grid_y,
        tuning=base.tuning,
        provenance=inherited(base),
    )
