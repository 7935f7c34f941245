"""What the Tensor API tests share: PyTorch as an optional oracle.

Expressions shared by both libraries are written once with ``M`` standing for the module.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad


def torch_or_skip():
    """PyTorch, or a skip of the calling test where it is not installed."""
    return pytest.importorskip("torch")


def both(expr: str):
    """``expr`` evaluated with ``M`` bound to jitgrad, then to torch."""
    torch = torch_or_skip()
    return eval(expr, {"M": jitgrad, "np": np}), eval(expr, {"M": torch, "np": np})


def dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]
