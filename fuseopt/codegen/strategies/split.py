"""A split reduction: a looped reduction with too few x tiles for the GPU cut along r into
`chunks` chunks of whole R0_BLOCKs (for data contiguous along x, the last one shorter where
they do not divide r), reduced by a partial kernel (`SplitPartial`, program_id(1) a chunk) and
combined by a finishing kernel (`SplitFinish`: a persistent [XBLOCK, chunks] tile, then the
epilogue)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from fuseopt.codegen.launch_configs import split_reduction
from fuseopt.codegen.launch_counts import contiguous_bytes, x_contiguous
from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.codegen.strategies.base import Planned
from fuseopt.codegen.strategies.persistent_row import holds
from fuseopt.codegen.strategies.waves import waves
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
    # Chunks that do not divide r only where the data is contiguous along x: the split's
    # 32-wide x tile reads whole sectors of it a row, while rows contiguous along r read
    # misaligned rows that way (a 256 x 99999 f16 row max: 71 us split against 44 looped).
    along, _ = contiguous_bytes(graph, launch)
    split = split_reduction(launch, options, uneven=x_contiguous(along, options.tuning.outer_x_ratio))
    if split is None:
        return None
    cfg, chunks, chunk, cands = split
    return Planned(launch, SplitPartial(chunks, chunk), cfg, cands)


def cost(planned: Planned[SplitPartial], options: CodegenOptions) -> Fraction:
    """Waves of the partial kernel's programs (x tiles x chunks) over the multiprocessors."""
    return waves(planned.launch, planned.config, options, planned.strategy.chunks)
