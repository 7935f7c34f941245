"""The numba backend hands a step's output arrays out again on later calls (no allocation in the
steady state), but only an array nobody kept: a ``.grad``, a loss value, a view or a numpy array the
caller still holds keeps its values after the next call. Two small kernels, shared by the tests."""
from __future__ import annotations

import weakref

import numpy as np
import pytest

import jitgrad as jg

BACKEND = "numba_cpu"  # read by conftest.compile_backend


def zeroing_step(x, w):
    w.grad = None
    loss = (x * w).sin().sum()
    loss.backward()
    return loss


def accumulating_step(x, w):
    loss = (x * w).sin().sum()
    loss.backward()
    return loss


@pytest.fixture(scope="module")
def compiled_zeroing():
    return jg.compile(zeroing_step, fullgraph=True, cache=False)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 4)), rng.standard_normal((3, 4))


def _expected(x, w):
    """zeroing_step's loss and gradient, by hand."""
    return np.sin(x * w).sum(), np.cos(x * w) * x


def test_kept_gradient_and_loss_keep_their_values_after_later_calls(compiled_zeroing):
    x0, w0 = _inputs(0)
    w = jg.tensor(w0, requires_grad=True)
    compiled_zeroing(jg.tensor(x0), w)  # traced apart: no .grad to replace yet
    loss0 = compiled_zeroing(jg.tensor(x0), w)
    grad0, as_numpy, view = w.grad, w.grad.numpy(), w.grad[1:]
    loss_value, grad_values = _expected(x0, w0)
    for seed in range(1, 5):  # a different x each call: a reused array would show the later gradient
        x, _ = _inputs(seed)
        loss = compiled_zeroing(jg.tensor(x), w)
        np.testing.assert_allclose(loss.item(), _expected(x, w0)[0], rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), _expected(x, w0)[1], rtol=1e-12)
        assert w.grad is not grad0
    np.testing.assert_allclose(loss0.item(), loss_value, rtol=1e-12)
    np.testing.assert_allclose(grad0.numpy(), grad_values, rtol=1e-12)
    np.testing.assert_allclose(as_numpy, grad_values, rtol=1e-12)
    np.testing.assert_allclose(view.numpy(), grad_values[1:], rtol=1e-12)


def test_a_gradient_only_a_view_or_torch_holds_keeps_its_values(compiled_zeroing):
    x0, w0 = _inputs(0)
    w = jg.tensor(w0, requires_grad=True)
    compiled_zeroing(jg.tensor(x0), w)
    compiled_zeroing(jg.tensor(x0), w)
    held = [w.grad.numpy()[:, 1:]]  # a numpy view: its base is the output array
    try:
        import torch
        held.append(torch.from_numpy(w.grad.numpy()))
    except ImportError:
        pass
    expected = _expected(x0, w0)[1]
    for seed in range(1, 4):
        compiled_zeroing(jg.tensor(_inputs(seed)[0]), w)
    np.testing.assert_allclose(held[0], expected[:, 1:], rtol=1e-12)
    if len(held) > 1:
        np.testing.assert_allclose(held[1].numpy(), expected, rtol=1e-12)


def test_steady_state_reuses_the_outputs_nobody_kept(compiled_zeroing):
    x0, w0 = _inputs(0)
    w = jg.tensor(w0, requires_grad=True)
    for _ in range(2):  # the first call (no .grad yet) and the second (one to replace) trace apart
        compiled_zeroing(jg.tensor(x0), w)
    handed_out = weakref.ref(w.grad.numpy())
    for _ in range(2):  # the loss values are dropped, each .grad replaced by the next
        compiled_zeroing(jg.tensor(x0), w)
    assert handed_out() is w.grad.numpy(), "a step whose outputs nobody keeps allocated new ones"
    np.testing.assert_allclose(w.grad.numpy(), _expected(x0, w0)[1], rtol=1e-12)


def test_accumulated_gradients_with_the_previous_one_kept():
    """No zero_grad: the gradient read at a call is an input, the new one an output, written into the
    kept ``.grad`` as eager's AccumulateGrad adds into it (a held ``.grad`` sees each sum), while the
    kernel's output arrays go on being reused."""
    step = jg.compile(accumulating_step, fullgraph=True, cache=False)
    x0, w0 = _inputs(0)
    w = jg.tensor(w0, requires_grad=True)
    kept, total = [], np.zeros_like(w0)
    for seed in range(4):
        x = _inputs(seed)[0]
        step(jg.tensor(x), w)
        total = total + _expected(x, w0)[1]
        np.testing.assert_allclose(w.grad.numpy(), total, rtol=1e-12)
        kept.append(w.grad)
    assert all(grad is kept[0] for grad in kept)
    np.testing.assert_allclose(kept[0].numpy(), total, rtol=1e-12)
