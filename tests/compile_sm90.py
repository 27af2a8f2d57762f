"""Compile every Triton kernel of generated modules for an NVIDIA sm_90 GPU (an H100/H200), on a
machine without one: `python tests/compile_sm90.py MODULE.py...` (triton's own ptxas).

The interpreter (`TRITON_INTERPRET=1`) runs kernels without compiling them, so a kernel that
Triton's compiler rejects (a libdevice call on a dtype it lacks, a shape a reduction cannot take)
passes every CPU test. This compiles each launch of `call` as `call` makes it: the pointer dtypes
from the buffers `call` allocates, the sizes, the blocks and warps (an autotuned kernel: its
first candidate). Run as a script, not imported by the tests: TRITON_INTERPRET must be unset before
triton loads. Exit 1 if any kernel fails, naming it. With `--stack`, each compiled launch also
prints `STACK <bytes a thread> <kernel>` (cuobjdump's resource usage: spilled registers live there);
with `--loads`, `LOADS <bits> <kernel>`, its widest global load in the PTX (vectorized or not).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

os.environ.pop("TRITON_INTERPRET", None)
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

POINTER = {
    "float32": "*fp32",
    "float16": "*fp16",
    "bfloat16": "*bf16",
    "float64": "*fp64",
    "int8": "*i8",
    "int16": "*i16",
    "int32": "*i32",
    "int64": "*i64",
    "uint8": "*u8",
    "bool": "*i1",
}
TARGET = GPUTarget("cuda", 90, 32)


def _buffer_dtypes(call: ast.FunctionDef) -> dict[str, str]:
    """Each local of `call` that holds a storage -> its dtype (`_input`, `_empty`, `torch.empty`,
    and a library call's results bound by `_take_results`: the dtype of each used output's spec)."""
    out: dict[str, str] = {}
    for node in ast.walk(call):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        target, f = node.targets[0], node.value
        name = ast.unparse(f.func)
        if name == "_take_results" and isinstance(target, ast.Tuple) and isinstance(f.args[1], ast.List):
            specs = [s for s in f.args[1].elts if isinstance(s, ast.Tuple)]
            for t, spec in zip(target.elts, specs, strict=True):
                assert isinstance(t, ast.Name)
                out[t.id] = ast.unparse(spec.elts[4])
            continue
        if not isinstance(target, ast.Name):
            continue
        if name == "_input":
            out[target.id] = ast.unparse(f.args[3])
        elif name == "_empty":
            out[target.id] = ast.unparse(f.args[1])
        elif name == "torch.empty":
            out[target.id] = next(ast.unparse(k.value) for k in f.keywords if k.arg == "dtype")
    return {k: v.removeprefix("torch.") for k, v in out.items()}


def compile_module(path: str) -> int:
    """Compile every distinct launch of the module's kernels; the number compiled."""
    spec = importlib.util.spec_from_file_location("generated", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    call = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "call")
    dtypes = _buffer_dtypes(call)
    done: set[tuple[object, ...]] = set()
    for node in ast.walk(call):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
        ):
            continue
        kernel = getattr(module, node.func.value.id)
        fn = kernel.fn if isinstance(kernel, triton.runtime.Autotuner) else kernel
        signature: dict[str, str] = {}
        constants: dict[str, object] = {}
        options: dict[str, int] = {}
        attrs: dict[tuple[int, ...], list[list[object]]] = {}
        for i, (param, arg) in enumerate(zip(fn.arg_names, node.args, strict=False)):
            # as Triton specializes a launch: torch's storages start 16-byte aligned, and an
            # integer argument is known to be a multiple of 16 when it is one, nothing else
            if isinstance(arg, ast.Name):
                signature[param] = POINTER[dtypes[arg.id]]
                attrs[(i,)] = [["tt.divisibility", 16]]
            else:
                value = ast.literal_eval(arg)
                signature[param] = "i64" if abs(value) >= 2**31 else "i32"
                if value % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        for k in node.keywords:
            if k.arg in ("num_warps", "num_ctas"):
                options[k.arg] = ast.literal_eval(k.value)
            elif k.arg == "PDL":
                constants["PDL"] = True  # the dependent launch's branch, compiled as on an sm_90
            elif k.arg is not None and k.arg != "launch_pdl":
                constants[k.arg] = ast.literal_eval(k.value)
        if isinstance(kernel, triton.runtime.Autotuner):
            first = kernel.configs[0]
            constants.update(first.kwargs)
            options = {"num_warps": first.num_warps, "num_ctas": first.num_ctas}
        for name in constants:
            signature[name] = "constexpr"
        key = (node.func.value.id, tuple(sorted(constants.items())), tuple(sorted(options.items())))
        if key in done:
            continue
        done.add(key)
        try:
            source = ASTSource(fn, signature, constants, attrs)
            compiled = triton.compile(source, target=TARGET, options=options)
            if STACK:
                print(f"STACK {_stack_bytes(compiled.asm['cubin'])} {node.func.value.id}", flush=True)
            if PTX:
                print(f"LOADS {_load_bits(compiled.asm['ptx'])} {node.func.value.id}", flush=True)
        except Exception as exc:
            raise RuntimeError(f"{path}: {node.func.value.id} {constants} {options}: {exc}") from exc
    return len(done)


STACK = False  # --stack
PTX = False  # --loads


def _load_bits(ptx: str) -> int:
    """The widest global load of a kernel, bits: `ld.global.v2.b32` 64, `ld.global.b16` 16."""
    widest = 0
    for vec, bits in re.findall(r"ld\.global[\w.:]*?(?:\.v(\d))?\.b(\d+)\b", ptx):
        widest = max(widest, int(vec or 1) * int(bits))
    return widest


def _stack_bytes(cubin: bytes) -> int:
    """A kernel's stack a thread (its spilled registers), as cuobjdump reports it."""
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        usage = subprocess.run(
            [tool, "--dump-resource-usage", path], capture_output=True, text=True, check=True
        )
    found = re.search(r"STACK:(\d+)", usage.stdout)
    assert found, usage.stdout
    return int(found.group(1))


def main(paths: list[str]) -> int:
    failed = 0
    for path in paths:
        try:
            print(f"{path}: {compile_module(path)} launches compiled for sm_90", flush=True)
        except Exception as exc:  # every module is tried; each failure is named
            failed += 1
            print(f"FAILED {exc}"[:2000], flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    STACK, PTX = "--stack" in args, "--loads" in args
    sys.exit(main([a for a in args if a not in ("--stack", "--loads")]))
