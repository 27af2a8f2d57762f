"""SASS of fuseopt's register window (avgpool_cl, captured graph; 5 x 5 and 4 x 5 cells) next to
round 34's hand-written register windows (5 rows x 5 columns and 3 rows x 7 columns, rows
unrolled), which ran 2-5 points of copy faster in rounds 34-38: each compiled into a private
Triton cache and disassembled with cuobjdump (the 5 x 5 listings written to $OUT), an opcode
histogram printed with the do_bench median (GPU only).

Result (2026-11-30, before round 39's change; one run, not kept as a file): fuseopt 5 x 5 984
instructions (58 ISETP), 0.0398-0.0406 ms; 4 x 5 824 (47 ISETP), 0.0390-0.0398; hand 5 x 5 960
(10 ISETP), 0.0392-0.0393; hand 3 x 7 824 (10 ISETP), 0.0381. The generated kernel recomputed a
bounds predicate for every cell: its column was `xoffset // 192`, whose range the compiler does
not know, where the hand kernel's `pid * 5 + k < 35` folds to one compare of the program id.
fuseopt now computes a cell's column and row from the program's ids (round 39)."""

import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.getcwd())
OUT = os.environ.get("OUT", "/tmp/sass")
CACHE = tempfile.mkdtemp()
os.environ["TRITON_CACHE_DIR"] = CACHE

import torch  # noqa: E402
import triton  # noqa: E402

from benchmarks.explore.round34 import _exact, _kernel  # noqa: E402
from benchmarks.programs import captured  # noqa: E402
from fuseopt.codegen import emit_module  # noqa: E402
from fuseopt.codegen.tiling import CodegenOptions  # noqa: E402
from fuseopt.interp import make_inputs  # noqa: E402
from fuseopt.passes.pipeline import optimize  # noqa: E402
from fuseopt.runtime.compare import compare_with_reference  # noqa: E402
from fuseopt.runtime.module import load_module  # noqa: E402

N, C, H, W = 128, 192, 35, 35


def cubins() -> set[str]:
    return set(glob.glob(f"{CACHE}/**/*.cubin", recursive=True))


def histogram(label: str, cubs: list[str], keep: bool) -> None:
    for cub in cubs:
        text = subprocess.run(["cuobjdump", "-sass", cub], capture_output=True, text=True).stdout
        if keep:
            with open(os.path.join(OUT, re.sub(r"[^A-Za-z0-9_.-]+", "_", label) + ".sass"), "w") as f:
                f.write(text)
        ops = collections.Counter(
            re.sub(r"\..*", "", m.group(1))
            for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9.]+)", text)
        )
        print(f"{label}: {sum(ops.values())} instructions: {dict(ops.most_common())}", flush=True)


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    g, _ = captured("avgpool_cl")
    st = optimize(g)
    inputs = {k: v.cuda() for k, v in make_inputs(g, seed=0).items()}
    x = inputs["x"]
    out = torch.empty_like(x)
    want = _exact(inputs, N, C, H, W)
    calls = {}
    new = {}
    for shape in ((5, 5), (4, 5)):
        src = emit_module(st.graph, st.plan, options=CodegenOptions(window_shape=shape))
        label = f"fuseopt {shape[0]} x {shape[1]}"
        before = cubins()
        compare_with_reference(st.graph, st.plan, source=src)  # compiles it
        new[label] = sorted(cubins() - before)
        mod = load_module(src)
        calls[label] = lambda mod=mod: mod.call(inputs)
    for rows, cols in ((5, 5), (3, 7)):
        kern = _kernel(cols, "static")
        grid = (C // 64, -(-W // cols), N * -(-H // rows))
        launch = lambda kern=kern, grid=grid, rows=rows: kern[grid](x, out, C, H, W, 64, rows, 1, num_warps=1)  # noqa: E731
        out.fill_(float("nan"))
        before = cubins()
        launch()
        torch.cuda.synchronize()
        assert torch.equal(out.view(torch.int16), want.view(torch.int16)), (rows, cols)
        new[f"hand {rows} x {cols}"] = sorted(cubins() - before)
        calls[f"hand {rows} x {cols}"] = launch
    for rep in (1, 2):
        for label, call in calls.items():
            ms = triton.testing.do_bench(call, warmup=10, rep=100, return_mode="median")
            print(f"{label} ({rep}): {ms:.4f} ms", flush=True)
    for label, cubs in new.items():
        histogram(label, cubs, keep=label.endswith("5 x 5"))


if __name__ == "__main__":
    main()
