"""What real models contain, captured (issue #22 part 2): indirect indexing, Welford with keepdim,
every extern as an extension-1.1 library call on views, nn.Modules, and failures that lead with
their cause.

Each program is captured once per module (torch.compile is slow) and checked: the graph validates
and round-trips, the reference interpreter's outputs equal eager torch, and meta.inductor holds
Inductor's kernel count. The index arithmetic that expresses Inductor's indirect-index semantics
is checked exhaustively on its own (hypothesis).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree
from hypothesis import given, settings
from hypothesis import strategies as st

from fuseopt.capture import Capture, CaptureError, capture_program
from fuseopt.capture.indirect import IndexCompiler, fit_floor, less_than, wrapped
from fuseopt.capture.origins import origin_of, sanitized
from fuseopt.interp import run_graph
from fuseopt.io.load import load_text
from fuseopt.ir.dtypes import DType
from fuseopt.ir.expr import Binary, Cast, Const, Expr, Load, Masked, Unary, Var, Where, to_text, walk
from fuseopt.ir.graph import ComputeNode, LibraryNode
from fuseopt.ir.serialize import dump_json

_GEN = torch.Generator().manual_seed(0)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_GEN)


def _ints(high: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=_GEN)


Program = tuple[Callable[..., Any], tuple[Any, ...]]
PROGRAMS: dict[str, Program] = {}


def program(name: str, *args: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS[name] = (fn, args)
        return fn

    return register


# -- the programs -------------------------------------------------------------------------------
@program("lookups", _ints(10, 2, 5), _randn(10, 8), _randn(4, 6), _ints(6, 4, 3), _ints(4, 3, 6),
         torch.tensor([5, 0, 2]), torch.tensor([-1, 0, 2, -4]))  # fmt: skip
def lookups(ids: Any, w: Any, x: Any, i1: Any, i0: Any, sel: Any, neg: Any) -> Any:
    """Embedding, gather along the inner and the outer dim, index_select, negative indices."""
    return (
        F.embedding(ids, w) * 2,
        torch.gather(x, 1, i1),
        torch.gather(x, 0, i0),
        torch.index_select(x, 1, sel) + 1,
        x[neg],
    )


@program("upsample", _randn(1, 2, 3, 4))
def upsample(x: Any) -> Any:
    """Nearest upsampling: 2x, non-integer sizes, and nearest-exact's half-pixel offset."""
    return (
        F.interpolate(x, scale_factor=2, mode="nearest"),
        F.interpolate(x, size=(5, 7), mode="nearest"),
        F.interpolate(x, size=(7, 9), mode="nearest-exact"),
    )


@program("cross_entropy", _randn(6, 10), torch.tensor([1, -100, 3, 9, 0, -100]))
def cross_entropy(logits: Any, target: Any) -> Any:
    return F.cross_entropy(logits, target), F.nll_loss(F.log_softmax(logits, -1), target, reduction="none")


@program("relative_buckets", _randn(16, 4))
def relative_buckets(emb: Any) -> Any:
    """T5's bidirectional relative-position buckets (a log of |i - j|, a where, a min), looked up."""
    ctx = torch.arange(8)[:, None]
    rp = torch.arange(8)[None, :] - ctx
    buckets = (rp > 0).long() * 8
    rp = rp.abs()
    large = 4 + (torch.log(rp.float() / 4) / math.log(16 / 4) * 4).long()
    buckets = buckets + torch.where(rp < 4, rp, torch.min(large, torch.full_like(large, 7)))
    return F.embedding(buckets, emb)


@program("shifted_lookups", _ints(9, 2, 6), _randn(9, 4))
def shifted_lookups(ids: Any, w: Any) -> Any:
    """Indices built by slicing and padding, looked up: BART's decoder inputs (shifted right, a
    start token, -100 replaced) and a shift left padded at the end. An index read under a mask
    whose loads would leave the storage where the mask fails (the first and the last position)."""
    right = ids.new_zeros(ids.shape)
    right[:, 1:] = ids[:, :-1].clone()
    right[:, 0] = 2
    right.masked_fill_(right == -100, 1)
    left = F.pad(ids[:, 1:], (0, 1), value=0)
    return F.embedding(right, w) * 2, F.embedding(left, w) + 1


@program("log_buckets", _randn(8, 3))
def log_buckets(emb: Any) -> Any:
    """DeBERTa-v2's log-spaced relative positions (sign, abs and a log of d = i - j, written as
    -j + i and as i - j), shifted and clamped, looked up."""
    rel = torch.arange(6)[:, None] - torch.arange(6)[None, :]
    sign, mid = torch.sign(rel), 2
    near = (rel < mid) & (rel > -mid)
    abs_pos = torch.where(near, torch.tensor(mid - 1).type_as(rel), torch.abs(rel))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / math.log(7 / mid) * (mid - 1)) + mid
    bucket = torch.where(abs_pos <= mid, rel.type_as(log_pos), log_pos * sign).long()
    return F.embedding(torch.clamp(bucket + 4, 0, 7), emb)


@program("window_index", _randn(28, 2))
def window_index(table: Any) -> Any:
    """BEiT's relative position index of a 3 x 3 window with a class token (writes to the first
    row and column, then a lookup): a chain of wheres nested in each other's else branch."""
    coords = torch.stack(torch.meshgrid(torch.arange(3), torch.arange(3), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += 2
    rel[:, :, 1] += 2
    rel[:, :, 0] *= 5
    index = torch.zeros((10, 10), dtype=rel.dtype)
    index[1:, 1:] = rel.sum(-1)
    index[0, 0:] = 25
    index[0:, 0] = 26
    index[0, 0] = 27
    return table[index.view(-1)].view(10, 10, 2).permute(2, 0, 1) * 2


@program("cat_into_call", _randn(4, 3), _randn(4, 5), _randn(8, 6))
def cat_into_call(a: Any, b: Any, w: Any) -> Any:
    """A concatenation of two products read by another product (and by a reduction): the call
    reads it whole, so it is copied from its slices into a buffer of its own (SwinV2's patch merging)."""
    x = torch.cat([a @ w[:3, :3], b @ w[:5, :5]], dim=1)
    return x @ w[:, :4], torch.cat([x, a], 1).sum(0)


@program("one_hot", _ints(7, 5))
def one_hot(i: Any) -> Any:
    """Inductor asserts the classes are non-negative in a node of its own, which stores only the
    assert's result: that node has no value and is dropped."""
    return F.one_hot(i, 7).float() * 3


@program("pad_modes", _randn(1, 2, 5, 5))
def pad_modes(x: Any) -> Any:
    """Reflection, replication and circular padding: indices through |x| (a reflection reads
    `4 - ||x - 2| - 4|`), clamps and wraps, all inside the storage."""
    return (
        F.pad(x, (2, 1, 1, 2), mode="reflect") * 2,
        F.pad(x, (2, 1, 0, 1), mode="replicate") + 1,
        F.pad(x, (1, 2, 2, 1), mode="circular"),
    )


@program(
    "scatters", _randn(3, 5), torch.tensor([[0, 2], [1, 4], [3, 3]]), _randn(3, 2), torch.tensor([4, 1, 4])
)
def scatters(x: Any, i: Any, s: Any, rows: Any) -> Any:
    """scatter, scatter_add, index_put with accumulation, index_add, and an index_put into a fresh
    zeros tensor (a mixture-of-experts' combine, which Inductor would make in place): each a
    functional library call; FORMAT's loops only gather."""
    v = s.sum(1, keepdim=True).expand(3, 5)
    return (
        x.scatter(1, i, s) * 2,
        x.scatter_add(1, i, s),
        torch.zeros(6, 5).index_put((rows,), v, accumulate=True) + 1,
        torch.zeros(6, 5).index_add(0, rows, x),
    )


@program("var_mean_keepdim", _randn(4, 32), _randn(2, 3, 16))
def var_mean_keepdim(x: Any, y: Any) -> Any:
    """Both outputs returned as they are (the size-1 dims' strides differ) and used further."""
    v, m = torch.var_mean(x, dim=-1, keepdim=True)
    v2, m2 = torch.var_mean(y, dim=(0, 2), keepdim=True, correction=0)
    return v, m, (x - m) / (v + 1e-5), v2, m2


@program("convs", _randn(2, 4, 8, 8), _randn(6, 2, 3, 3), _randn(6), _randn(2, 4, 10), _randn(3, 4, 3),
         _randn(2, 4, 8, 8).contiguous(memory_format=torch.channels_last))  # fmt: skip
def convs(x: Any, w: Any, b: Any, x1: Any, w1: Any, xc: Any) -> Any:
    """conv2d with groups, bias, padding, stride; conv1d without bias; a channels-last input."""
    return (
        F.conv2d(x, w, b, groups=2, padding=1).relu(),
        F.conv1d(x1, w1, stride=2),
        F.conv2d(xc, w, None, stride=2, groups=2),
    )


@program("matmuls", _randn(2, 4, 5), _randn(2, 4, 3), _randn(2, 3, 5), _randn(8, 6), _randn(6, 5), _randn(5))
def matmuls(c: Any, a: Any, b: Any, x: Any, w: Any, bias: Any) -> Any:
    """baddbmm with alpha/beta, bmm of a transposed view, addmm of a sliced view, mm."""
    return (
        torch.baddbmm(c, a, b, alpha=0.5, beta=2.0),
        torch.bmm(b.transpose(1, 2), a.transpose(1, 2)),
        torch.addmm(bias, x[:, 1:], w[1:]),
        x @ w,
    )


@program("qkv_attention", _randn(2, 8, 16), _randn(16, 48), _randn(8, 8) > 0)
def qkv_attention(x: Any, w: Any, mask: Any) -> Any:
    """One fused projection read as q, k and v (three views of one buffer), then SDPA variants."""
    q, k, v = (t.view(2, 8, 2, 8).transpose(1, 2) for t in (x @ w).split(16, -1))
    return (
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3),
    )


@program("sort_scan", _randn(4, 16))
def sort_scan(x: Any) -> Any:
    top = torch.topk(x * 2, 3)
    s = torch.sort(x, dim=0, descending=True)
    return top.values, top.indices, s.values, s.indices, torch.cumsum(x + 1, 1), torch.cumprod(x, 0)


_NAN_ROWS = torch.where(
    torch.rand(6, 9, generator=_GEN) > 0.8, float("nan"), torch.randn(6, 9, generator=_GEN)
)


@program(
    "extremes", _randn(5, 7), _NAN_ROWS, torch.randint(-2, 3, (4, 11), generator=_GEN, dtype=torch.int32)
)
def extremes(x: Any, nan_rows: Any, ints: Any) -> Any:
    """`max(dim)` / `min(dim)`: both results (Inductor's argmax_with_value), the values alone
    (argmax_value), over rows with NaNs (the first NaN and its index) and integer ties (the first
    index)."""
    v, i = x.max(-1)
    w, j = nan_rows.min(1)
    k, m = ints.max(-1)
    return v * 2, i, w, j, x.max(0, keepdim=True).values + x, nan_rows.max(-1).values, k, m


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8, bias=False) for _ in range(2)])
        self.register_buffer("scale", torch.full((8,), 0.5))
        self.fc_weight = torch.nn.Parameter(torch.ones(8))  # its name collides with fc.weight's

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.norm(self.fc(x) * self.scale + self.fc_weight)
        for layer in self.layers:
            h = layer(h).relu()
        return h + y


torch.manual_seed(0)
BLOCK = Block().eval()
PROGRAMS["module"] = (BLOCK, (_randn(2, 8), _randn(2, 8)))

# Inductor's kernel count for each program (meta.inductor), GPU plan under the emulation.
KERNELS = {
    "lookups": 4, "upsample": 3, "cross_entropy": 2, "relative_buckets": 1, "shifted_lookups": 1, "log_buckets": 1, "window_index": 4, "cat_into_call": 4, "one_hot": 2, "pad_modes": 4, "scatters": 9, "var_mean_keepdim": 2, "convs": 6, "matmuls": 4,
    "qkv_attention": 4, "sort_scan": 5, "module": 6, "extremes": 4,
}  # fmt: skip


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def captured() -> Iterator[Callable[[str], Capture]]:
    cache: dict[str, Capture] = {}

    def get(name: str) -> Capture:
        if name not in cache:
            fn, args = PROGRAMS[name]
            cache[name] = capture_program(fn, *args)
        return cache[name]

    yield get


def _expected(name: str) -> list[torch.Tensor]:
    fn, args = PROGRAMS[name]
    with torch.no_grad():
        leaves = pytree.tree_leaves(fn(*args))
    return [t if isinstance(t, torch.Tensor) else torch.tensor(t) for t in leaves]


def _assert_matches(cap: Capture, want: list[torch.Tensor]) -> None:
    got = cap.program_outputs(run_graph(cap.graph, cap.input_storages()))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape and g.dtype == w.dtype, i
        torch.testing.assert_close(
            g, w, rtol=1e-4, atol=1e-5, equal_nan=True, msg=lambda m, i=i: f"output {i}: {m}"
        )


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_validates_and_equals_torch(captured: Callable[[str], Capture], name: str) -> None:
    cap = captured(name)
    g = cap.graph
    assert load_text(dump_json(g), f"{name}.json") == g
    _assert_matches(cap, _expected(name))
    assert g.meta["inductor"]["kernel_count"] == KERNELS[name]


def _calls(cap: Capture) -> list[LibraryNode]:
    return [n for n in cap.graph.nodes if isinstance(n, LibraryNode)]


def _values(cap: Capture) -> str:
    return "\n".join(to_text(n.value) for n in cap.graph.nodes if isinstance(n, ComputeNode))


# -- 1. indirect indexing -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["shifted_lookups", "cat_into_call", "one_hot", "pad_modes", "scatters", "extremes"]
)
def test_generated_code_matches_the_reference(captured: Callable[[str], Capture], name: str) -> None:
    """Through code generation, on the program's own inputs (its indices are valid there): a
    masked index's clamped loads; a concatenation assembled for a library call; a dropped assert;
    padded indices; scatters as library calls. The module matches the reference."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.compare import check_outputs
    from fuseopt.runtime.module import run_module

    cap = captured(name)
    stage = optimize(cap.graph)
    inputs = cap.input_storages()
    expected = run_graph(stage.graph, {k: v.clone() for k, v in inputs.items()})
    got = run_module(
        emit_module(stage.graph, stage.plan), {k: v.clone() for k, v in inputs.items()}, poison=True
    )
    checks = check_outputs(stage.graph, got, expected)
    assert checks and all(c.ok for c in checks), checks


def test_indirect_indices_are_loads_with_inductors_wrap(captured: Callable[[str], Capture]) -> None:
    text = _values(captured("lookups"))
    assert "indirect" not in text
    assert "w[x2 + 8 * ids[5 * x0 + x1]]" in text  # embedding: the outer dim, no check term needed
    # index_select/x[neg] wrap negative indices as Inductor does: v + n*[v < 0]
    assert "neg[x0] - 4 * minimum(maximum(neg[x0], -1), 0)" in text


def test_out_of_range_indirect_index_is_reported_not_read() -> None:
    """gather along the inner dim: index 6 of a dim of 6 would read the next row; Inductor asserts,
    the interpreter must report it (the check term moves it out of the storage)."""
    cap = capture_program(lambda x, i: torch.gather(x, 1, i), _randn(4, 6), _ints(6, 4, 3))
    storages = cap.input_storages()
    storages["i"][5] = 6
    with pytest.raises(Exception, match=r"(?i)out of (bounds|range)|outside"):
        run_graph(cap.graph, storages)


def test_floor_division_of_floats_divides_correctly_rounded() -> None:
    """Inductor's float floor division is `floor(div_rn(a, b))`: captured as `floor(a / b)`, which
    code generation divides correctly rounded (`tl.div_rn`) on exact multiples too."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import run_module

    a = torch.arange(24.0).reshape(4, 6) * -7 - 693000
    cap = capture_program(lambda a, b: torch.div(a, b, rounding_mode="floor"), a, torch.full((4, 6), 7.0))
    assert _values(cap) == "floor(a[6 * x0 + x1] / b[6 * x0 + x1])"
    stage = optimize(cap.graph)
    src = emit_module(stage.graph, stage.plan)
    assert "tl.div_rn(" in src
    got = cap.program_outputs(run_module(src, cap.input_storages()))[0]
    torch.testing.assert_close(got, torch.div(a, 7.0, rounding_mode="floor"), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_ops_the_format_names_otherwise_are_exact(dtype: torch.dtype) -> None:
    """Inductor's `truncdiv` (integer `torch.div(..., rounding_mode="trunc")`) is
    `(a - fmod(a, b)) // b`, `bitwise_xor` is `(a | b) & ~(a & b)`, a left shift `a * 2**s`, a
    right shift two floor divisions by halves of `2**s`, `logical_xor` a `!=` of its operands' truth,
    and `atan(x)` is `atan2(x, 1)`: each
    equals torch's on every sign, on the dtype's extremes and shifts up to the width, through
    generated code too."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import run_module

    info = torch.iinfo(dtype)
    a = torch.tensor([-7, 7, -6, 6, 0, 5, -5, info.min + 1, info.max, info.min, 100 % info.max], dtype=dtype)
    b = torch.tensor([2, 2, -3, -3, 4, -1, 1, 3, -7, 5, -9], dtype=dtype)
    x = _randn(11) * 10

    bits = info.bits
    shifts = torch.tensor([0, 1, 2, 3, bits - 1, bits - 1, 1, 1, bits - 2, 5, 4], dtype=dtype)

    def fn(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.div(a, b, rounding_mode="trunc"), a ^ b, (a > 0) ^ (b > 1), (a << 2) + (a >> 1),
            torch.bitwise_left_shift(a, s), torch.bitwise_right_shift(a, s), torch.logical_xor(a, b - 2),
            torch.logical_xor(x, a), torch.atan(x),
        )  # fmt: skip

    want = fn(a, b, x, shifts)
    cap = capture_program(fn, a, b, x, shifts)
    _assert_matches(cap, list(want))
    stage = optimize(cap.graph)
    got = cap.program_outputs(run_module(emit_module(stage.graph, stage.plan), cap.input_storages()))
    assert all(torch.equal(g, w) for g, w in zip(got[:-1], want[:-1], strict=True))
    torch.testing.assert_close(got[-1], want[-1])


FROM_DATA: dict[str, Program] = {
    "grid_bilinear_zeros": (lambda x, g: F.grid_sample(x, g, align_corners=False), (_randn(2, 3, 7, 6), _randn(2, 5, 4, 2))),
    "grid_nearest_border": (lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border"), (_randn(1, 2, 5, 5), _randn(1, 4, 3, 2))),
    "grid_bicubic_zeros": (lambda x, g: F.grid_sample(x, g, mode="bicubic", align_corners=True).relu(), (_randn(1, 2, 6, 5), _randn(1, 3, 3, 2))),
    "gather_in_a_pad": (lambda x, g: F.pad(torch.gather(x, 1, (g.sigmoid() * 7.9).long()), (2, 1), value=-1.0), (_randn(3, 8), _randn(3, 5))),
    "sum_of_a_gather": (lambda x, g: torch.gather(x, 1, (g.sigmoid() * 31.9).long()).sum(1), (_randn(3, 32), _randn(3, 40))),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FROM_DATA))
def test_indices_computed_from_data_are_buffers_of_their_own(name: str) -> None:
    """An indirect index computed from float data (grid_sample's `floor(grid * 2.5 + 2.0)`, a
    gather by a scaled probability) has no form as index arithmetic: the capture writes it into an
    int64 buffer by a node of its own, under the masks it is computed in, and loads it. The
    outputs equal torch's through the reference and generated code, and the planner fuses those
    nodes back into their readers (no more kernels than Inductor)."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import run_module

    fn, args = FROM_DATA[name]
    cap = capture_program(fn, *args)
    want = [fn(*args)]
    _assert_matches(cap, want)
    made = [n for n in cap.graph.nodes if "_index" in n.name]
    assert made and all(cap.graph.buffer(n.output).dtype == DType.int64 for n in made)
    stage = optimize(cap.graph)
    assert len(stage.plan.kernels) <= cap.graph.meta["inductor"]["kernel_count"]
    got = cap.program_outputs(
        run_module(emit_module(stage.graph, stage.plan), cap.input_storages(), poison=True)
    )
    torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=1e-5)


_POSITIVE = torch.rand(3, 5, generator=_GEN) * 0.9 + 0.05  # in (0, 1): every domain below
LOOP_CALLS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "asin": torch.asin, "acos": torch.acos, "sinh": torch.sinh, "cosh": torch.cosh, "asinh": torch.asinh,
    "acosh": lambda x: torch.acosh(x + 1), "atanh": torch.atanh, "erfc": torch.erfc, "erfinv": torch.erfinv,
    "lgamma": torch.lgamma, "digamma": torch.digamma, "polygamma": lambda x: torch.polygamma(1, x),
    "igamma": lambda x: torch.igamma(x, x * 2), "igammac": lambda x: torch.igammac(x, x * 2), "i0": torch.i0,
    "special_i0e": torch.special.i0e, "special_i1": torch.special.i1, "special_erfcx": torch.special.erfcx,
    "special_ndtri": torch.special.ndtri,
    "special_bessel_j0": torch.special.bessel_j0, "log10": torch.log10,
    "special_modified_bessel_k1": torch.special.modified_bessel_k1, "frexp": lambda x: torch.frexp(x)[0],
    "copysign": lambda x: torch.copysign(x, x - 0.5), "hypot": lambda x: torch.hypot(x, x * 3),
    "nextafter": lambda x: torch.nextafter(x, x * 2), "signbit": lambda x: torch.signbit(x - 0.5).float(),
    "gcd": lambda x: torch.gcd((x * 40).long(), (x * 90).long() + 1).float(),
    "ldexp": lambda x: torch.ldexp(x, (x * 9 - 4).int()),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LOOP_CALLS))
def test_operators_whose_loop_op_the_format_lacks_are_library_calls(name: str) -> None:
    """Inductor lowers these to loop ops (`ops.erfinv`, `ops.asin`, ...) that the format has no
    equivalent of: for the capture they are calls of the ATen operator (`LOOP_OPS_AS_CALLS`),
    between the pointwise nodes around them."""
    from fuseopt.capture.fallbacks import LOOP_OPS_AS_CALLS

    assert name in LOOP_OPS_AS_CALLS
    op = LOOP_CALLS[name]

    def fn(x: torch.Tensor) -> torch.Tensor:
        return op(x * 0.5 + 0.25) * 2

    cap = capture_program(fn, _POSITIVE)
    assert any(n.op.startswith(f"aten.{name}.") for n in _calls(cap))
    _assert_matches(cap, [fn(_POSITIVE)])


def test_upsample_indices_are_exact_integer_forms(captured: Callable[[str], Capture]) -> None:
    text = _values(captured("upsample"))
    assert "float" not in text and "cast" not in text
    assert "x1 // 2" in text


def test_relative_buckets_are_an_index_of_loop_variables(captured: Callable[[str], Capture]) -> None:
    """T5's bucket (a float log of |i - j| under a where) is tabulated over the 8 x 8 box: integer
    steps, clamped to the table's rows (the same value everywhere, statically in range)."""
    text = _values(captured("relative_buckets"))
    assert "log" not in text and "cast" not in text and "emb[" in text


# Neighbours of the programs above: other dims, shapes, scales (a capture each: slow).
NEIGHBOURS: dict[str, Program] = {
    "gather_dim2": (lambda x, i: torch.gather(x, 2, i), (_randn(2, 3, 5), _ints(5, 2, 3, 4))),
    "gather_dim1_3d": (lambda x, i: torch.gather(x, 1, i) * 2, (_randn(2, 3, 5), _ints(3, 2, 2, 5))),
    "index_select_dim0": (lambda x, i: torch.index_select(x, 0, i), (_randn(5, 3), torch.tensor([4, 0, 4, 1]))),
    "embedding_bag_like": (lambda i, w: F.embedding(i, w).sum(1), (_ints(7, 3, 4), _randn(7, 5))),
    "upsample_3x_1d": (lambda x: F.interpolate(x, scale_factor=3, mode="nearest"), (_randn(1, 2, 5),)),
    "upsample_down": (lambda x: F.interpolate(x, size=(2, 3), mode="nearest"), (_randn(1, 1, 5, 7),)),
    "cross_entropy_smooth": (lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), (_randn(5, 7), _ints(7, 5))),
    "conv1d_groups_bias": (lambda x, w, b: F.conv1d(x, w, b, groups=3, padding=2, dilation=2),
                           (_randn(1, 6, 9), _randn(6, 2, 3), _randn(6))),
    "bmm_of_permute": (lambda a, b: a.permute(0, 2, 1) @ b, (_randn(3, 4, 5), _randn(3, 4, 2))),
    "sort_descending_last": (lambda x: torch.sort(x * 3, descending=True).values, (_randn(3, 9),)),
    "var_mean_dim0": (lambda x: torch.var_mean(x, dim=0, keepdim=True), (_randn(24, 3),)),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NEIGHBOURS))
def test_neighbours_validate_and_equal_torch(name: str) -> None:
    fn, args = NEIGHBOURS[name]
    cap = capture_program(fn, *args)
    with torch.no_grad():
        want = [t for t in pytree.tree_leaves(fn(*args)) if isinstance(t, torch.Tensor)]
    _assert_matches(cap, want)
    assert cap.graph.meta["inductor"]["kernel_count"] >= 1


def _eval(e: Expr, env: dict[str, int]) -> int:
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Load):
        return env[e.buffer]
    if isinstance(e, Unary):
        assert e.op == "neg"
        return -_eval(e.x, env)
    assert isinstance(e, Binary), e
    a, b = _eval(e.a, env), _eval(e.b, env)
    ops: dict[str, Callable[[int, int], int]] = {
        "add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
        "floordiv": lambda p, q: p // q, "mod": lambda p, q: p % q, "minimum": min, "maximum": max,
    }  # fmt: skip
    return ops[e.op](a, b)


_INDEX_OPS = frozenset({"add", "sub", "mul", "floordiv", "mod", "minimum", "maximum"})


def _is_index_grammar(e: Expr) -> bool:
    return all(
        isinstance(x, Const | Var | Load)
        or (isinstance(x, Binary) and x.op in _INDEX_OPS)
        or (isinstance(x, Unary) and x.op == "neg")
        for x in walk(e)
    )


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40), st.integers(1, 2**20))
def test_integer_conditions_compile_exactly(a: int, b: int, n: int) -> None:
    env = {"a": a, "b": b}
    va, vb = Load("a", Const(0)), Load("b", Const(0))
    compiler = IndexCompiler("n0", {})
    assert _eval(less_than(va, vb), env) == int(a < b)
    assert _eval(wrapped(va, n), env) == (a + n if a < 0 else a)
    for op, want in (
        ("lt", a < b),
        ("le", a <= b),
        ("gt", a > b),
        ("ge", a >= b),
        ("eq", a == b),
        ("ne", a != b),
    ):
        tree = compiler(Where(Binary(op, va, vb), va, Const(0)))
        assert _is_index_grammar(tree)
        assert _eval(tree, env) == (a if want else 0), op
    both = compiler(Cast(Binary("and", Binary("ge", va, Const(0)), Binary("lt", va, vb)), DType.int64))
    assert _eval(both, env) == int(0 <= a < b)


def _eval_loads(e: Expr, env: dict[str, int], tables: dict[str, list[int]]) -> int:
    """`_eval` where a load reads its table at its index, which must lie in the table."""
    if isinstance(e, Load):
        i = _eval_loads(e.index, env, tables)
        assert 0 <= i < len(tables[e.buffer]), f"{to_text(e)} reads {i}"
        return tables[e.buffer][i]
    if isinstance(e, Const | Var):
        return _eval(e, env)
    kids = {f"_{k}": _eval_loads(c, env, tables) for k, c in enumerate(e.children())}
    return _eval(e.with_children(tuple(Var(k) for k in kids)), kids)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=1, max_size=12),
    st.integers(-15, 15),
    st.integers(-3, 3),
    st.integers(0, 20),  # a loop variable: not negative
    st.floats(-5, 5).map(round),
)
def test_masked_index_reads_inside_its_storage(
    table: list[int], shift: int, k: int, x: int, other: float
) -> None:
    """masked(x + k < n, t[x + shift], other), Inductor's form of a shifted or padded index (a
    float fill value too): the same value as torch's where at every x, and every load of the
    compiled tree reads inside the storage, whichever side of the condition x is on."""
    n = len(table)
    cond = Binary("lt", Binary("add", Var("x"), Const(k)), Const(n))
    body = Load("t", Binary("add", Var("x"), Const(shift)))
    tree = IndexCompiler("n0", {"x": 64}, {"t": n}.__getitem__)(Masked(cond, body, Const(float(other))))
    assert _is_index_grammar(tree)
    taken = x + k < n
    if taken and not 0 <= x + shift < n:
        return  # the program itself would read outside: not a valid point
    want = table[x + shift] if taken else int(other)
    assert _eval_loads(tree, {"x": x}, {"t": table}) == want


def _where_chain(levels: list[tuple[int, int]]) -> Expr:
    """where(x == k1, v1, where(x == k2, v2, ... t[0])): Inductor's form of writes into a row or
    column of an index (BEiT's relative position index)."""
    tree: Expr = Load("t", Const(0))
    for k, v in reversed(levels):
        tree = Where(Binary("eq", Var("x"), Const(k)), Const(v), tree)
    return tree


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 9), st.integers(-50, 50)), min_size=1, max_size=16), st.integers(0, 7)
)
def test_where_chains_compile_exactly(levels: list[tuple[int, int]], x: int) -> None:
    compiled = IndexCompiler("n0", {"x": 8})(_where_chain(levels))
    assert _is_index_grammar(compiled)
    want = next((v for k, v in levels if k == x), 7)
    assert _eval_loads(compiled, {"x": x}, {"t": [7]}) == want


def test_where_chains_grow_linearly() -> None:
    """`b + c*(a - b)` would double the nested `b` at every level: 40 levels would not fit the
    format's 4096 characters an expression."""
    for depth in (10, 20, 40):
        text = to_text(IndexCompiler("n0", {"x": 64})(_where_chain([(k, k) for k in range(depth)])))
        assert len(text) <= 100 * depth


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40))
def test_sign_and_abs_compile_exactly(a: int, b: int) -> None:
    """sign and abs of an integer (DeBERTa's relative positions), and comparisons of a difference
    that cannot be negative, against Python's."""
    env = {"a": a, "b": b}
    va, vb = Load("a", Const(0)), Load("b", Const(0))
    compiler = IndexCompiler("n0", {})
    d = Binary("sub", va, vb)
    assert _eval(compiler(Unary("sign", d)), env) == (a > b) - (a < b)
    assert _eval(compiler(Unary("abs", d)), env) == abs(a - b)
    x = Var("x")  # a loop variable: x != 0 as min(x, 1)
    for v in (0, 1, 5):
        assert _eval(compiler(Where(Binary("ne", x, Const(0)), va, vb)), {**env, "x": v}) == (a if v else b)


def test_index_compiler_refuses_floats_of_loads() -> None:
    value = Cast(Binary("mul", Cast(Load("t", Const(0)), DType.float32), Const(0.5)), DType.int64)
    with pytest.raises(CaptureError, match="floats from loads"):
        IndexCompiler("n0", {"x0": 4})(value)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40))
def test_nearest_index_fits_are_exact(n_in: int, n_out: int) -> None:
    """floor(x * (in/out)) in float32, as Inductor computes nearest's source index, for every x."""
    scale = torch.tensor(n_in / n_out, dtype=torch.float32)
    values = torch.floor(torch.arange(n_out, dtype=torch.float32) * scale).to(torch.int64).tolist()
    fit = fit_floor(values)
    assert fit is not None
    p, r, q = fit
    assert [(p * x + r) // q for x in range(n_out)] == values


# -- 2. Welford with keepdim ---------------------------------------------------------------------
def test_var_mean_keepdim_uses_both_outputs(captured: Callable[[str], Capture]) -> None:
    g = captured("var_mean_keepdim").graph
    reductions = [n for n in g.nodes if isinstance(n, ComputeNode) and n.reduce]
    assert any("buf0[" in to_text(n.value) for n in reductions[1:])  # M2 reads the mean's buffer


# -- 3./4. library calls --------------------------------------------------------------------------
def test_concatenation_read_by_a_call_is_assembled(captured: Callable[[str], Capture]) -> None:
    """The call reads a buffer that one node writes from the slices; that node is counted in the
    call's Inductor kernel."""
    graph = captured("cat_into_call").graph
    (made,) = [n for n in graph.nodes if isinstance(n, ComputeNode) and n.name.endswith(n.store.buffer)]
    readers = [n for n in _calls(captured("cat_into_call")) if made.store.buffer in n.read_buffers()]
    assert readers
    assert any(made.name in k and readers[0].name in k for k in graph.meta["inductor"]["kernels"])


POOLS_WITH_INDICES: dict[str, Program] = {
    "2x2": (lambda x: F.max_pool2d(x, 2, 2, return_indices=True), (_randn(2, 3, 8, 6),)),
    "3x3_padded": (lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), (_randn(2, 3, 9, 7),)),
    "ceil": (lambda x: F.max_pool2d(x * 2, 2, 2, ceil_mode=True, return_indices=True), (_randn(1, 2, 7, 5),)),
    "1d": (lambda x: F.max_pool1d(x, 3, 2, return_indices=True), (_randn(2, 3, 11),)),
    "3d": (lambda x: F.max_pool3d(x, 2, 2, return_indices=True), (_randn(1, 2, 4, 6, 4),)),
    "bf16_channels_last": (
        lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
        (_randn(2, 8, 9, 9).bfloat16().to(memory_format=torch.channels_last),),
    ),
}


@pytest.mark.parametrize("name", sorted(POOLS_WITH_INDICES))
def test_max_pool_indices_are_an_argmax_over_the_window(name: str) -> None:
    """Inductor unrolls the window offsets of a max pool's indices (windows of up to 25 points,
    whatever `unroll_reductions_threshold` says) into an expression whose text doubles with each
    point: past the format's limits, found before it is written (it never finished for 3 x 3).
    Captured again with reductions not unrolled, the offset is an argmax node over the window."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import run_module

    fn, args = POOLS_WITH_INDICES[name]
    cap = capture_program(fn, *args)
    assert cap.graph.meta["capture"]["inductor_config"] == {"unroll_reductions_threshold": 1}
    assert "argmax(" in _values(cap)
    want = list(fn(*args))
    _assert_matches(cap, want)
    stage = optimize(cap.graph)
    got = cap.program_outputs(
        run_module(emit_module(stage.graph, stage.plan), cap.input_storages(), poison=True)
    )
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def _call_on_empty(w: torch.Tensor) -> torch.Tensor:
    return torch.mm(torch.empty_like(w), w) + w


def test_an_allocation_a_call_reads_uncomputed_is_filled_once() -> None:
    """`torch.empty` read by a matmul: no node computes the buffer (FORMAT needs one writer), so
    one node fills it with 0, counted in the call's Inductor kernel; any value is its value, and
    the reference and the generated module agree on the one the graph gives it."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import run_module

    cap = capture_program(_call_on_empty, _randn(8, 8))
    (fill,) = [n for n in cap.graph.nodes if isinstance(n, ComputeNode)]
    (call,) = _calls(cap)
    assert fill.name == f"{call.name}_{fill.store.buffer}" and to_text(fill.value) == "0.0"
    assert fill.store.buffer in call.read_buffers()
    assert any(fill.name in k and call.name in k for k in cap.graph.meta["inductor"]["kernels"])
    storages = run_graph(cap.graph, cap.input_storages())
    (out,) = cap.program_outputs(storages)
    torch.testing.assert_close(out, cap.inputs["w"])  # 0 @ w + w
    stage = optimize(cap.graph)
    got = run_module(emit_module(stage.graph, stage.plan), cap.input_storages(), poison=True)
    (generated,) = cap.program_outputs(got)
    torch.testing.assert_close(generated, out)


def test_every_extern_is_a_library_call(captured: Callable[[str], Capture]) -> None:
    ops = {
        name: sorted({n.op for n in _calls(captured(name))})
        for name in ("convs", "matmuls", "qkv_attention", "sort_scan")
    }
    assert ops["convs"] == ["aten.convolution.default"]
    # x is read as declared (x @ w) and through a slice (addmm): both become 1.1 calls on views
    assert ops["matmuls"] == ["aten.addmm.default", "aten.baddbmm.default", "aten.mm.default", "bmm"]
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in ops["qkv_attention"]
    assert {"aten.topk.default", "aten.sort.stable", "aten.cumsum.default", "aten.cumprod.default"} <= set(
        ops["sort_scan"]
    )


@pytest.mark.parametrize("token", [0, 7, -1])
def test_a_row_of_a_computed_buffer_read_by_a_matmul_is_a_view(token: int) -> None:
    """A pooled token (`hidden[:, token] @ w + b`, SigLIP's text pooler takes the last): the
    matmul reads a slice of the normalised activations, which keep their own layout; the last
    token's slice spans the whole storage (offset 480 + 512 + 32 = 1024) but not its elements."""
    x, w, b = _randn(2, 16, 32), _randn(32, 8), _randn(8)

    def pooled(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (32,))[:, token] @ w + b

    cap = capture_program(pooled, x, w, b)
    _assert_matches(cap, [pooled(x, w, b)])
    (call,) = _calls(cap)
    (normed,) = [cap.graph.buffer(r) for r in call.read_buffers() if cap.graph.buffer(r).role != "input"]
    assert normed.shape == (2, 16, 32)


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_and_searchsorted_are_library_calls(right: bool) -> None:
    """Inductor's `ops.bucketize` (a binary search in a loop) has no form in the format: with the
    backend's BUCKETIZE feature hidden, as SORT and SCAN are, Inductor calls the ATen operator."""
    from fuseopt.codegen import emit_module
    from fuseopt.passes.pipeline import optimize
    from fuseopt.runtime.module import run_module

    def fn(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bucketize(x * 2, b, right=right) + torch.searchsorted(b, x.sum(1), right=right)[:, None]

    x, b = _randn(3, 7), torch.tensor([-1.0, 0.0, 0.5, 1.0])
    cap = capture_program(fn, x, b)
    assert {n.op for n in _calls(cap)} == {"aten.bucketize.Tensor", "aten.searchsorted.Tensor"}
    _assert_matches(cap, [fn(x, b)])
    stage = optimize(cap.graph)
    got = cap.program_outputs(run_module(emit_module(stage.graph, stage.plan), cap.input_storages()))
    assert torch.equal(got[0], fn(x, b))


def test_conv_arguments_follow_the_schema(captured: Callable[[str], Capture]) -> None:
    conv = next(n for n in _calls(captured("convs")) if n.call is not None and n.call.args[2] is not None)
    assert conv.call is not None
    args = conv.call.args
    assert args[3:] == ((1, 1), (1, 1), (1, 1), False, (0, 0), 2)  # stride padding dilation ... groups


def test_fused_projection_is_read_through_three_views(captured: Callable[[str], Capture]) -> None:
    attn = [n for n in _calls(captured("qkv_attention")) if "attention" in n.op]
    assert attn and attn[0].call is not None
    q, k, v = attn[0].call.args[:3]
    assert {q.buffer, k.buffer, v.buffer} == {q.buffer} and (q.offset, k.offset, v.offset) == (0, 16, 32)
    assert attn[0].call.outputs[1] is None  # logsumexp: unused


def test_multi_result_calls_map_each_result(captured: Callable[[str], Capture]) -> None:
    topk = next(n for n in _calls(captured("sort_scan")) if n.op == "aten.topk.default")
    assert (
        topk.call is not None
        and len(topk.call.outputs) == 2
        and all(o is not None for o in topk.call.outputs)
    )


def test_custom_operator_is_refused_by_name() -> None:
    """A model's own operator (transformers' grouped_mm_fallback in Mixtral) is no ATen call."""

    @torch.library.custom_op("fuseopt_test::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    with pytest.raises(CaptureError, match=r"fuseopt_test\.twice\.default is a custom operator"):
        capture_program(lambda x: twice(x.relu()) + 1, _randn(4, 3))


# -- 5. nn.Module ------------------------------------------------------------------------------
def test_module_parameters_are_named_after_their_paths(captured: Callable[[str], Capture]) -> None:
    g = captured("module").graph
    call = g.meta["capture"]["call"]
    assert call["module"] == "Block" and call["args"] == ["x", "y"]
    assert call["buffers"] == {"scale": "scale"}
    params = call["parameters"]
    assert params["fc_weight"] in ("fc.weight", "fc_weight") and params["fc_weight_2"] != params["fc_weight"]
    assert {params[k] for k in ("fc_weight", "fc_weight_2")} == {"fc.weight", "fc_weight"}
    assert params["layers_1_weight"] == "layers.1.weight" and params["norm_bias"] == "norm.bias"
    for name, path in params.items():  # each buffer holds that parameter
        assert torch.equal(captured("module").inputs[name], BLOCK.get_parameter(path))


def test_sources_parse_without_evaluation() -> None:
    assert (
        origin_of("L['self']._modules['h']._modules['0']._parameters['w']", "self", ["x"], "p").path
        == "h.0.w"
    )
    assert origin_of("G['model']._buffers['mask']", None, ["x"], "p").path == "model.mask"
    assert origin_of("L['x']", None, ["y", "x"], "p").position == 1
    assert origin_of("L['x'].__class__", None, ["x"], "l_x_").kind == "other"
    # Dynamo's wrapper frame for a module it does not inline: fn(*args)
    assert origin_of("L['args'][1]", "self", ["a", "b"], "p").position == 1
    assert origin_of("L['fn']._modules['0']._parameters['bias']", "self", ["input"], "p").path == "0.bias"
    assert sanitized("Encoder.Layer.0.weight") == "encoder_layer_0_weight"
    long = sanitized("a" * 80 + ".weight")
    assert len(long) == 64 and long != sanitized("a" * 81 + ".weight")


# -- 6. failures -------------------------------------------------------------------------------
def test_a_concatenation_of_many_slices_is_a_balanced_choice() -> None:
    """A DenseNet block concatenates every layer before it (33 slices in DenseNet-169's last
    block): a chain of one `where` a slice would pass the format's 64 levels; a balanced tree
    keeps the depth near 2 log2(33)."""
    from fuseopt.ir.parser import parse_expr_text

    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.cat([x @ w * i for i in range(33)], 1).exp()

    x, w = _randn(2, 4), _randn(4, 3)
    cap = capture_program(fn, x, w)
    _assert_matches(cap, [fn(x, w)])
    (reader,) = [n for n in cap.graph.nodes if isinstance(n, ComputeNode) and "exp(" in to_text(n.value)]

    def depth(e: Expr) -> int:
        return 1 + max((depth(k) for k in e.children()), default=0)

    assert depth(parse_expr_text(to_text(reader.value))) <= 24


def test_expression_past_the_limits_is_named_as_such() -> None:
    """A chain of `where(x > 0, 1.5x, 0.5x) + sin(x)` Inductor keeps in one loop body reads each
    value three times: nine steps are 3**9 loads in the format's text, past its 1,024 nodes an
    expression. The error says so (not "a bug")."""

    def chain(x: torch.Tensor) -> torch.Tensor:
        for _ in range(9):
            x = torch.where(x > 0, x * 1.5, x * 0.5) + x.sin()
        return x

    with pytest.raises(CaptureError, match="past the format's limits") as err:
        capture_program(chain, _randn(8))
    text = str(err.value)
    assert "bug" not in text and "reductions not unrolled" in text


def test_a_concatenation_of_more_slices_reads_groups_of_them() -> None:
    """60 slices (DenseNet-201's blocks concatenate 49, MarkupLM's xpath embeddings 50): a load
    of them all would pass the format's 4,096 characters; groups of 16 are copied into buffers of
    their own, which the load chooses between."""
    from fuseopt.capture.library import GROUP

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.sin(x * i) for i in range(60)], 1).exp()

    x = _randn(2, 4)
    cap = capture_program(fn, x)
    _assert_matches(cap, [fn(x)])
    parts = [n for n in cap.graph.nodes if "_part" in n.name]
    assert len(parts) == -(-60 // GROUP) and all(
        cap.graph.buffer(n.output).shape[1] <= 4 * GROUP for n in parts
    )


SMALL_REDUCTIONS: dict[str, Program] = {
    "var_of_var": (lambda x: x.var(1).sum(), (_randn(6, 5),)),
    "argmin_ties": (lambda x: x.argmin(1) + x.argmax(0).sum(), (torch.tensor([[1.0, 1.0, 0.0, 0.0], [2.0] * 4]),)),
    "max_of_transposed": (lambda x: torch.max(x.t(), 0)[1] * 2, (_randn(5, 4),)),
    "softmax_of_a_variance": (lambda x: torch.softmax(torch.softmax(x, 1).var(1), -1), (_randn(4, 3, 2),)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SMALL_REDUCTIONS))
def test_small_reductions_past_the_limits_are_captured_not_unrolled(name: str) -> None:
    """Inductor unrolls a reduction over fewer than 8 points into one expression that repeats
    its operands (an argmax's comparisons, a variance of a variance): past the format's limits,
    the program is captured again with Inductor's reductions not unrolled, and says so."""
    fn, args = SMALL_REDUCTIONS[name]
    cap = capture_program(fn, *args)
    with torch.no_grad():
        want = [t for t in pytree.tree_leaves(fn(*args)) if isinstance(t, torch.Tensor)]
    _assert_matches(cap, want)
    assert cap.graph.meta["capture"]["inductor_config"] == {"unroll_reductions_threshold": 1}
    assert any(isinstance(n, ComputeNode) and n.reduce for n in cap.graph.nodes)


def test_small_reductions_within_the_limits_stay_unrolled() -> None:
    cap = capture_program(lambda x: x.sum(1) * x.amax(1), _randn(6, 3))
    assert "inductor_config" not in cap.graph.meta["capture"]
    assert not any(isinstance(n, ComputeNode) and n.reduce for n in cap.graph.nodes)


def test_shape_error_leads_with_its_cause_and_no_log(capfd: pytest.CaptureFixture[str]) -> None:
    def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b

    with pytest.raises(CaptureError) as err:
        capture_program(matmul, _randn(4, 8), _randn(4, 8))
    msg = err.value.message
    assert msg.startswith("torch.compile could not capture the program: a and b must have same reduction dim")
    assert "in matmul: return a @ b" in msg
    out, errs = capfd.readouterr()
    assert "Traceback" not in errs and "fake_tensor" not in errs
    assert err.value.details  # the chain, for --verbose


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_nonfinite_arguments_are_written_as_the_formats_strings(value: float) -> None:
    """JSON has no literal for inf or nan: capture writes the format's strings, which the loader reads
    back as floats where the schema takes one (a plain float would be dumped as `Infinity`)."""
    import sympy

    from fuseopt.capture.externs import literal

    text = "nan" if value != value else ("inf" if value > 0 else "-inf")
    assert literal(value, None, "n0", "/args/1") == text  # type: ignore[arg-type]
    symbolic = sympy.nan if value != value else (sympy.oo if value > 0 else -sympy.oo)
    assert literal(symbolic, None, "n0", "/args/1") == text  # type: ignore[arg-type]
    assert literal([1.5, value], None, "n0", "/args/1") == [1.5, text]  # type: ignore[arg-type]
