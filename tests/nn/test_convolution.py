"""Conv1d, Conv2d and MaxPool2d beyond the layer comparisons of test_layers.py: PyTorch's reprs,
initialisation and error messages, and a small CNN (the digits example's shape: 8x8 images, one
channel) trained eagerly and with its loss compiled by the numba CPU backend, to the same losses."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.compile import CompileWarning

REPRS = [
    "Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1))",
    "Conv1d(2, 4, kernel_size=(3,), stride=(2,), padding=(1,), bias=False)",
    "Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), padding=same, dilation=(2, 2), groups=2)",
    "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
    "MaxPool2d(kernel_size=(2, 3), stride=1, padding=1, dilation=1, ceil_mode=True)",
]


@pytest.mark.parametrize("text", REPRS)
def test_repr_is_pytorchs(text):
    assert repr(eval("nn." + text.replace("=same", "='same'"))) == text


def test_initialisation_has_pytorchs_bounds():
    jg.manual_seed(0)
    conv = nn.Conv2d(4, 16, 3)
    bound = 1 / np.sqrt(4 * 9)  # kaiming_uniform_ with a=sqrt(5) gives 1/sqrt(fan_in), as the bias's
    for param in (conv.weight, conv.bias):
        values = param.detach().numpy()
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound
    assert tuple(conv.weight.shape) == (16, 4, 3, 3)


ERRORS = [
    lambda F: F.conv2d(F.x[0, 0], F.w),
    lambda F: F.conv2d(F.x[:, :1], F.w),
    lambda F: F.conv2d(F.x, F.w[:3, :1], groups=2),
    lambda F: F.conv2d(F.x[:, :, :2, :2], F.w),
    lambda F: F.conv2d(F.x, F.w, F.w[:3, 0, 0, 0]),
    lambda F: F.conv2d(F.x, F.w, stride=0),
    lambda F: F.conv2d(F.x, F.w, padding=-1),
    lambda F: F.conv2d(F.x, F.w, stride=2, padding="same"),
    lambda F: F.conv2d(F.x, F.w, padding="full"),
    lambda F: F.conv1d(F.x, F.w[:, :, 0]),
    lambda F: F.max_pool2d(F.x, 3, padding=2),
    lambda F: F.max_pool2d(F.x[0, 0], 3),
    lambda F: F.max_pool2d(F.x[:, :, :2, :2], 3),
]


class _Args:
    """``F.conv2d`` and friends of one library, with ``x`` (2, 2, 5, 5) and ``w`` (8, 2, 3, 3)."""

    def __init__(self, functional, tensor):
        self.__dict__.update({name: getattr(functional, name) for name in ("conv1d", "conv2d", "max_pool2d")})
        self.x, self.w = tensor(np.ones((2, 2, 5, 5))), tensor(np.ones((8, 2, 3, 3)))


@needs_torch
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_bad_arguments_give_pytorchs_messages(case):
    call = ERRORS[case]
    with pytest.raises(RuntimeError) as theirs:
        call(_Args(torch.nn.functional, torch.tensor))
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
        call(_Args(F, jg.tensor))


def test_uneven_same_padding_is_refused_with_a_way_out():
    with pytest.raises(NotImplementedError, match="pad the input first"):
        F.conv2d(jg.ones(1, 1, 4, 4), jg.ones(1, 1, 2, 2), padding="same")


def test_unfold_and_fold_are_each_others_adjoint():
    """<unfold(x), c> = <x, fold(c)>: the identity their gradients rely on."""
    rng = np.random.default_rng(1)
    x, c = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((2, 3 * 4, 9))
    args = dict(kernel_size=2, dilation=(1, 2), padding=1, stride=2)
    left = (F.unfold(jg.tensor(x), **args) * jg.tensor(c)).sum().item()
    right = (jg.tensor(x) * F.fold(jg.tensor(c), (5, 6), **args)).sum().item()
    assert abs(left - right) < 1e-10


class CNN(nn.Module):
    """The digits example's network: conv, relu, max pool, flatten, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        self.out = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: jg.Tensor) -> jg.Tensor:
        return self.out(self.features(x))


def _train(compiled: bool, steps: int = 6) -> tuple[list[float], dict]:
    rng = np.random.default_rng(2)
    images = jg.tensor(rng.standard_normal((32, 1, 8, 8)).astype(np.float32))  # one batch, learnt by heart
    labels = jg.tensor(rng.integers(0, 10, 32))
    jg.manual_seed(0)
    model = CNN()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    loss_of = jg.compile(lambda x, y: criterion(model(x), y), cache=False) if compiled else \
        (lambda x, y: criterion(model(x), y))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(images, labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {name: p.detach().numpy().copy() for name, p in model.named_parameters()}


def test_a_small_cnn_trains_compiled_as_eager():
    eager, eager_params = _train(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # no eager fallback: every op lowers
        compiled, params = _train(True)
    assert eager[-1] < eager[0]
    np.testing.assert_allclose(compiled, eager, rtol=2e-5)
    for name, value in eager_params.items():
        np.testing.assert_allclose(params[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def test_operands_of_different_dtypes_are_refused():
    with pytest.raises(RuntimeError, match=r"Input type \(float32\) and weight type \(float64\) should be the same"):
        F.conv2d(jg.ones(1, 1, 4, 4), jg.ones(1, 1, 3, 3, dtype=jg.float64))
    with pytest.raises(RuntimeError, match=r"Input type \(float64\) and bias type \(float32\)"):
        F.conv1d(jg.ones(1, 1, 4, dtype=jg.float64), jg.ones(2, 1, 3, dtype=jg.float64), jg.ones(2))


@pytest.mark.parametrize("spatial, groups", [(2, 1), (1, 2)])
def test_a_batch_of_no_samples_convolves_to_an_empty_batch(spatial, groups):
    """PyTorch convolves a batch of 0 (until 2026-11-28 the forward's and backward's reshapes to -1 were
    ambiguous for it and raised); the weight's gradient is zeros."""
    x = jg.ones((0, 4) + (5,) * spatial, dtype=jg.float64, requires_grad=True)
    w = jg.ones((6, 4 // groups) + (3,) * spatial, dtype=jg.float64, requires_grad=True)
    y = (F.conv2d if spatial == 2 else F.conv1d)(x, w, padding=1, groups=groups)
    assert tuple(y.shape) == (0, 6) + (5,) * spatial
    (y * y).sum().backward()
    assert tuple(x.grad.shape) == tuple(x.shape) and not w.grad.numpy().any()
