"""Test-session set-up: without a GPU, generated Triton runs under Triton's CPU interpreter.

TRITON_INTERPRET must be set before anything imports triton (a kernel decorated in compiled mode
cannot be called by an interpreted one), so it is set here, before any test module is imported.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
