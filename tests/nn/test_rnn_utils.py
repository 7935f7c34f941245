"""``nn.utils.rnn.pad_sequence``/``unpad_sequence`` and ``nn.utils.get_total_norm``/``clip_grads_with_norm_``
against PyTorch's: values, shapes, gradients and errors."""
from __future__ import annotations

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg

RNG = np.random.default_rng(7)
SEQUENCES = [RNG.standard_normal((n, 2)) for n in (3, 1, 2)]


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_pytorch(batch_first, padding_side):
    weights = None
    results = []
    for lib in (jg, torch):
        sequences = [lib.tensor(s, requires_grad=True) for s in SEQUENCES]
        padded = lib.nn.utils.rnn.pad_sequence(sequences, batch_first, -1.5, padding_side)
        weights = RNG.standard_normal(tuple(padded.shape)) if weights is None else weights
        (padded * lib.tensor(weights)).sum().backward()
        results.append((padded.detach().numpy(), [s.grad.numpy() for s in sequences]))
    (ours, our_grads), (theirs, their_grads) = results
    np.testing.assert_array_equal(ours, theirs)
    for mine, reference in zip(our_grads, their_grads):
        np.testing.assert_array_equal(mine, reference)


def test_unpad_sequence_returns_the_sequences_and_errors_are_pytorchs():
    sequences = [jg.tensor(s) for s in SEQUENCES]
    padded = jg.nn.utils.rnn.pad_sequence(sequences)
    for back, original in zip(jg.nn.utils.rnn.unpad_sequence(padded, jg.tensor([3, 1, 2])), SEQUENCES):
        np.testing.assert_array_equal(back.numpy(), original)
    with pytest.raises(RuntimeError, match="empty list of sequences"):
        jg.nn.utils.rnn.pad_sequence([])
    with pytest.raises(ValueError, match="padding_side"):
        jg.nn.utils.rnn.pad_sequence(sequences, padding_side="middle")


def test_total_norm_then_clipping_is_clip_grad_norm():
    grads = [RNG.standard_normal((2, 3)), RNG.standard_normal(4)]
    params = [jg.tensor(g, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = jg.tensor(g.copy())
    total = jg.nn.utils.get_total_norm([p.grad for p in params])
    assert total.item() == pytest.approx(np.sqrt(sum((g ** 2).sum() for g in grads)))
    jg.nn.utils.clip_grads_with_norm_(params, 1.0, total)
    assert jg.nn.utils.get_total_norm([p.grad for p in params]).item() == pytest.approx(1.0, rel=1e-5)
    assert jg.nn.utils.get_total_norm([]).item() == 0.0
