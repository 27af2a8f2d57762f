"""A split reduction: a looped reduction with too few x tiles for the GPU cut along r into
`chunks` chunks of whole R0_BLOCKs (for data contiguous along x, the last one shorter where
they do not divide r), reduced by a partial kernel (`SplitPartial`, program_id(1) a chunk) and
combined by a finishing kernel (`SplitFinish`: a persistent [XBLOCK, chunks] tile, then the
epilogue)."""

from __future__ import annotations

from dataclasses import dataclass

from fuseopt.codegen.common import cdiv
from fuseopt.codegen.launch_configs import looped_programs, split_reduction
from fuseopt.codegen.launch_counts import contiguous_bytes, rows_aligned, x_contiguous
from fuseopt.codegen.options import CodegenOptions, LaunchConfig
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned, Work
from fuseopt.codegen.strategies.persistent_row import holds
from fuseopt.ir.graph import Graph


@dataclass(frozen=True)
class SplitPartial:
    """Part 1: one chunk of `chunk` points of r a program_id(1), partial results stored (the
    last chunk ends at r's end, shorter where `chunk` does not divide it)."""

    chunks: int
    chunk: int


@dataclass(frozen=True)
class SplitFinish:
    """Part 2: the chunks' partial results combined, then the epilogue."""

    chunks: int


def applies(graph: Graph, launch: ComputeLaunch, options: CodegenOptions) -> Planned[SplitPartial] | None:
    if launch.kind == "pointwise" or holds(graph, launch, options):
        return None
    # Chunks that do not divide r only where the data is contiguous along x (the split's
    # cache-line-wide x tile reads whole lines of it a row) or every row read along r starts on a
    # vector boundary: misaligned rows are read an element a load (a 256 x 99999 f16 row max:
    # 71 us split against 44 looped; 128 x 200000 f32 row sums: 34.5 split, 54.5 looped).
    along, x_item = contiguous_bytes(graph, launch)
    outer = x_contiguous(along, options.tuning.outer_x_ratio)
    if not outer and launch.axes[0].numel >= max(options.split_target, looped_programs(options)):
        # rows read along r, enough that a looped tile takes a row a program, and a row a
        # program is already `split_target` programs: nothing left for chunks of r to fill
        return None
    split = split_reduction(
        launch,
        options,
        uneven=outer or rows_aligned(graph, launch, options.gpu.max_vector_bytes),
        x_item=x_item if outer else 0,
    )
    if split is None:
        return None
    cfg, chunks, chunk, cands = split
    return Planned(launch, SplitPartial(chunks, chunk), cfg, cands)


def work(s: SplitPartial, launch: ComputeLaunch, config: LaunchConfig, loops: int) -> Work:
    """A chunk of r a program, R0_BLOCK points a step; the finishing kernel a second launch."""
    return Work(steps=cdiv(s.chunk, config.block("R0_BLOCK")), kernels=2, accumulates=True)
