"""Round 38 of benchmarks/explore_gpu.py: register-window shapes as fuseopt generates them
(avgpool_cl, captured graph; T rows x S columns of 64 channels, one warp), now that a period's
last band of rows and a row's last chunk of columns may overlap the one before (so neither needs
to divide the image's 35). 5 x 5 is the generated shape. Note: round 34's labels are columns x
rows (its "7x3", 75.6% twice, is 3 rows x 7 columns). Each module is checked against the
reference interpreter first; all are timed three times, alternating (DIAG rows). The shapes are
pinned with `CodegenOptions(window_shape=...)`; the runs below used the code before cells took
their columns and rows from the program's ids (round 39).

Results (% of copy, three timings each):
- `-round38.json` (copy 4250 GB/s): 5 x 5 71.6-71.7; 3 x 7 (bands overlapping) 70.0-70.3; 3 x 5
  70.3-71.2; 2 x 7 65.7-65.9; 4 x 5 71.6-74.1; 5 x 7 69.0-70.4; 7 x 3 (chunks overlapping) 65.5.
- `-round38-rows.json` (ROUND38=rows, copy 4249 GB/s): 5 x 5 70.2-71.4; 4 x 5 70.9-72.8; 4 x 6
  70.8-72.4; 4 x 7 70.0-70.9; 4 x 4 71.3-71.8; 5 x 4 (chunks overlapping) 65.9-67.1; 6 x 5
  70.6-71.8.
No shape beats 5 x 5 beyond the spread; overlapping chunks lose 4-6 points where they are the
only overlap, so fuseopt overlaps bands only (unless a shape is pinned)."""

import os

from benchmarks.explore.harness import DRY
from benchmarks.explore.round36 import pool_stages
from benchmarks.explore.round37 import alternating
from fuseopt.codegen import emit_module
from fuseopt.codegen.tiling import CodegenOptions
from fuseopt.runtime.compare import compare_with_reference
from fuseopt.runtime.module import load_module

SHAPES = {  # rows x columns of cells; ROUND38=rows picks the second set
    "": [(5, 5), (3, 7), (3, 5), (2, 7), (4, 5), (5, 7), (7, 3)],
    "rows": [(5, 5), (4, 5), (4, 6), (4, 7), (4, 4), (5, 4), (6, 5)],
}


def _label(rows: int, cols: int) -> str:
    over = [w for w, n, k in (("bands", 35, rows), ("chunks", 35, cols)) if n % k]
    return f"{rows} x {cols}" + (", overlapping " + " and ".join(over) if over else "")


def _avgpool(st, sz):
    mods = {}
    for gname, stage, inputs in pool_stages(st):
        if gname != "captured":
            continue
        for rows, cols in SHAPES[os.environ.get("ROUND38", "")]:
            label = _label(rows, cols)
            options = CodegenOptions(window_shape=(rows, cols))
            if DRY:  # 5 x 5 images of 8 channels: rows of 40 points, 8-point slices
                options = CodegenOptions(
                    window_min_row=2, window_slice=8, window_shape=(min(rows, 5), min(cols, 5))
                )
            src = emit_module(stage.graph, stage.plan, options=options)
            assert "register window" in src, label
            compare_with_reference(stage.graph, stage.plan, source=src)
            mods[label] = (load_module(src), inputs)
    return alternating(mods, 3), lambda: {}


VARIANTS = {"avgpool_cl": _avgpool}
