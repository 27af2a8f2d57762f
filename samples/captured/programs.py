"""Real model blocks captured with `fuseopt capture` into the graphs next to this file.

Regenerate every graph here (from the repository root; writes samples/captured/<name>.json):

    python samples/captured/programs.py

which runs, for each entry of CAPTURES, the same command a user would, e.g.

    fuseopt capture samples/captured/programs.py:mlp_block --input 'float32[2,16,64]' \
        -o samples/captured/mlp_block.json

Parameters live in modules built at import with a fixed seed; torch.compile lifts them into graph
inputs (named after the module path, e.g. `mlp_fc1_weight`). Shapes are small on purpose: the
graphs are for reading, planning and testing, not for timing. Each graph's meta holds the source
(file, function, input specs) and Inductor's own kernels and bytes (meta.inductor).
"""

from __future__ import annotations

import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class MLPBlock(nn.Module):
    """Pre-norm transformer MLP: x + fc2(gelu(fc1(layer_norm(x))))."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Attention(nn.Module):
    """Multi-head self-attention with a learned relative-position bias (T5/Swin style): the
    matmuls are extern kernels, softmax and the head transposes are Inductor's own nodes."""

    def __init__(self, dim: int, heads: int, seq: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.rel_bias = nn.Parameter(0.1 * torch.randn(heads, seq, seq))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)) + self.rel_bias
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, s, d))


class InceptionBlock(nn.Module):
    """Inception-style block on a channels-last input: 3x3 average pool, an affine (folded batch
    norm) branch, 3x3 max pool and a 1x1 convolution written as a matmul over the NHWC storage,
    concatenated along the channels."""

    def __init__(self, channels: int, out_1x1: int):
        super().__init__()
        self.scale = nn.Parameter(1.0 + 0.1 * torch.randn(channels, 1, 1))
        self.shift = nn.Parameter(0.1 * torch.randn(channels, 1, 1))
        self.w_1x1 = nn.Parameter(torch.randn(channels, out_1x1) / math.sqrt(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pool = torch.relu(F.avg_pool2d(x, 3, stride=1, padding=1))
        affine = torch.relu(x * self.scale + self.shift)
        peak = F.max_pool2d(x, 3, stride=1, padding=1)
        conv = (x.permute(0, 2, 3, 1) @ self.w_1x1).permute(0, 3, 1, 2)
        return torch.cat([pool, affine, peak, conv], dim=1)


class RMSNormRoPE(nn.Module):
    """RMSNorm over the head dim, then rotary position embedding (rotate-half, Llama style) with the
    angles computed in the kernel from the positions."""

    def __init__(self, head_dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(head_dim))
        self.head_dim = head_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (batch, seq, heads, head_dim)
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        half = self.head_dim // 2
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, half, device=x.device, dtype=torch.float32) / half))
        angles = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)[:, None] * inv_freq[None, :]
        cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[None, :, None, :]
        sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[None, :, None, :]
        rotated = torch.cat([-h[..., half:], h[..., :half]], dim=-1)
        return h * cos + rotated * sin


MLP = MLPBlock(64, 256)
ATTN = Attention(32, 4, 16)
INCEPTION = InceptionBlock(16, 8)
ROPE = RMSNormRoPE(32)


def mlp_block(x: torch.Tensor) -> torch.Tensor:
    return MLP(x)


def attention_block(x: torch.Tensor) -> torch.Tensor:
    return ATTN(x)


def inception_block(x: torch.Tensor) -> torch.Tensor:
    return INCEPTION(x)


def rmsnorm_rope(x: torch.Tensor) -> torch.Tensor:
    return ROPE(x)


# name -> (input specs, layouts): the arguments of `fuseopt capture`.
CAPTURES: dict[str, tuple[list[str], list[str]]] = {
    "mlp_block": (["float32[2,16,64]"], ["contiguous"]),
    "attention_block": (["float32[2,16,32]"], ["contiguous"]),
    "inception_block": (["float32[2,16,8,8]"], ["channels_last"]),
    "rmsnorm_rope": (["float32[2,16,4,32]"], ["contiguous"]),
}


def capture_args(name: str) -> list[str]:
    """The `fuseopt capture` arguments that (re)generate samples/captured/<name>.json."""
    specs, layouts = CAPTURES[name]
    args = ["capture", f"samples/captured/programs.py:{name}"]
    for spec, layout in zip(specs, layouts, strict=True):
        args += ["--input", spec, "--layout", layout]
    return [*args, "-o", f"samples/captured/{name}.json"]


if __name__ == "__main__":
    from fuseopt.cli.main import main

    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    for entry in CAPTURES:
        try:
            main(capture_args(entry))
        except SystemExit as exc:
            if exc.code:
                sys.exit(exc.code)
