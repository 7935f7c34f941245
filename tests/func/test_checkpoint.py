"""``jitgrad.utils.checkpoint`` against the plain run and PyTorch: the same values and gradients
(parameters read inside the function included, dropout's numbers replayed), activations not kept
(counted through an outer saved-tensor hook), a second backward and a double backward through it,
``checkpoint_sequential``, and a compiled call (traced as a plain call, with a warning).

PyTorch's side is its plain run, which ``torch.utils.checkpoint`` equals by construction: its first
call imports ``torch._dynamo`` (3.5 s here), more than this file's whole budget."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd.graph import saved_tensors_hooks
from jitgrad.utils.checkpoint import COMPILED_WARNING, checkpoint, checkpoint_sequential

X = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.2]])
W = np.array([[1.5, 0.2, -0.3, 0.8], [-0.4, 0.9, 0.1, -1.0], [0.6, -0.7, 0.5, 0.3]])


def block(m, x, w):
    h = (x @ w).tanh()
    return (h.exp() * h).sum(-1) + (x * x).sum(-1)


def gradients(m, use_checkpoint: bool):
    x = m.tensor(X, dtype=m.float64, requires_grad=True)
    w = m.tensor(W, dtype=m.float64, requires_grad=True)
    out = checkpoint(lambda x, w: block(m, x, w), x, w) if use_checkpoint else block(m, x, w)
    out.sum().backward()
    return out.detach().numpy(), x.grad.numpy(), w.grad.numpy()


def test_gradients_equal_the_plain_run() -> None:
    for got, want in zip(gradients(jg, True), gradients(jg, False)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_gradients_equal_torchs() -> None:
    torch = pytest.importorskip("torch")
    for got, want in zip(gradients(jg, True), gradients(torch, False)):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def count_saved(fn) -> int:
    """How many tensors ops save under an outer saved-tensor hook while ``fn`` runs (checkpoint's own hooks
    replace it inside the checkpointed call: what it keeps there are numbers)."""
    packed = []
    with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        fn()
    return len(packed)


def test_activations_are_not_kept() -> None:
    x = jg.tensor(X, requires_grad=True)
    w = jg.tensor(W, requires_grad=True)
    assert count_saved(lambda: block(jg, x, w)) >= 4
    assert count_saved(lambda: checkpoint(lambda x, w: block(jg, x, w), x, w)) == 0


@pytest.mark.parametrize("preserve_rng_state", [True, False])
def test_dropout_replays_its_numbers(preserve_rng_state: bool) -> None:
    """With preserve_rng_state the recomputation draws the forward's mask again, so the gradients are the
    plain run's; without it, another mask (which is what PyTorch warns of)."""
    x = jg.tensor(X, requires_grad=True)

    def fn(x):
        return jg.nn.functional.dropout(x.exp(), 0.5, training=True) * x

    jg.manual_seed(3)
    (want,) = jg.autograd.grad(fn(x).sum(), [x])
    jg.manual_seed(3)
    (got,) = jg.autograd.grad(checkpoint(fn, x, preserve_rng_state=preserve_rng_state).sum(), [x])
    assert np.allclose(got.numpy(), want.numpy()) == preserve_rng_state


def test_retain_graph_and_double_backward() -> None:
    x = jg.tensor(X[0], requires_grad=True, dtype=jg.float64)
    out = checkpoint(lambda x: (x.sin() * x).sum(), x)
    (g1,) = jg.autograd.grad(out, [x], retain_graph=True)
    (g2,) = jg.autograd.grad(out, [x], create_graph=True)
    (gg,) = jg.autograd.grad(g2.sum(), [x])
    x0 = X[0]
    np.testing.assert_allclose(g1.numpy(), np.cos(x0) * x0 + np.sin(x0), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), 2 * np.cos(x0) - x0 * np.sin(x0), rtol=1e-12)


def test_checkpoint_sequential_gradients_equal_the_plain_run() -> None:
    jg.manual_seed(0)
    model = jg.nn.Sequential(jg.nn.Linear(3, 4), jg.nn.Tanh(), jg.nn.Linear(4, 4), jg.nn.ReLU(), jg.nn.Linear(4, 1))
    x = jg.tensor(X, dtype=jg.float32)
    checkpoint_sequential(model, 2, x).sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for g, p in zip(got, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)


def test_inside_compile_is_traced_as_a_plain_call_with_a_warning() -> None:
    @jg.compile
    def loss(x, w):
        return checkpoint(lambda x, w: block(jg, x, w), x, w).sum()

    x = jg.tensor(X, dtype=jg.float64)
    w = jg.tensor(W, dtype=jg.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = loss(x, w)
    assert COMPILED_WARNING in {str(c.message) for c in caught}
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    out.backward()
    _, _, want = gradients(jg, False)
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-10)
