"""Ops fed infinities, NaN, signed zeros and extreme values: each test pins a result an implementation
trick once got wrong (exact for ordinary finite values only), with PyTorch's value written out, so the
test needs no PyTorch to run."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
import jitgrad.nn.functional as F


def test_max_pool2d_padding_never_wins_a_window_of_minus_infinity():
    """A window that starts in the padding and holds only -inf: the maximum is its first element in the
    plane (PyTorch's index), not the padding, whose position was clamped to 0, sending every such
    window's gradient to element 0."""
    x = jg.full((1, 1, 4, 4), -np.inf, dtype=jg.float64, requires_grad=True)
    values, indices = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
    values.sum().backward()
    assert indices.numpy()[0, 0].tolist() == [[0, 1, 3], [4, 5, 7], [12, 13, 15]]
    assert np.all(values.detach().numpy() == -np.inf)
    assert x.grad.numpy()[0, 0].tolist() == [[1, 1, 0, 1], [1, 1, 0, 1], [0, 0, 0, 0], [1, 1, 0, 1]]


def test_clamp_with_a_nan_tensor_limit_gives_nan():
    """PyTorch's tensor clamp is ``min(max(x, min), max)``, whose NaN spreads: a NaN limit gives NaN,
    with no gradient anywhere. Comparing with the limit (false for NaN) kept ``x`` there instead."""
    nan = float("nan")
    x = jg.tensor([1.0, -1.0, nan, 2.0], dtype=jg.float64, requires_grad=True)
    low = jg.tensor([nan, 0.0, 0.0, 0.0], dtype=jg.float64, requires_grad=True)
    high = jg.tensor([3.0, 3.0, 3.0, nan], dtype=jg.float64, requires_grad=True)
    out = jg.clamp(x, low, high)
    out.sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), [nan, 0.0, nan, nan])
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert low.grad.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert high.grad.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_entr_of_nan_is_nan():
    """``x > 0`` is false at NaN, which sent it to the negative inputs' ``-inf``; PyTorch gives NaN."""
    out = jg.special.entr(jg.tensor([float("nan"), 0.0, -1.0, 2.0], dtype=jg.float64))
    np.testing.assert_array_equal(out.numpy(), [np.nan, 0.0, -np.inf, -2.0 * np.log(2.0)])


def test_hardswish_gradient_at_infinities():
    """PyTorch's gradient is 0 at -inf and 1 at +inf; the untaken middle branch ``x (x + 3) / 6`` sent
    ``0 * inf``, NaN, through ``where``."""
    x = jg.tensor([-np.inf, np.inf, 1.5], dtype=jg.float64, requires_grad=True)
    F.hardswish(x).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0]


def test_xlog1py_gradient_at_zero_input():
    """PyTorch's gradient in ``input`` is ``log1p(other)`` at an input of 0 too, and 0 there where
    ``other <= -1``; a product masked by ``where`` gave 0 everywhere at 0 (wrong at other = 0.5) and
    ``0 * -inf``, NaN, at other = -1."""
    x = jg.tensor([0.0, 0.0, 1.0], dtype=jg.float64, requires_grad=True)
    y = jg.tensor([0.5, -1.0, 0.5], dtype=jg.float64, requires_grad=True)
    jg.special.xlog1py(x, y).sum().backward()
    assert x.grad.tolist() == [np.log1p(0.5), 0.0, np.log1p(0.5)]
    x = jg.tensor([0.0, 1.0], dtype=jg.float64, requires_grad=True)
    jg.special.xlog1py(x, -1.0).sum().backward()
    assert x.grad.tolist() == [0.0, -np.inf]


def test_cross_entropy_skips_an_ignored_row_of_minus_infinity_logits():
    """A fully masked row (all logits -inf, log-probabilities NaN) whose target is ignored adds nothing,
    as in PyTorch, with class weights or label smoothing too: its terms were multiplied by its weight
    0, and NaN * 0 made the whole loss NaN."""
    logits = jg.tensor([[1.0, 2.0, 0.5], [-np.inf, -np.inf, -np.inf], [2.0, 0.5, 1.0]], dtype=jg.float64)
    target, kept = jg.tensor([1, -100, 0]), [0, 2]
    weight = jg.tensor([1.0, 2.0, 0.5], dtype=jg.float64)
    for options in ({"weight": weight}, {"label_smoothing": 0.1}, {"weight": weight, "label_smoothing": 0.1}):
        with np.errstate(invalid="ignore"):
            loss = F.cross_entropy(logits, target, **options)
            rows = F.cross_entropy(logits, target, reduction="none", **options)
        np.testing.assert_allclose(loss.numpy(), F.cross_entropy(logits[kept], target[kept], **options).numpy())
        assert rows.numpy()[1] == 0.0


def test_relu_keeps_negative_zero():
    """PyTorch's relu(-0.0) is -0.0, and so is the compiled kernels' ``max(x, 0)``; numpy's
    ``maximum(x, 0)`` made eager's +0.0."""
    out = jg.relu(jg.tensor([-0.0, -2.0, np.nan], dtype=jg.float64)).numpy()
    assert np.signbit(out).tolist() == [True, False, False] and np.isnan(out[2])


def test_multi_margin_loss_of_an_infinite_score_of_the_class():
    """The class's own term, ``margin - x[y] + x[y]``, is NaN at an infinite ``x[y]``; it was dropped by
    multiplying it by 0 (NaN), where PyTorch's loss is inf (-inf score of the class) or 0 (+inf)."""
    x = jg.tensor([[0.5, -np.inf, 3.0], [1.0, 2.0, np.inf]], dtype=jg.float64)
    with np.errstate(invalid="ignore"):
        loss = F.multi_margin_loss(x, jg.tensor([1, 2]), reduction="none")
    assert loss.tolist() == [np.inf, 0.0]


def test_smooth_l1_and_huber_gradients_at_an_infinite_difference():
    """PyTorch's gradient is the sign of the difference there; the untaken quadratic branch sent
    ``0 * inf``, NaN, through ``where``."""
    for loss in (F.smooth_l1_loss, F.huber_loss):
        x = jg.tensor([np.inf, -np.inf, 1.0], dtype=jg.float64, requires_grad=True)
        y = jg.tensor([2.0, 0.0, 1.5], dtype=jg.float64, requires_grad=True)
        loss(x, y, reduction="sum").backward()
        assert x.grad.tolist() == [1.0, -1.0, -0.5] and y.grad.tolist() == [-1.0, 1.0, 0.5]


def test_prelu_weight_gradient_with_a_positive_infinity():
    """PyTorch's weight gradient sums ``g * x`` over ``x <= 0`` alone; ``weight * x``'s untaken branch
    at x = inf gave it ``0 * inf``, NaN."""
    x = jg.tensor([np.inf, -1.0, 2.0], dtype=jg.float64, requires_grad=True)
    weight = jg.tensor([0.25], dtype=jg.float64, requires_grad=True)
    F.prelu(x, weight).sum().backward()
    assert weight.grad.tolist() == [-1.0] and x.grad.tolist() == [1.0, 0.25, 1.0]


def test_prod_gradient_beside_a_zero_is_zero_however_large_the_rest():
    """PyTorch's [0, 0, inf]: the others' product of a nonzero element beside a zero is 0; the rest's
    product overflowed to inf first, so it was ``inf * 0``, NaN."""
    x = jg.tensor([[1e200], [1e200], [0.0]], dtype=jg.float64, requires_grad=True)
    x.prod(0).sum().backward()
    assert x.grad.flatten().tolist() == [0.0, 0.0, np.inf]
    y = jg.tensor([2.0, 0.0, 3.0], dtype=jg.float64, requires_grad=True)
    (gradient,) = jg.autograd.grad(y.prod(), y, create_graph=True)
    assert gradient.tolist() == [0.0, 6.0, 0.0]
    assert jg.autograd.grad(gradient[1], y)[0].tolist() == [3.0, 0.0, 2.0]
