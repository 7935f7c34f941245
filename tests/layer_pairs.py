"""The same layer in jitgrad and in PyTorch, with the same weights: PyTorch's are copied into
jitgrad's through ``load_state_dict`` (which these tests thereby exercise as well)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

needs_torch = pytest.mark.skipif(torch is None,
                                 reason="compares with PyTorch, which is not installed: pip install torch==2.13.0")


def same_weights(ours: jg.nn.Module, theirs: "torch.nn.Module") -> None:
    """Both in float64, ours holding PyTorch's values."""
    ours.double()
    theirs.double()
    ours.load_state_dict({name: jg.tensor(value.detach().numpy()) for name, value in theirs.state_dict().items()})


def as_numpy(value) -> np.ndarray:
    return np.asarray(value.detach().numpy() if hasattr(value, "detach") else value)


def assert_close(ours, theirs, tolerance: float = 1e-10, what: str = "") -> None:
    np.testing.assert_allclose(as_numpy(ours), as_numpy(theirs), rtol=tolerance, atol=tolerance, err_msg=what)
