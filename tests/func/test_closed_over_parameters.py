"""Transforms of functions that close over tensors requiring grad (a model's parameters, a weight):
``torch.func`` results keep their graph to those tensors, so a loss made of a gradient (a gradient
penalty, a meta-learning step) trains them. jitgrad detached them, and the penalty's share of the
parameters' gradient was silently missing; results that reach nothing outside stay detached."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def _penalised_weight_gradient(m) -> list[np.ndarray]:
    F = m.func
    w = m.tensor([1.0, 2.0], requires_grad=True)
    x, y = m.tensor([0.5, -1.0]), m.tensor([0.2, 0.3])
    penalty = F.grad(lambda x: (x * w).sin().sum())(x).pow(2).sum()
    jacobian = F.jacfwd(lambda x: x.sin() * w)(x).sum()
    pushed = F.jvp(lambda x: x.cos() * w, (x,), (y,))[1].sum()
    pulled = F.vjp(lambda x: (x * w).exp(), x)[1](y)[0].sum()
    grads = m.autograd.grad((w ** 2).sum() + penalty + jacobian + pushed + pulled, w)
    unrelated = F.grad(lambda x, y: (x * w).sum() + (y ** 2).sum(), argnums=(0, 1))(x, y)
    return [g.numpy() for g in grads] + [np.array([t.requires_grad for t in unrelated])]


def test_a_loss_made_of_transform_results_trains_the_closed_over_weight():
    ours, theirs = _penalised_weight_gradient(jg), _penalised_weight_gradient(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)
