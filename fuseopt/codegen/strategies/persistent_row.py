"""A persistent reduction: one [XBLOCK, R0_BLOCK] tile holds whole rows (up to
`persistent_aligned_rnumel` points where every read along r starts each row on a vector boundary,
`persistent_rnumel` where one does not, `persistent_outer_rnumel` when the reduced data is
contiguous along x), leaning towards x when the reduced data is contiguous along x; a
transposed one may run as a cluster of programs (`clustered_config`, `cluster_pays`)."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.launch_configs import cluster_pays, clustered_config, configs_reduction, unique_configs
from fuseopt.codegen.launch_counts import contiguous_bytes, rows_aligned, sfu_per_point, x_contiguous
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class PersistentRow:
    """Whole rows of r in registers, XBLOCK rows a program."""


def holds(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> bool:
    """Whether a reduction's rows are few enough points to hold whole: a row read once, where a
    looped tile reads it once a pass over r. A row a thread reads in vectors is held up to
    `persistent_aligned_rnumel`; one that starts inside a vector (`rows_aligned`: an odd row
    length, a sliced row) only up to `persistent_rnumel`, as each of a thread's points is then a
    load of its own. A tile contiguous along x holds fewer (its x rows are wide already:
    `persistent_outer_rnumel`)."""
    if launch.kind == "pointwise":
        return False
    t, rnumel = options.tuning, launch.axes[1].numel
    if rnumel > t.persistent_rnumel and (
        rnumel > t.persistent_aligned_rnumel or not rows_aligned(graph, launch, options.gpu.max_vector_bytes)
    ):
        return False
    along, _ = contiguous_bytes(graph, launch)
    return not x_contiguous(along, t.outer_x_ratio) or rnumel <= t.persistent_outer_rnumel


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[PersistentRow] | None:
    if not holds(graph, launch, options):
        return None
    along, x_item = contiguous_bytes(graph, launch)
    outer = x_contiguous(along, options.tuning.outer_x_ratio)
    sfu = outer and sfu_per_point(launch)
    default, cands = configs_reduction(launch, options, persistent=True, outer=outer, sfu=sfu)
    cluster = clustered_config(launch, default, options) if outer else None
    if cluster is not None and cluster_pays(launch, default, sfu, x_item, options):
        return Planned(launch, PersistentRow(), cluster, unique_configs(cluster, list(cands)), default)
    return Planned(launch, PersistentRow(), default, cands)
