"""Transforms of functions that touch tensors from outside the mapped or differentiated arguments.
Closed-over tensors requiring grad (a model's parameters, a weight): ``torch.func`` results keep their
graph to them, so a loss made of a gradient (a gradient penalty, a meta-learning step) trains them;
jitgrad detached them, and the penalty's share of the parameters' gradient was silently missing.
``vmap`` writing in place into an unmapped argument made the write once per slice."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.func import grad, jacfwd, jvp, vjp, vmap


def test_a_loss_made_of_transform_results_trains_the_closed_over_weight():
    w = jg.tensor([1.0, 2.0], requires_grad=True)
    x, y = jg.tensor([0.5, -1.0]), jg.tensor([0.2, 0.3])
    loss = ((w ** 2).sum() + grad(lambda x: (x * w).sin().sum())(x).pow(2).sum()
            + jacfwd(lambda x: x.sin() * w)(x).sum() + jvp(lambda x: x.cos() * w, (x,), (y,))[1].sum()
            + vjp(lambda x: (x * w).exp(), x)[1](y)[0].sum())
    (ours,) = jg.autograd.grad(loss, w)
    # the same loss written out: the gradient w cos(xw), the Jacobian's diagonal cos(x) w, the tangent
    # -sin(x) w y, the cotangent's product y w exp(xw)
    written = ((w ** 2).sum() + (w * (x * w).cos()).pow(2).sum() + (x.cos() * w).sum()
               - (x.sin() * w * y).sum() + (y * w * (x * w).exp()).sum())
    (expected,) = jg.autograd.grad(written, w)
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-12)


def test_only_the_results_that_reach_the_weight_keep_their_graph():
    w = jg.tensor([1.0, 2.0], requires_grad=True)
    x, y = jg.tensor([0.5, -1.0]), jg.tensor([0.2, 0.3])
    of_x, of_y = grad(lambda x, y: (x * w).sum() * x.sum() + (y ** 2).sum(), argnums=(0, 1))(x, y)
    assert of_x.requires_grad and not of_y.requires_grad   # as torch.func's
    assert not grad(lambda x: (x ** 3).sum())(x).requires_grad


def test_vmap_refuses_an_in_place_write_into_an_unmapped_argument():
    """Run once per slice, ``y.add_(x)`` added every slice into ``y`` (PyTorch refuses a batched value,
    and writes an unbatched one once); writes into mapped arguments, and their views, stay allowed."""
    y, batch = jg.zeros(2), jg.ones(3, 2)
    with pytest.raises(RuntimeError, match="wrote in place into an argument whose in_dim is None"):
        vmap(lambda x, y: y.add_(x), in_dims=(0, None))(batch, y)
    assert vmap(lambda x, y: x.add_(1), in_dims=(0, None))(batch, batch[0]).tolist() == [[2.0, 2.0]] * 3
