"""Model builders shared by the zoo tests (small) and benchmarks/models.py (real sizes).

Each model is an `nn.Module` in eval mode whose forward takes tensors and returns one tensor (the
logits, or the encoder's last hidden state), so that a capture has one graph output and the module
path of every parameter is `model.<transformers path>`. Weights are random from `torch.manual_seed`
of the case's seed, built from a config (no download).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

SIZES = ("small", "real")


class Logits(nn.Module):
    """`model(*inputs).<field>` as one tensor (a transformers ModelOutput has several)."""

    def __init__(self, model: nn.Module, field_name: str) -> None:
        super().__init__()
        self.model = model
        self.field_name = field_name

    def forward(self, *inputs: Tensor) -> Tensor:
        out = self.model(*inputs)
        return getattr(out, self.field_name) if not isinstance(out, Tensor) else out


@dataclass(frozen=True)
class ZooCase:
    """One model at one size: the module, its example inputs, what the inputs are."""

    name: str
    size: str
    module: nn.Module
    inputs: tuple[Tensor, ...]
    specs: tuple[str, ...]  # the inputs as `fuseopt capture --input` specs
    layouts: tuple[str, ...]  # and their `--layout`s
    dtype: torch.dtype  # the parameters' dtype (bf16 cases compare with bf16 tolerances)


@dataclass(frozen=True)
class ZooModel:
    name: str
    family: str  # "decoder", "encoder", "vision transformer", "cnn"
    make: Callable[[str], tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]]  # size -> module, inputs
    dtype: torch.dtype = torch.float32
    channels_last: bool = False
    notes: dict[str, str] = field(default_factory=dict)


def _ids(batch: int, seq: int, vocab: int) -> Tensor:
    return torch.randint(0, vocab, (batch, seq), dtype=torch.int64)


def _gpt2(size: str) -> tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    if size == "small":
        cfg = GPT2Config(
            vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
        )
        batch, seq = 2, 32
    else:  # GPT-2 small (124M)
        cfg, batch, seq = GPT2Config(), 4, 512
    return Logits(GPT2LMHeadModel(cfg), "logits"), (_ids(batch, seq, cfg.vocab_size),), ("ids",)


def _llama(size: str) -> tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    if size == "small":
        cfg = LlamaConfig(
            vocab_size=256,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
        batch, seq = 2, 32
    else:  # a ~small Llama: 12 layers of 768, grouped-query attention (4 kv heads)
        cfg = LlamaConfig(
            vocab_size=32000,
            hidden_size=768,
            intermediate_size=2048,
            num_hidden_layers=12,
            num_attention_heads=12,
            num_key_value_heads=4,
            max_position_embeddings=1024,
        )
        batch, seq = 4, 512
    return Logits(LlamaForCausalLM(cfg), "logits"), (_ids(batch, seq, cfg.vocab_size),), ("ids",)


def _bert(size: str) -> tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]:
    from transformers import BertConfig, BertModel

    if size == "small":
        cfg = BertConfig(
            vocab_size=256,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=64,
        )
        batch, seq = 2, 32
    else:  # BERT-base
        cfg, batch, seq = BertConfig(), 8, 512
    model = BertModel(cfg, add_pooling_layer=False)
    return Logits(model, "last_hidden_state"), (_ids(batch, seq, cfg.vocab_size),), ("ids",)


def _image(batch: int, side: int) -> Tensor:
    return torch.randn(batch, 3, side, side)


def _vit(size: str) -> tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]:
    from transformers import ViTConfig, ViTForImageClassification

    if size == "small":
        cfg = ViTConfig(
            image_size=32,
            patch_size=8,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            num_labels=10,
        )
        batch = 2
    else:  # ViT-B/16 at 224x224
        cfg, batch = ViTConfig(num_labels=1000), 8
    return Logits(ViTForImageClassification(cfg), "logits"), (_image(batch, cfg.image_size),), ("pixels",)


def _resnet(size: str) -> tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]:
    from transformers import ResNetConfig, ResNetForImageClassification

    if size == "small":  # two bottleneck stages of one block each
        cfg = ResNetConfig(embedding_size=16, hidden_sizes=[32, 64], depths=[1, 1], num_labels=10)
        x = _image(2, 32)
    else:  # ResNet-50 at batch 32
        cfg, x = ResNetConfig(num_labels=1000), _image(32, 224)
    return Logits(ResNetForImageClassification(cfg), "logits"), (x,), ("pixels",)


def _convnext(size: str) -> tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]:
    from transformers import ConvNextConfig, ConvNextForImageClassification

    if size == "small":
        cfg = ConvNextConfig(num_stages=2, hidden_sizes=[32, 64], depths=[1, 1], num_labels=10)
        x = _image(2, 32)
    else:  # ConvNeXt-tiny
        cfg, x = ConvNextConfig(num_labels=1000), _image(8, 224)
    return Logits(ConvNextForImageClassification(cfg), "logits"), (x,), ("pixels",)


def _inception(size: str) -> tuple[nn.Module, tuple[Tensor, ...], tuple[str, ...]]:
    from tests.zoo.inception import Inception3

    if size == "small":  # every block kind once (A, B, C, D, E), channels / 8, the smallest image, batch 2
        model, x = Inception3(num_classes=10, width=0.125, blocks=1), _image(2, 75)
    else:  # torchvision's Inception-v3 at 299x299
        model, x = Inception3(num_classes=1000), _image(8, 299)
    return model, (x,), ("pixels",)


ZOO: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel("gpt2", "decoder", _gpt2),
        ZooModel("llama", "decoder", _llama),
        ZooModel("bert", "encoder", _bert),
        ZooModel("vit", "vision transformer", _vit),
        ZooModel("resnet", "cnn", _resnet),
        ZooModel("convnext", "cnn", _convnext),
        ZooModel("inception", "cnn", _inception, dtype=torch.bfloat16, channels_last=True),
    )
}


def _spec(t: Tensor) -> str:
    dtype = str(t.dtype).removeprefix("torch.")
    return f"{dtype}[{','.join(str(d) for d in t.shape)}]"


def build(name: str, size: str = "small", seed: int = 0, batch: int | None = None) -> ZooCase:
    """The model `name` at `size` ("small" or "real"), weights and inputs from `seed`; `batch`
    replaces the inputs' batch size (their first dim)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    spec = ZOO[name]
    torch.manual_seed(seed)
    module, inputs, _ = spec.make(size)
    if batch is not None:
        inputs = tuple(_rebatch(t, batch) for t in inputs)
    module = module.eval()
    layouts = ["contiguous"] * len(inputs)
    if spec.dtype != torch.float32:
        module = module.to(spec.dtype)
        inputs = tuple(t.to(spec.dtype) if t.is_floating_point() else t for t in inputs)
    if spec.channels_last:
        module = module.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        inputs = tuple(t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inputs)
        layouts = ["channels_last" if t.dim() == 4 else "contiguous" for t in inputs]
    for p in module.parameters():
        p.requires_grad_(False)
    return ZooCase(
        name=name,
        size=size,
        module=module,
        inputs=inputs,
        specs=tuple(_spec(t) for t in inputs),
        layouts=tuple(layouts),
        dtype=spec.dtype,
    )


def _rebatch(t: Tensor, batch: int) -> Tensor:
    """The first `batch` rows of `t` repeated along dim 0 (token ids stay in the vocabulary)."""
    reps = -(-batch // t.shape[0])
    return t.repeat(reps, *([1] * (t.dim() - 1)))[:batch].contiguous()


def describe(case: ZooCase) -> dict[str, Any]:
    """What the case is, for the results JSON."""
    return {
        "model": case.name,
        "size": case.size,
        "family": ZOO[case.name].family,
        "inputs": list(case.specs),
        "layouts": list(case.layouts),
        "dtype": str(case.dtype).removeprefix("torch."),
        "parameters": sum(p.numel() for p in case.module.parameters()),
    }
