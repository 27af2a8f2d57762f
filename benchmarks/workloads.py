"""docs/inductor.md's benchmark workloads as fuseopt graphs, at any size, with their torch programs.

Each workload is a graph in the form Inductor's scheduler sees before fusion (loop orders picked
from the inputs' layouts, reductions decomposed as Inductor lowers them) and the torch program
that computes the same outputs from the graph's input views -- for eager and torch.compile runs.

    WORKLOADS[name](**sizes) -> (graph document, program)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Program = Callable[[Mapping[str, Any]], dict[str, Any]]
Doc = dict[str, Any]


def _doc(name: str, buffers: dict[str, Any], nodes: list[dict[str, Any]], description: str) -> Doc:
    return {
        "format": "fuseopt-graph/1",
        "name": name,
        "description": description,
        "buffers": buffers,
        "nodes": nodes,
    }


def apbt(rows: int = 4096, cols: int = 8192) -> tuple[Doc, Program]:
    r, c = rows, cols
    doc = _doc(
        "apbt",
        {
            "x": {"shape": [r, c], "dtype": "float32", "role": "input"},
            "y": {"shape": [r, c], "stride": [1, r], "dtype": "float32", "role": "input"},
            "buf0": {"shape": [r, c], "dtype": "float32"},
            "buf1": {"shape": [r, c], "stride": [1, r], "dtype": "float32"},
            "out": {"shape": [r, c], "dtype": "float32", "role": "output"},
        },
        [
            {
                "name": "n0",
                "loops": [["i0", r], ["i1", c]],
                "store": f"buf0[{c}*i0 + i1]",
                "value": f"2 * x[{c}*i0 + i1]",
            },
            {
                "name": "n1",
                "loops": [["i0", c], ["i1", r]],
                "store": f"buf1[i1 + {r}*i0]",
                "value": f"3 * y[i1 + {r}*i0]",
            },
            {
                "name": "n2",
                "loops": [["i0", r], ["i1", c]],
                "store": f"out[{c}*i0 + i1]",
                "value": f"buf0[{c}*i0 + i1] + buf1[i0 + {r}*i1]",
            },
        ],
        f"realize(x*2) + realize(y*3), x ({r},{c}), y = randn({c},{r}).t()",
    )
    return doc, lambda v: {"out": v["x"] * 2 + v["y"] * 3}


def tsum(rows: int = 4096, cols: int = 8192) -> tuple[Doc, Program]:
    r, c = rows, cols
    doc = _doc(
        "tsum",
        {
            "x": {"shape": [r, c], "dtype": "float32", "role": "input"},
            "y": {"shape": [r, c], "stride": [1, r], "dtype": "float32", "role": "input"},
            "out": {"shape": [r], "dtype": "float32", "role": "output"},
        },
        [
            {
                "name": "n0",
                "loops": [["i0", r]],
                "reduce": [["r0", c]],
                "store": "out[i0]",
                "value": f"sum(x[{c}*i0 + r0] * 2 + y[i0 + {r}*r0])",
            }
        ],
        f"(x*2 + y.t()).sum(-1), x ({r},{c}), y = randn({c},{r})",
    )
    return doc, lambda v: {"out": (v["x"] * 2 + v["y"]).sum(-1)}


def layernorm_t(rows: int = 32768, cols: int = 1024) -> tuple[Doc, Program]:
    r, c = rows, cols
    xi = f"x[x0 + {r}*r0]"
    doc = _doc(
        "layernorm_t",
        {
            "x": {"shape": [r, c], "stride": [1, r], "dtype": "float32", "role": "input"},
            "w": {"shape": [c], "dtype": "float32", "role": "input"},
            "b": {"shape": [c], "dtype": "float32", "role": "input"},
            "buf0": {"shape": [r], "dtype": "float32"},
            "buf1": {"shape": [r], "dtype": "float32"},
            "out": {"shape": [r, c], "dtype": "float32", "role": "output"},
        },
        [
            {
                "name": "n0",
                "loops": [["x0", r]],
                "reduce": [["r0", c]],
                "store": "buf0[x0]",
                "value": f"sum({xi})",
            },
            {
                "name": "n1",
                "loops": [["x0", r]],
                "reduce": [["r0", c]],
                "store": "buf1[x0]",
                "value": f"sum(({xi} - buf0[x0] / {c}) * ({xi} - buf0[x0] / {c}))",
            },
            {
                "name": "n2",
                "loops": [["x0", r], ["x1", c]],
                "store": f"out[{c}*x0 + x1]",
                "value": f"(x[x0 + {r}*x1] - buf0[x0] / {c}) * rsqrt(buf1[x0] / {c} + 1e-5) * w[x1] + b[x1]",
            },
        ],
        f"layer_norm(xt.t()), xt ({c},{r})",
    )

    def program(v: Mapping[str, Any]) -> dict[str, Any]:
        import torch.nn.functional as F

        x = v["x"]
        return {"out": F.layer_norm(x, (x.shape[-1],), v["w"], v["b"], eps=1e-5)}

    return doc, program


def softmax_bias_t(rows: int = 32768, cols: int = 1024) -> tuple[Doc, Program]:
    r, c = rows, cols
    xi = f"x[x0 + {r}*r0] + bias[r0]"
    doc = _doc(
        "softmax_bias_t",
        {
            "x": {"shape": [r, c], "stride": [1, r], "dtype": "float32", "role": "input"},
            "bias": {"shape": [c], "dtype": "float32", "role": "input"},
            "buf0": {"shape": [r], "dtype": "float32"},
            "buf1": {"shape": [r], "dtype": "float32"},
            "out": {"shape": [r, c], "dtype": "float32", "role": "output"},
        },
        [
            {
                "name": "n0",
                "loops": [["x0", r]],
                "reduce": [["r0", c]],
                "store": "buf0[x0]",
                "value": f"max({xi})",
            },
            {
                "name": "n1",
                "loops": [["x0", r]],
                "reduce": [["r0", c]],
                "store": "buf1[x0]",
                "value": f"sum(exp({xi} - buf0[x0]))",
            },
            {
                "name": "n2",
                "loops": [["x0", r], ["x1", c]],
                "store": f"out[{c}*x0 + x1]",
                "value": f"exp(x[x0 + {r}*x1] + bias[x1] - buf0[x0]) / buf1[x0]",
            },
        ],
        f"softmax(xt.t() + bias), xt ({c},{r})",
    )

    def program(v: Mapping[str, Any]) -> dict[str, Any]:
        import torch

        return {"out": torch.softmax(v["x"] + v["bias"], dim=-1)}

    return doc, program


def three_layouts_mean(rows: int = 4096, cols: int = 8192, pad: int = 64) -> tuple[Doc, Program]:
    r, c = rows, cols
    doc = _doc(
        "three_layouts_mean",
        {
            "a": {"shape": [r, c], "dtype": "float32", "role": "input"},
            "b": {"shape": [r, c], "stride": [1, r], "dtype": "float32", "role": "input"},
            "c": {"shape": [r, c], "stride": [c + pad, 1], "offset": 3, "dtype": "float32", "role": "input"},
            "s": {"shape": [r, c], "dtype": "float32", "role": "output"},
            "buf1": {"shape": [c], "dtype": "float32"},
            "mean": {"shape": [c], "dtype": "float32", "role": "output"},
        },
        [
            {
                "name": "n0",
                "loops": [["x0", r], ["x1", c]],
                "store": f"s[{c}*x0 + x1]",
                "value": f"sigmoid(a[{c}*x0 + x1]) * b[x0 + {r}*x1] + c[3 + {c + pad}*x0 + x1]",
            },
            {
                "name": "n1",
                "loops": [["x0", c]],
                "reduce": [["r0", r]],
                "store": "buf1[x0]",
                "value": f"sum(s[x0 + {c}*r0])",
            },
            {"name": "n2", "loops": [["x0", c]], "store": "mean[x0]", "value": f"buf1[x0] / {r}"},
        ],
        f"s = sigmoid(a)*b.t() + c; (s, s.mean(0)), ({r},{c}); c a padded slice",
    )

    def program(v: Mapping[str, Any]) -> dict[str, Any]:
        import torch

        s = torch.sigmoid(v["a"]) * v["b"] + v["c"]
        return {"s": s, "mean": s.mean(0)}

    return doc, program


def avgpool_cl(n: int = 128, c: int = 192, h: int = 35, w: int = 35) -> tuple[Doc, Program]:
    sn, sh, sw = h * w * c, w * c, c
    shape = [n, c, h, w]
    stride = [sn, 1, sh, sw]
    doc = _doc(
        "avgpool_cl",
        {
            "x": {"shape": shape, "stride": stride, "dtype": "bfloat16", "role": "input"},
            "buf0": {"shape": shape, "stride": stride, "dtype": "bfloat16"},
            "out": {"shape": shape, "stride": stride, "dtype": "bfloat16", "role": "output"},
        },
        [
            {
                "name": "n0",
                "loops": [["x3", n], ["x2", c], ["x7", h], ["x8", w]],
                "reduce": [["r0", 3], ["r1", 3]],
                "store": f"buf0[x2 + {sw}*x8 + {sh}*x7 + {sn}*x3]",
                "value": (
                    f"sum(masked((x7 + r0 >= 1) & (x7 + r0 <= {h}) & (x8 + r1 >= 1) & (x8 + r1 <= {w}), "
                    f"x[x2 + {sw}*x8 + {sw}*r1 + {sh}*x7 + {sh}*r0 + {sn}*x3 - {sh + sw}], 0.0))"
                ),
            },
            {
                "name": "n1",
                "loops": [["x0", n * c * h * w]],
                "store": "out[x0]",
                "value": "relu(buf0[x0] / 9)",
            },
        ],
        f"relu(avg_pool2d(x, 3, 1, 1)), x ({n},{c},{h},{w}) bf16 channels-last, decomposed as Inductor lowers it",
    )

    def program(v: Mapping[str, Any]) -> dict[str, Any]:
        import torch
        import torch.nn.functional as F

        return {"out": torch.relu(F.avg_pool2d(v["x"], 3, stride=1, padding=1))}

    return doc, program


WORKLOADS: dict[str, Callable[..., tuple[Doc, Program]]] = {
    "apbt": apbt,
    "tsum": tsum,
    "avgpool_cl": avgpool_cl,
    "layernorm_t": layernorm_t,
    "softmax_bias_t": softmax_bias_t,
    "three_layouts_mean": three_layouts_mean,
}

# docs/inductor.md's sizes (apbt also at 4096x8192 per the bench issue), and small ones for CPU tests.
FULL: dict[str, dict[str, int]] = {
    "apbt": {"rows": 4096, "cols": 8192},
    "tsum": {"rows": 4096, "cols": 8192},
    "avgpool_cl": {"n": 128, "c": 192, "h": 35, "w": 35},
    "layernorm_t": {"rows": 32768, "cols": 1024},
    "softmax_bias_t": {"rows": 32768, "cols": 1024},
    "three_layouts_mean": {"rows": 4096, "cols": 8192},
}
SMALL: dict[str, dict[str, int]] = {
    "apbt": {"rows": 16, "cols": 32},
    "tsum": {"rows": 16, "cols": 32},
    "avgpool_cl": {"n": 2, "c": 8, "h": 5, "w": 5},
    "layernorm_t": {"rows": 32, "cols": 64},
    "softmax_bias_t": {"rows": 32, "cols": 64},
    "three_layouts_mean": {"rows": 16, "cols": 32, "pad": 8},
}
