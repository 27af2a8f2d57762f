"""An Inception-v3 network after torchvision's `models/inception.py` (Inception3 and its blocks).

torchvision cannot be installed next to the CPU build of torch, so the definition is followed here:
the stem (`Conv2d_1a_3x3` .. `maxpool2`), InceptionA x3, InceptionB, InceptionC x4, InceptionD,
InceptionE x2, adaptive average pool and the classifier, inference only (no auxiliary head, dropout
is the identity in eval). Every branch pool of A, C and E is torchvision's
`F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)`.

`width` scales every channel count (torchvision's are `width=1.0`), so that the zoo's small
configuration keeps the whole structure (every block, every branch) at a size the Triton
interpreter runs in seconds; `blocks` keeps the first few blocks of each kind for the same reason.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _c(channels: int, width: float) -> int:
    return max(4, round(channels * width))


class BasicConv2d(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.bn(self.conv(x)))


class InceptionA(nn.Module):
    def __init__(self, in_channels: int, pool_features: int, w: float) -> None:
        super().__init__()
        self.out_channels = _c(64, w) + _c(64, w) + _c(96, w) + pool_features
        self.branch1x1 = BasicConv2d(in_channels, _c(64, w), kernel_size=1)
        self.branch5x5_1 = BasicConv2d(in_channels, _c(48, w), kernel_size=1)
        self.branch5x5_2 = BasicConv2d(_c(48, w), _c(64, w), kernel_size=5, padding=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, _c(64, w), kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(_c(64, w), _c(96, w), kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(_c(96, w), _c(96, w), kernel_size=3, padding=1)
        self.branch_pool = BasicConv2d(in_channels, pool_features, kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        b1 = self.branch1x1(x)
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return torch.cat([b1, b5, b3, bp], 1)


class InceptionB(nn.Module):
    def __init__(self, in_channels: int, w: float) -> None:
        super().__init__()
        self.out_channels = _c(384, w) + _c(96, w) + in_channels
        self.branch3x3 = BasicConv2d(in_channels, _c(384, w), kernel_size=3, stride=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, _c(64, w), kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(_c(64, w), _c(96, w), kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(_c(96, w), _c(96, w), kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3(x)
        bd = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return torch.cat([b3, bd, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionC(nn.Module):
    def __init__(self, in_channels: int, channels_7x7: int, w: float) -> None:
        super().__init__()
        c7 = channels_7x7
        self.out_channels = 4 * _c(192, w)
        self.branch1x1 = BasicConv2d(in_channels, _c(192, w), kernel_size=1)
        self.branch7x7_1 = BasicConv2d(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = BasicConv2d(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = BasicConv2d(c7, _c(192, w), kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = BasicConv2d(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = BasicConv2d(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = BasicConv2d(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = BasicConv2d(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = BasicConv2d(c7, _c(192, w), kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = BasicConv2d(in_channels, _c(192, w), kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        b1 = self.branch1x1(x)
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        bd = self.branch7x7dbl_1(x)
        for conv in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            bd = conv(bd)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return torch.cat([b1, b7, bd, bp], 1)


class InceptionD(nn.Module):
    def __init__(self, in_channels: int, w: float) -> None:
        super().__init__()
        self.out_channels = _c(320, w) + _c(192, w) + in_channels
        self.branch3x3_1 = BasicConv2d(in_channels, _c(192, w), kernel_size=1)
        self.branch3x3_2 = BasicConv2d(_c(192, w), _c(320, w), kernel_size=3, stride=2)
        self.branch7x7x3_1 = BasicConv2d(in_channels, _c(192, w), kernel_size=1)
        self.branch7x7x3_2 = BasicConv2d(_c(192, w), _c(192, w), kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = BasicConv2d(_c(192, w), _c(192, w), kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = BasicConv2d(_c(192, w), _c(192, w), kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return torch.cat([b3, b7, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionE(nn.Module):
    def __init__(self, in_channels: int, w: float) -> None:
        super().__init__()
        self.out_channels = _c(320, w) + 4 * _c(384, w) + _c(192, w)
        self.branch1x1 = BasicConv2d(in_channels, _c(320, w), kernel_size=1)
        self.branch3x3_1 = BasicConv2d(in_channels, _c(384, w), kernel_size=1)
        self.branch3x3_2a = BasicConv2d(_c(384, w), _c(384, w), kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = BasicConv2d(_c(384, w), _c(384, w), kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = BasicConv2d(in_channels, _c(448, w), kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(_c(448, w), _c(384, w), kernel_size=3, padding=1)
        self.branch3x3dbl_3a = BasicConv2d(_c(384, w), _c(384, w), kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = BasicConv2d(_c(384, w), _c(384, w), kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = BasicConv2d(in_channels, _c(192, w), kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        b1 = self.branch1x1(x)
        b3 = self.branch3x3_1(x)
        b3 = torch.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        bd = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        bd = torch.cat([self.branch3x3dbl_3a(bd), self.branch3x3dbl_3b(bd)], 1)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return torch.cat([b1, b3, bd, bp], 1)


class Inception3(nn.Module):
    """torchvision's Inception3 in eval (no aux logits); `width` scales channels, `blocks` caps how
    many A and C blocks are kept (torchvision: 3 and 4), B, D and E blocks follow in order."""

    def __init__(self, num_classes: int = 1000, width: float = 1.0, blocks: int = 4) -> None:
        super().__init__()
        w = width
        self.Conv2d_1a_3x3 = BasicConv2d(3, _c(32, w), kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = BasicConv2d(_c(32, w), _c(32, w), kernel_size=3)
        self.Conv2d_2b_3x3 = BasicConv2d(_c(32, w), _c(64, w), kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = BasicConv2d(_c(64, w), _c(80, w), kernel_size=1)
        self.Conv2d_4a_3x3 = BasicConv2d(_c(80, w), _c(192, w), kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        mixed: list[nn.Module] = []
        ch = _c(192, w)
        for pool in (32, 64, 64)[: max(1, min(3, blocks))]:
            mixed.append(InceptionA(ch, _c(pool, w), w))
            ch = mixed[-1].out_channels  # type: ignore[assignment]
        mixed.append(InceptionB(ch, w))
        ch = mixed[-1].out_channels  # type: ignore[assignment]
        for c7 in (128, 160, 160, 192)[: max(1, min(4, blocks))]:
            mixed.append(InceptionC(ch, _c(c7, w), w))
            ch = mixed[-1].out_channels  # type: ignore[assignment]
        mixed.append(InceptionD(ch, w))
        ch = mixed[-1].out_channels  # type: ignore[assignment]
        for _ in range(2 if blocks >= 2 else 1):
            mixed.append(InceptionE(ch, w))
            ch = mixed[-1].out_channels  # type: ignore[assignment]
        self.mixed = nn.Sequential(*mixed)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(ch, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
        x = self.maxpool1(x)
        x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x)))
        x = self.mixed(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))
