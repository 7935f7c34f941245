"""``nn.utils.clip_grad_norm_`` and ``clip_grad_value_`` against PyTorch: the total norm returned, the
gradients scaled in place (the same ``.grad`` objects), norms 1, 2, 3, inf, -inf and 0, and the non-finite error."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad
from jitgrad.nn.utils import clip_grad_norm_, clip_grad_value_


def _parameters(seed: int = 0) -> tuple[list[jitgrad.Tensor], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    grads = [rng.normal(size=(3, 4)) * 3, rng.normal(size=5), rng.normal(size=())]
    params = []
    for g in grads:
        p = jitgrad.zeros(*g.shape, dtype=jitgrad.float64, requires_grad=True)
        p.grad = jitgrad.from_numpy(g.copy())
        params.append(p)
    return params, grads


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_scales_in_place(norm_type, max_norm):
    params, grads = _parameters()
    held = [p.grad for p in params]
    flat = np.concatenate([g.ravel() for g in grads])
    expected = np.abs(flat).max() if norm_type == math.inf else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    np.testing.assert_allclose(total.item(), expected, rtol=1e-12)
    scale = min(max_norm / (expected + 1e-6), 1.0)
    for p, g, h in zip(params, grads, held):
        assert p.grad is h
        np.testing.assert_allclose(p.grad.numpy(), g * scale, rtol=1e-12)


def test_clip_grad_value_and_a_single_tensor():
    params, grads = _parameters()
    clip_grad_value_(params, 0.5)
    for p, g in zip(params, grads):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.5, 0.5))
    p = params[0]
    before = np.linalg.norm(p.grad.numpy())
    assert clip_grad_norm_(p, 1.0).item() == pytest.approx(before, rel=1e-12)
    assert np.linalg.norm(p.grad.numpy()) == pytest.approx(1.0, rel=1e-5)


def test_no_gradients_and_non_finite_norms():
    assert clip_grad_norm_([jitgrad.zeros(2, requires_grad=True)], 1.0).item() == 0.0
    params, _ = _parameters()
    params[1].grad[0] = float("nan")
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)


def test_same_as_pytorch():
    torch = pytest.importorskip("torch")
    for norm_type in (2.0, math.inf, -math.inf, 0.0):  # -inf once gave 1.0, and 0 a ZeroDivisionError
        params, grads = _parameters(1)
        theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
        for t, g in zip(theirs, grads):
            t.grad = torch.from_numpy(g.copy())
        ours_total = clip_grad_norm_(params, 2.0, norm_type=norm_type)
        their_total = torch.nn.utils.clip_grad_norm_(theirs, 2.0, norm_type=norm_type)
        np.testing.assert_allclose(ours_total.item(), their_total.item(), rtol=1e-12)
        for p, t in zip(params, theirs):
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    params, grads = _parameters(2)
    theirs = [torch.from_numpy(g.copy()) for g in grads]
    clip_grad_value_(params, 0.3)
    for p, t in zip(params, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), t.clamp(-0.3, 0.3).numpy())
