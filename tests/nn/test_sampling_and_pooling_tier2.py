"""Adaptive max pooling and ``pdist`` against PyTorch (values, positions, gradients), and the two
random functions, ``gumbel_softmax`` and ``alpha_dropout``, by their laws and structure (their draws
come from jitgrad's generator, so their values differ from PyTorch's)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from layer_pairs import assert_close, needs_torch, torch

import jitgrad as jg
import jitgrad.nn.functional as F

RNG = np.random.default_rng(11)
IMAGES = RNG.standard_normal((2, 3, 7, 5))
WEIGHTS = RNG.standard_normal((2, 3, 7, 5))
ROWS = RNG.standard_normal((5, 3))
ROWS[3] = ROWS[1]  # a zero distance, and a zero difference below: their gradients are 0, as PyTorch's
ROWS[4, 0] = ROWS[0, 0]


@needs_torch
@pytest.mark.parametrize("output_size,unbatched", [((3, 2), False), ((4, 4), True), ((7, 5), False),
                                                    ((2, None), True), (1, False)])
def test_adaptive_max_pool2d_matches_pytorch(output_size, unbatched):
    array = IMAGES[0] if unbatched else IMAGES
    results = []
    for lib in (jg, torch):
        x = lib.tensor(array, requires_grad=True)
        values, positions = lib.nn.AdaptiveMaxPool2d(output_size, return_indices=True)(x)
        (values * lib.tensor(WEIGHTS[(0,) * unbatched][..., :values.shape[-2], :values.shape[-1]])).sum().backward()
        results.append((values, positions, x.grad, lib.nn.AdaptiveMaxPool2d(output_size)(x)))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


@needs_torch
@pytest.mark.parametrize("output_size", [3, 5])
def test_adaptive_max_pool1d_matches_pytorch(output_size):
    results = []
    for lib in (jg, torch):
        x = lib.tensor(IMAGES[:, :, 0], requires_grad=True)
        values, positions = lib.nn.functional.adaptive_max_pool1d(x, output_size, return_indices=True)
        values.square().sum().backward()
        results.append((values, positions, x.grad, repr(lib.nn.AdaptiveMaxPool1d(output_size))))
    for ours, theirs in zip(*results):
        assert ours == theirs if isinstance(ours, str) else assert_close(ours, theirs) is None


@needs_torch
@pytest.mark.parametrize("p", [2.0, 1.0, 1.5, 0.5, math.inf, 0.0])
def test_pdist_matches_pytorch(p):
    results = []
    for lib in (jg, torch):
        x = lib.tensor(ROWS, requires_grad=True)
        distances = lib.nn.functional.pdist(x, p)
        (distances * lib.tensor(np.arange(1.0, 11.0))).sum().backward()
        results.append((distances, x.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def test_gumbel_softmax_samples_the_categorical_and_follows_the_seed():
    logits = jg.tensor(np.log([[0.1, 0.6, 0.3]] * 4000), requires_grad=True)
    jg.manual_seed(5)
    soft = F.gumbel_softmax(logits, tau=0.5)
    jg.manual_seed(5)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert np.allclose(soft.detach().numpy().sum(1), 1.0)
    one_hot = hard.detach().numpy()
    assert set(np.unique(one_hot)) == {0.0, 1.0} and (one_hot.sum(1) == 1).all()
    assert (one_hot.argmax(1) == soft.detach().numpy().argmax(1)).all()  # the same draw: the seed
    assert np.allclose(one_hot.mean(0), [0.1, 0.6, 0.3], atol=0.03)  # argmax of logits + Gumbel: the categorical
    weights = jg.tensor(RNG.standard_normal((4000, 3)))
    (hard * weights).sum().backward()  # straight through: the soft sample's gradient
    straight = logits.grad.numpy()
    logits.grad = None
    (soft * weights).sum().backward()
    assert_close(straight, logits.grad)


def test_alpha_dropout_keeps_a_standard_input_standard():
    x = jg.tensor(RNG.standard_normal(20000))
    jg.manual_seed(0)
    out = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.03 and abs(out.std() - 1.0) < 0.03
    alpha = 1.7580993408473766  # SELU's -scale * alpha: a dropped element's value before the affine map
    scale = 1 / math.sqrt((alpha * alpha * 0.2 + 1) * 0.8)
    dropped = np.isclose(out, -alpha * scale * 0.8)
    assert abs(dropped.mean() - 0.2) < 0.02
    kept = x.numpy()[~dropped] * scale + alpha * scale * 0.2
    assert_close(out[~dropped], kept)
    assert F.alpha_dropout(x, 0.2) is x and jg.nn.AlphaDropout(0.2).eval()(x) is x
    assert repr(jg.nn.AlphaDropout(0.2)) == "AlphaDropout(p=0.2, inplace=False)"
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.alpha_dropout(x, 1.5, training=True)
