"""The NVIDIA H100 (SXM5): Hopper like the H200, with its multiprocessors and a smaller L2.

Hardware facts: NVIDIA's H100 specifications (the H100 Tensor Core GPU architecture paper). The
tuned constants are the H200's, not measured on an H100 (each provenance record says so).
"""

from __future__ import annotations

from fuseopt.targets.base import Target, inherited
from fuseopt.targets.h200 import H200

H100 = Target(
    name="h100",
    description="NVIDIA H100 (Hopper GH100, SXM5 80 GB HBM3)",
    device_names=("H100",),
    compute_capability=(9, 0),
    multiprocessors=132,
    warp_size=32,
    registers_per_multiprocessor=65536,
    max_warps_per_multiprocessor=64,
    max_programs_per_multiprocessor=32,
    max_registers_per_thread=255,
    max_threads_per_block=1024,
    shared_memory_per_block=232448,  # 227 KiB opted in
    shared_memory_per_multiprocessor=233472,  # 228 KiB
    l2_bytes=52428800,  # 50 MiB
    cache_line_bytes=128,
    clock_mhz=1980,
    sector_bytes=32,
    memory_bandwidth_gbps=3350,
    max_vector_bytes=16,
    max_cluster_size=8,  # portable; 16 with a non-portable opt-in
    programmatic_dependent_launch=True,
    max_grid_y=65535,
    tuning=H200.tuning,
    provenance=inherited(H200),
)
