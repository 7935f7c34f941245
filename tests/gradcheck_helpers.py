"""Finite differences and comparison helpers shared by the gradient tests.

Everything here works on numpy arrays, so that the reference a test compares with never goes through
jitgrad's autograd.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-6


def numerical_gradient(scalar_fn: Callable[[list[np.ndarray]], float], arrays: Sequence[np.ndarray],
                       wrt: Sequence[int], eps: float = EPS) -> list[np.ndarray]:
    """The gradient of ``scalar_fn(arrays)`` with respect to ``arrays[i]`` for each ``i`` in ``wrt``, by
    central differences: (f(a + eps) - f(a - eps)) / 2 eps, one element at a time."""
    arrays = [np.array(a, copy=True) for a in arrays]
    grads = []
    for i in wrt:
        base = arrays[i]
        grad = np.zeros(base.shape, dtype=np.float64)
        for k in range(base.size):
            original = base.flat[k]
            base.flat[k] = original + eps
            plus = float(scalar_fn(arrays))
            base.flat[k] = original - eps
            minus = float(scalar_fn(arrays))
            base.flat[k] = original
            grad.flat[k] = (plus - minus) / (2.0 * eps)
        grads.append(grad)
    return grads


def assert_close(actual, expected, rtol: float = RTOL, atol: float = ATOL, what: str = "") -> None:
    """Same shape and close values (``None`` stands for a gradient of zeros of ``expected``'s shape)."""
    expected = np.asarray(expected)
    actual = np.zeros_like(expected) if actual is None else np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)
