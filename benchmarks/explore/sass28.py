"""SASS of fuseopt's captured avgpool_cl kernel and of two edits of it: compiled into a private
Triton cache, disassembled with cuobjdump (the emitted kernel's listing written to $OUT), an
opcode histogram of each printed, each timed with do_bench (median). The edits: relu as one
NaN-propagating maximum (round 26; checked against the reference interpreter first), and relu
dropped (DIAG: not the workload, unchecked), to see whether the window's time follows its
instruction count."""

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

from benchmarks.programs import captured  # noqa: E402
from fuseopt.codegen import emit_module  # noqa: E402
from fuseopt.interp import make_inputs  # noqa: E402
from fuseopt.passes.pipeline import optimize  # noqa: E402
from fuseopt.runtime.compare import compare_with_reference  # noqa: E402
from fuseopt.runtime.module import load_module  # noqa: E402

RELU = "    return tl.where(x < 0, tl.zeros_like(x), x)\n"
EDITS = {
    "relu as maximum": "    return tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)\n",
    "DIAG relu dropped": "    return x\n",
}


def sass(src: str, label: str, inputs, keep: bool = False) -> None:
    before = set(glob.glob(f"{CACHE}/**/*.cubin", recursive=True))
    m = load_module(src)
    m.call(inputs)
    torch.cuda.synchronize()
    ms = triton.testing.do_bench(lambda: m.call(inputs), warmup=10, rep=100, return_mode="median")
    new = sorted(set(glob.glob(f"{CACHE}/**/*.cubin", recursive=True)) - before)
    if not new:
        print(f"{label}: {ms:.4f} ms", flush=True)
    for cub in new:
        text = subprocess.run(["cuobjdump", "-sass", cub], capture_output=True, text=True).stdout
        name = os.path.basename(cub)
        if keep:
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{label}-{name}")
            with open(os.path.join(OUT, f"{safe}.sass"), "w") as f:
                f.write(text)
        ops = collections.Counter(
            re.sub(r"\..*", "", m.group(1))
            for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9.]+)", text)
        )
        print(
            f"{label}: {ms:.4f} ms; {sum(ops.values())} instructions: {dict(ops.most_common())}", flush=True
        )


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    g, _ = captured("avgpool_cl")
    st = optimize(g)
    src = emit_module(st.graph, st.plan)
    inputs = {k: v.cuda() for k, v in make_inputs(g, seed=0).items()}
    assert src.count(RELU) == 1
    for rep in (1, 2):
        sass(src, f"emitted ({rep})", inputs, keep=rep == 1)
        for label, body in EDITS.items():
            new = src.replace(RELU, body)
            if rep == 1 and not label.startswith("DIAG"):
                compare_with_reference(st.graph, st.plan, source=new)
            sass(new, f"{label} ({rep})", inputs)


if __name__ == "__main__":
    main()
