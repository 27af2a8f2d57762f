"""`codegen.strategies.tile_2d`: a transposed pointwise 2D tile."""

from __future__ import annotations

import dataclasses

import pytest

from fuseopt.codegen.options import CodegenOptions
from fuseopt.codegen.strategies import Tile2D, tile_2d
from fuseopt.io.load import load_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan
from fuseopt.targets import DEFAULT
from tests.strategies import check
from tests.strategy_graphs import launches, strategies, tilings_of


def test_tile_2d_taken() -> None:
    for name in ["apbt_small", "transpose_bf16_odd", "transpose_flat_grid_full"]:
        assert strategies(name) == [Tile2D], name


def test_tile_2d_not_taken() -> None:
    for name in ["pointwise_1d_fp16", "gather_rows"]:
        assert Tile2D not in strategies(name), name


def test_tile_2d_needs_2d_tiles() -> None:
    graph, launch = launches("apbt_small")[0]
    assert tile_2d.applies(graph, launch, CodegenOptions(tile_2d=False)) is None
    assert strategies("apbt_small", CodegenOptions(tile_2d=False)) != [Tile2D]


def _interleave(
    width: int, n: int = 16, c: int = 64, h: int = 64, w: int = 64, dtype: str = "float32"
) -> str:
    """`width` channel planes interleaved into an image's last dimension (a pixel shuffle's rows,
    a transpose to a narrow last dimension): out[n, c, h, width*w + j] = x[n, width*c + j, h, w]."""
    plane = h * w
    return f"""
format: fuseopt-graph/1
name: interleave
buffers:
  x: {{shape: [{n}, {c * width}, {h}, {w}], dtype: {dtype}, role: input}}
  out: {{shape: [{n}, {c}, {h}, {w * width}], dtype: {dtype}, role: output}}
nodes:
  - name: n0
    loops: [[n, {n}], [c, {c}], [h, {h}], [w, {w}], [j, {width}]]
    store: "out[{c * plane * width}*n + {plane * width}*c + {w * width}*h + {width}*w + j]"
    value: "x[{c * plane * width}*n + {plane * width}*c + {plane}*j + {w}*h + w]"
"""


@pytest.mark.parametrize("width", [2, 4, 8, 16])
def test_a_narrow_tile_keeps_its_points(width: int) -> None:
    """Rows of `width` points take more of them: the tile keeps the points of a full one
    (transpose_yblock x transpose_xblock), so that its programs are not too small and too many
    (H100, a bfloat16 pixel shuffle: 64 x 2 tiles 83.0 us, 4096 x 2 26.3)."""
    t = CodegenOptions().tuning
    (tiling,) = tilings_of(*_planned(_interleave(width)))
    assert isinstance(tiling.strategy, Tile2D)
    assert tiling.config.block("XBLOCK") == width
    assert tiling.config.block("YBLOCK") * width == t.transpose_yblock * t.transpose_xblock
    assert tiling.config.num_warps == t.pointwise_max_warps


def test_a_narrow_tile_of_a_small_launch_keeps_the_multiprocessors_busy() -> None:
    """A smaller launch grows its rows only while it keeps pointwise_warps_per_multiprocessor
    warps a multiprocessor: rows of 2 points of a 2 x 128 x 64 x 64 image grow to the most rows
    that do, not to a full tile's points; a tiny one keeps transpose_yblock rows."""
    o = CodegenOptions()
    t, fill = o.tuning, o.gpu.multiprocessors * o.tuning.pointwise_warps_per_multiprocessor
    (tiling,) = tilings_of(*_planned(_interleave(2, n=2)))
    yb, warps = tiling.config.block("YBLOCK"), tiling.config.num_warps
    assert t.transpose_yblock < yb < t.transpose_yblock * t.transpose_xblock // 2
    assert (2 * 64 * 64 * 64 // yb) * warps >= fill
    wider = max(1, min(t.pointwise_max_warps, 2 * yb * 2 // t.transpose_points_per_warp))
    assert (2 * 64 * 64 * 64 // (2 * yb)) * wider < fill  # twice the rows would not
    (tiny,) = tilings_of(*_planned(_interleave(2, n=1, c=4)))
    assert tiny.config.block("YBLOCK") == t.transpose_yblock


@pytest.mark.parametrize("width, dtype", [(2, "bfloat16"), (3, "float32"), (4, "float16")])
def test_a_narrow_tile_matches_the_reference(width: int, dtype: str) -> None:
    """A narrow 2D tile grown to more rows than transpose_yblock (on a target that asks no warps
    of a multiprocessor, so a small launch grows too), masked where the rows do not divide, run
    against the reference under the current backend."""
    tuning = dataclasses.replace(DEFAULT.tuning, pointwise_warps_per_multiprocessor=0)
    opts = CodegenOptions(target=dataclasses.replace(DEFAULT, tuning=tuning), strategy="tile_2d")
    graph, plan = _planned(_interleave(width, n=2, c=3, h=5, w=7, dtype=dtype))
    (tiling,) = tilings_of(graph, plan, opts)
    assert tiling.config.block("YBLOCK") > opts.tuning.transpose_yblock and "y" in tiling.masked
    check(graph, plan, opts)


def _planned(text: str) -> tuple[Graph, Plan]:
    stage = optimize(load_text(text, "g.yaml"))
    return stage.graph, stage.plan
