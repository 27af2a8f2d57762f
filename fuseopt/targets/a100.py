"""The NVIDIA A100 (SXM4): Ampere, 108 multiprocessors, no thread-block clusters and no
programmatic dependent launch (both need compute capability 9.0).

Hardware facts: NVIDIA's A100 specifications (the A100 Tensor Core GPU architecture paper). The
tuned constants are the H200's, not measured on an A100 (each provenance record says so); the
rules that read the hardware still follow it: grids sized by 108 multiprocessors, no clusters.
"""

from __future__ import annotations

from fuseopt.targets.base import Target, inherited
from fuseopt.targets.h200 import H200

A100 = Target(
    name="a100",
    description="NVIDIA A100 (Ampere GA100, SXM4 40 or 80 GB)",
    device_names=("A100",),
    compute_capability=(8, 0),
    multiprocessors=108,
    warp_size=32,
    registers_per_multiprocessor=65536,
    max_warps_per_multiprocessor=64,
    max_programs_per_multiprocessor=32,
    max_registers_per_thread=255,
    max_threads_per_block=1024,
    shared_memory_per_block=166912,  # 163 KiB opted in
    shared_memory_per_multiprocessor=167936,  # 164 KiB
    l2_bytes=41943040,  # 40 MiB
    cache_line_bytes=128,
    clock_mhz=1410,
    sector_bytes=32,
    memory_bandwidth_gbps=2039,
    max_vector_bytes=16,
    max_cluster_size=1,  # no clusters before Hopper
    programmatic_dependent_launch=False,
    max_grid_y=65535,
    tuning=H200.tuning,
    provenance=inherited(H200),
)
