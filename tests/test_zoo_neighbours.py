"""Model families beyond the zoo, small, end to end (slow): each one a class of program the zoo's
seven did not have, and each one refused by an earlier capture.

- BART: decoder inputs are the tokens shifted right (an index read under a mask);
- DeBERTa-v2: log-spaced relative positions (sign, abs and a log of `i - j` as an index);
- BEiT: a relative position index with a class token (a chain of wheres as an index);
- Funnel: a relative shift through views of views (digits of digits in every index);
- SwinV2: patch merging (a concatenation read by a linear layer);
- Phi: partial rotary embeddings of q and k (the peak-memory guard, counted as Inductor counts it);
- T5: encoder and decoder, relative-position buckets.

For each: the capture validates, the reference equals eager, `fuseopt run --backend triton`
matches the reference, and fuseopt's generated kernels and bytes are at most Inductor's
(`tests/test_zoo.py`'s checks). Weights are random from configs; nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from fuseopt.capture import capture_program
from fuseopt.ir.serialize import dump_json
from tests.test_zoo import (
    check_capture_validates,
    check_kernels_and_bytes_at_most_inductors,
    check_reference_equals_eager,
    check_triton_run_matches_the_reference,
)
from tests.zoo.models import Logits, ZooCase

pytestmark = pytest.mark.slow


class _EncoderDecoder(nn.Module):
    """`model(input_ids=ids, decoder_input_ids=dec)`'s last hidden state."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: Tensor, dec: Tensor) -> Tensor:
        return self.model(input_ids=ids, decoder_input_ids=dec).last_hidden_state  # type: ignore[no-any-return]


def _ids(vocab: int = 128) -> Tensor:
    return torch.randint(0, vocab, (2, 16))


def _image() -> Tensor:
    return torch.randn(2, 3, 32, 32)


_TEXT = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 64,
         "vocab_size": 128, "max_position_embeddings": 64}  # fmt: skip
_SEQ2SEQ = {"d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 4,
            "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "vocab_size": 128,
            "max_position_embeddings": 64}  # fmt: skip


def _bart() -> tuple[nn.Module, tuple[Tensor, ...]]:
    from transformers import BartConfig, BartModel

    return Logits(BartModel(BartConfig(**_SEQ2SEQ)), "last_hidden_state"), (_ids(),)


def _deberta_v2() -> tuple[nn.Module, tuple[Tensor, ...]]:
    from transformers import DebertaV2Config, DebertaV2Model

    cfg = DebertaV2Config(**_TEXT, relative_attention=True, position_buckets=8, pos_att_type=["p2c", "c2p"])
    return Logits(DebertaV2Model(cfg), "last_hidden_state"), (_ids(),)


def _beit() -> tuple[nn.Module, tuple[Tensor, ...]]:
    from transformers import BeitConfig, BeitModel

    cfg = BeitConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                     image_size=32, patch_size=8, use_relative_position_bias=True)  # fmt: skip
    return Logits(BeitModel(cfg, add_pooling_layer=False), "last_hidden_state"), (_image(),)


def _funnel() -> tuple[nn.Module, tuple[Tensor, ...]]:
    from transformers import FunnelConfig, FunnelModel

    cfg = FunnelConfig(d_model=32, n_head=4, d_head=8, d_inner=64, block_sizes=[1, 1], vocab_size=128)
    return Logits(FunnelModel(cfg), "last_hidden_state"), (_ids(),)


def _swinv2() -> tuple[nn.Module, tuple[Tensor, ...]]:
    from transformers import Swinv2Config, Swinv2Model

    cfg = Swinv2Config(
        image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4
    )
    return Logits(Swinv2Model(cfg), "last_hidden_state"), (_image(),)


def _phi() -> tuple[nn.Module, tuple[Tensor, ...]]:
    from transformers import PhiConfig, PhiForCausalLM

    return Logits(PhiForCausalLM(PhiConfig(**_TEXT)), "logits"), (_ids(),)


def _t5() -> tuple[nn.Module, tuple[Tensor, ...]]:
    from transformers import T5Config, T5Model

    cfg = T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4, vocab_size=128)
    return _EncoderDecoder(T5Model(cfg)), (_ids(), _ids())


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[Tensor, ...]]]] = {
    "bart": _bart,
    "deberta_v2": _deberta_v2,
    "beit": _beit,
    "funnel": _funnel,
    "swinv2": _swinv2,
    "phi": _phi,
    "t5": _t5,
}


def _case(name: str) -> ZooCase:
    torch.manual_seed(0)
    module, inputs = MODELS[name]()
    module = module.eval()
    for p in module.parameters():
        p.requires_grad_(False)
    specs = tuple(f"{str(t.dtype).removeprefix('torch.')}[{','.join(map(str, t.shape))}]" for t in inputs)
    return ZooCase(name, "small", module, inputs, specs, ("contiguous",) * len(inputs), torch.float32)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_family_end_to_end(name: str, tmp_path: Path) -> None:
    case = _case(name)
    cap: Any = capture_program(case.module, *case.inputs, name=name)
    check_capture_validates(name, cap)
    check_reference_equals_eager(case, cap)
    path = tmp_path / f"{name}.json"
    path.write_text(dump_json(cap.graph), encoding="utf-8")
    check_triton_run_matches_the_reference(path)
    check_kernels_and_bytes_at_most_inductors(cap)
