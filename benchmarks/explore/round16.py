# ruff: noqa: B023, SIM115
"""Round 16 of benchmarks/explore_gpu.py: fuseopt's module emitted with --autotune (split reductions' partial kernels now autotuned too) next to its fixed launch, every workload; the configs autotuning picked (BEST_CONFIG lines of the log)."""

import json

from benchmarks.explore.harness import DRY
from benchmarks.workloads import WORKLOADS
from fuseopt.codegen import emit_module
from fuseopt.io.load import load_text
from fuseopt.passes.pipeline import optimize
from fuseopt.runtime.module import load_module


def _autotuned(name):
    def variants(st, sz):
        doc, _ = WORKLOADS[name](**sz)
        stage = optimize(load_text(json.dumps(doc), f"{name}.json"))
        last = {}
        if DRY:  # the interpreter cannot time configs: the module is only built
            emit_module(stage.graph, stage.plan, autotune=True)
            return {}, lambda: last
        mod = load_module(emit_module(stage.graph, stage.plan, autotune=True))

        def call():
            last.update(mod.call(st))
            if not last.get("_printed"):
                for kname, k in sorted(vars(mod).items()):
                    if getattr(k, "best_config", None) is not None:
                        print(f"BEST_CONFIG {name} {kname}: {k.best_config}", flush=True)
            last["_printed"] = True

        return {"fuseopt --autotune": call}, lambda: {k: v for k, v in last.items() if k != "_printed"}

    return variants


VARIANTS = {name: _autotuned(name) for name in WORKLOADS}
