"""Layers and losses inside ``jitgrad.compile``: the compiled loss and every parameter's gradient
equal eager's, with no eager fallback (the graph-building backend, so that many layers stay quick;
tests/training/test_training_loop.py runs a model through numba). ``jitgrad.compile(model)`` works
on a module itself."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.compile import CompileWarning

RNG = np.random.default_rng(3)
X = jg.tensor(RNG.standard_normal((6, 4)))
SEQUENCE = jg.tensor(RNG.standard_normal((6, 5, 4)))
LABELS = jg.tensor(RNG.integers(0, 3, 6))
TOKENS = jg.tensor(np.array([[1, 4, 0], [2, 1, 1]]))
IMAGES = jg.tensor(RNG.standard_normal((6, 2, 4, 4)))

CASES = {
    "mlp": (lambda: nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3)),
            lambda model: F.cross_entropy(model(X), LABELS)),
    "layer-norm-dropout": (lambda: nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Dropout(0.3), nn.Linear(8, 3)),
                           lambda model: nn.CrossEntropyLoss(label_smoothing=0.1, weight=jg.ones(3, dtype=X.dtype))(model(X), LABELS)),
    "batch-norm-eval": (lambda: nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU()).eval(),
                        lambda model: model(X).pow(2).mean()),
    "gru": (lambda: nn.GRU(4, 3, num_layers=2, bidirectional=True),
            lambda model: model(SEQUENCE)[0].tanh().sum()),
    "lstm-cell": (lambda: nn.LSTMCell(4, 3), lambda model: sum(t.sum() for t in model(X))),
    "bce": (lambda: nn.Sequential(nn.Linear(4, 3), nn.Sigmoid()),
            lambda model: nn.BCELoss()(model(X), (X[:, :3] > 0).double())),
    "bce-logits": (lambda: nn.Linear(4, 3),
                   lambda model: nn.BCEWithLogitsLoss(pos_weight=jg.full((3,), 2.0))(model(X),
                                                                      (X[:, :3] > 0).double())),
    "embedding-padding": (lambda: nn.Embedding(5, 3, padding_idx=1), lambda model: model(TOKENS).tanh().sum()),
    "cnn-batch-norm-eval-pools": (
        lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.AvgPool2d(2),
                              nn.GroupNorm(2, 4), nn.AdaptiveAvgPool2d((1, 2)), nn.Flatten(), nn.Linear(8, 3)).eval(),
        lambda model: F.smooth_l1_loss(model(IMAGES), F.pad(X[:, :2], (0, 1), mode="constant"))),
    "autoencoder": (lambda: nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1), nn.ReLU(),
                                          nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1, groups=1)),
                    lambda model: F.mse_loss(model(IMAGES), IMAGES)),
    "resize-and-shuffle": (lambda: nn.Sequential(nn.Conv2d(2, 8, 1), nn.PixelShuffle(2), nn.ReflectionPad2d(1),
                                                 nn.Upsample(size=(5, 3), mode="bilinear"), nn.Dropout2d(0.3)),
                           lambda model: model(IMAGES).pow(2).mean()),
    "regression-losses": (lambda: nn.Linear(4, 3),
                          lambda model: F.l1_loss(model(X), X[:, 1:]) + F.huber_loss(model(X), X[:, :3], delta=0.5)
                          + F.kl_div(model(X).log_softmax(1), X[:, :3].softmax(1), reduction="batchmean")
                          + F.cosine_similarity(model(X), X[:, :3]).sum()),
    "multihead-attention-masked": (
        lambda: nn.MultiheadAttention(4, 2, dropout=0.2),
        lambda model: model(SEQUENCE, SEQUENCE, SEQUENCE, key_padding_mask=SEQUENCE[:, :, 0].t() > 0.5,
                            attn_mask=jg.tensor(np.triu(np.ones((6, 6), bool), 1)), need_weights=False)[0].sum()
        + F.scaled_dot_product_attention(SEQUENCE, SEQUENCE, SEQUENCE, is_causal=True).sum()),
    "ignore-index-weight": (lambda: nn.Linear(4, 3),
                            lambda model: F.cross_entropy(model(X), LABELS, weight=jg.tensor([0.5, 2.0, 1.0], dtype=X.dtype),
                                                          ignore_index=1)),
}


@pytest.mark.parametrize("name", CASES)
def test_a_compiled_loss_of_a_layer_matches_eager(name, monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    make, loss_of = CASES[name]

    def run(compiled: bool):
        jg.manual_seed(0)
        model = make().double()
        fn = jg.compile(lambda: loss_of(model), cache=False) if compiled else (lambda: loss_of(model))
        losses = []
        for _ in range(2):  # twice: the second call runs the compiled program
            model.zero_grad()
            loss = fn()
            loss.backward()
            losses.append(loss.item())
        return losses, {name: p.grad.numpy() for name, p in model.named_parameters()}
    expected, expected_grads = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        losses, grads = run(True)
    np.testing.assert_allclose(losses, expected, rtol=1e-10)
    for key, grad in expected_grads.items():
        np.testing.assert_allclose(grads[key], grad, rtol=1e-9, atol=1e-12, err_msg=key)


def test_a_module_compiles_itself(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    compiled = jg.compile(model, cache=False)
    out = compiled(X)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    np.testing.assert_allclose(out.detach().numpy(), model(X).detach().numpy(), rtol=1e-12)
    out.sum().backward()
    assert model[0].weight.grad is not None


def test_an_embedding_compiles_and_takes_its_indices_as_an_argument(monkeypatch):
    """The indices are an input of the embedding op, not values baked into the trace: other indices of
    the same shape run the same program and give their own rows."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    table = nn.Embedding(5, 2).double()
    compiled = jg.compile(lambda i: (table(i) * 2.0).sum(1), cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for indices in ([1, 4], [1, 4], [0, 3]):
            got = compiled(jg.tensor(indices))
            np.testing.assert_allclose(got.detach().numpy(), (table(jg.tensor(indices)) * 2.0).sum(1).detach().numpy())
    assert "embedding" in str(compiled.explain(jg.tensor([0, 3])))


def test_one_hot_with_its_classes_given_compiles_and_refuses_a_class_outside(monkeypatch):
    """Traced, one_hot reads no label: each batch of labels is an input of one program, and a label
    outside the classes raises IndexError from the compiled code (eagerly PyTorch's RuntimeError)."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    weights = jg.tensor(RNG.standard_normal((4, 2)))

    def scores(labels):
        return F.one_hot(labels, 4).double() @ weights

    fn = jg.compile(scores, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for labels in ([0, 3, 1], [2, 2, 0]):
            np.testing.assert_array_equal(fn(jg.tensor(labels)).numpy(), scores(jg.tensor(labels)).numpy())
    assert len(fn.programs) == 1
    with pytest.raises(IndexError, match="out of (range|bounds)"):   # the interpreter's, a kernel's
        fn(jg.tensor([0, 4, 1]))


def test_the_same_convolution_twice_compiles(monkeypatch):
    """A compiled loss reading ``conv2d(x, w)`` twice (a layer called twice on one batch) matches eager."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    weight = jg.tensor(RNG.standard_normal((2, 2, 1, 1)), requires_grad=True)

    def loss(x):
        return F.conv2d(x, weight).pow(2).mean() + F.conv2d(x, weight).sum()

    compiled = jg.compile(loss, cache=False)
    for batch in (IMAGES, IMAGES * 2.0):
        np.testing.assert_allclose(compiled(batch).item(), loss(batch).item(), rtol=1e-12)
