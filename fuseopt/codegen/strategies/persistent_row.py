"""A persistent reduction: one [XBLOCK, R0_BLOCK] tile holds whole rows (up to
`persistent_rnumel` points), leaning towards x when the reduced data is contiguous along x; a
transposed one may run as a cluster of programs (`clustered_config`, `cluster_pays`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from fuseopt.codegen.launch_configs import (
    cluster_pays,
    clustered_config,
    configs_reduction,
    contiguous_bytes,
    sfu_per_point,
    unique_configs,
    x_contiguous,
)
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned
from fuseopt.codegen.strategies.waves import waves
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class PersistentRow:
    """Whole rows of r in registers, XBLOCK rows a program."""


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[PersistentRow] | None:
    if launch.kind == "pointwise" or launch.axes[1].numel > options.tuning.persistent_rnumel:
        return None
    along, x_item = contiguous_bytes(graph, launch)
    outer = x_contiguous(along, options.tuning.outer_x_ratio)
    sfu = outer and sfu_per_point(launch)
    default, cands = configs_reduction(launch, options, persistent=True, outer=outer, sfu=sfu)
    cluster = clustered_config(launch, default, options) if outer else None
    if cluster is not None and cluster_pays(launch, default, sfu, x_item, options):
        return Planned(launch, PersistentRow(), cluster, unique_configs(cluster, list(cands)), default)
    return Planned(launch, PersistentRow(), default, cands)


def cost(planned: Planned[PersistentRow], options: CodegenOptions) -> Fraction:
    """Waves of programs over the multiprocessors."""
    return waves(planned.launch, planned.config, options)
