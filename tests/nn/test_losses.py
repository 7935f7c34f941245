"""The losses of ``nn.functional`` and their layers against PyTorch's: values and input gradients for
every reduction, with class weights, ignored targets, label smoothing, class probabilities, extra
dimensions and unbatched input."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from layer_pairs import assert_close, needs_torch, torch

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F

RNG = np.random.default_rng(1)
LOGITS = RNG.standard_normal((6, 4))
LABELS = np.array([0, 3, 1, 1, 2, 3])
WEIGHT = np.array([0.5, 2.0, 1.0, 3.0])
PROBABILITIES = np.exp(LOGITS) / np.exp(LOGITS).sum(1, keepdims=True)
SIGNS = np.where(LABELS % 2 == 1, 1.0, -1.0)
SIGNS_2D = np.where(LOGITS > 0.3, 1.0, -1.0)
SPATIAL = RNG.standard_normal((2, 4, 3, 2))
SPATIAL_LABELS = RNG.integers(0, 4, (2, 3, 2))


def losses(lib):
    """name -> (function of the library's tensors, arrays); floating arrays become inputs that
    require grad unless they are targets (the second and later floating arrays are constants)."""
    F_ = lib.nn.functional
    t = lib.tensor
    cases = {}
    for reduction in ("mean", "sum", "none"):
        cases.update({
            f"cross-entropy-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, reduction=r), [LOGITS, LABELS]),
            f"cross-entropy-weighted-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, weight=t(WEIGHT), reduction=r), [LOGITS, LABELS]),
            f"cross-entropy-ignore-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, ignore_index=1, reduction=r), [LOGITS, LABELS]),
            f"cross-entropy-smoothed-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, label_smoothing=0.2, reduction=r), [LOGITS, LABELS]),
            f"cross-entropy-all-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, weight=t(WEIGHT), ignore_index=3, reduction=r,
                                                           label_smoothing=0.1), [LOGITS, LABELS]),
            f"cross-entropy-probabilities-{reduction}": (
                lambda x, p, r=reduction: F_.cross_entropy(x, p, weight=t(WEIGHT), reduction=r, label_smoothing=0.1),
                [LOGITS, PROBABILITIES]),
            f"cross-entropy-spatial-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, reduction=r), [SPATIAL, SPATIAL_LABELS]),
            f"cross-entropy-spatial-weighted-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, weight=t(WEIGHT), ignore_index=0, reduction=r),
                [SPATIAL, SPATIAL_LABELS]),
            f"cross-entropy-empty-batch-{reduction}": (
                lambda x, y, r=reduction: F_.cross_entropy(x, y, reduction=r), [LOGITS[:0], LABELS[:0]]),
            f"cross-entropy-no-classes-{reduction}": (
                lambda x, p, r=reduction: F_.cross_entropy(x, p, reduction=r, label_smoothing=0.1),
                [LOGITS[:, :0], PROBABILITIES[:, :0]]),
            f"nll-weighted-{reduction}": (
                lambda x, y, r=reduction: F_.nll_loss(x.log_softmax(1), y, weight=t(WEIGHT), reduction=r),
                [LOGITS, LABELS]),
            f"nll-ignore-negative-{reduction}": (
                lambda x, y, r=reduction: F_.nll_loss(x.log_softmax(1), y, ignore_index=-1, reduction=r),
                [LOGITS, np.where(LABELS == 1, -1, LABELS)]),
            f"mse-{reduction}": (lambda x, y, r=reduction: F_.mse_loss(x, y, reduction=r), [LOGITS, PROBABILITIES]),
            f"bce-{reduction}": (lambda x, y, r=reduction: F_.binary_cross_entropy(x.sigmoid(), y, reduction=r),
                                 [LOGITS, PROBABILITIES]),
            f"bce-weighted-{reduction}": (
                lambda x, y, r=reduction: F_.binary_cross_entropy(x.sigmoid(), y, weight=t(WEIGHT), reduction=r),
                [LOGITS, PROBABILITIES]),
            f"bce-logits-{reduction}": (
                lambda x, y, r=reduction: F_.binary_cross_entropy_with_logits(x * 20, y, reduction=r),
                [LOGITS, PROBABILITIES]),
            f"bce-logits-weighted-{reduction}": (
                lambda x, y, r=reduction: F_.binary_cross_entropy_with_logits(
                    x, y, weight=t(WEIGHT), pos_weight=t(WEIGHT[::-1].copy()), reduction=r), [LOGITS, PROBABILITIES]),
            f"l1-{reduction}": (lambda x, y, r=reduction: F_.l1_loss(x, y, reduction=r), [LOGITS, PROBABILITIES]),
            f"smooth-l1-{reduction}": (lambda x, y, r=reduction: F_.smooth_l1_loss(x, y, reduction=r, beta=0.5),
                                       [LOGITS, PROBABILITIES]),
            f"huber-{reduction}": (lambda x, y, r=reduction: F_.huber_loss(x, y, reduction=r, delta=0.7),
                                   [LOGITS, PROBABILITIES]),
            f"kl-div-{reduction}": (lambda x, y, r=reduction: F_.kl_div(x.log_softmax(1), y, reduction=r),
                                    [LOGITS, np.where(PROBABILITIES > 0.3, 0.0, PROBABILITIES)]),
            f"kl-div-log-target-{reduction}": (
                lambda x, y, r=reduction: F_.kl_div(x.log_softmax(1), y.log(), reduction=r, log_target=True),
                [LOGITS, PROBABILITIES]),
            f"mse-weighted-{reduction}": (  # PyTorch 2.13's weight=: the mean is over the weights' sum
                lambda x, y, r=reduction: F_.mse_loss(x, y, reduction=r, weight=t(PROBABILITIES[::-1].copy())),
                [LOGITS, PROBABILITIES]),
            f"l1-weighted-{reduction}": (
                lambda x, y, r=reduction: F_.l1_loss(x, y, reduction=r, weight=t(PROBABILITIES[::-1].copy())),
                [LOGITS, PROBABILITIES]),
            f"huber-weighted-{reduction}": (  # ... and over the elements for huber_loss, as PyTorch's
                lambda x, y, r=reduction: F_.huber_loss(x, y, r, 0.5, weight=t(PROBABILITIES[::-1].copy())),
                [LOGITS, PROBABILITIES]),
            # the margin, ranking and likelihood losses (nn/margin_losses.py)
            f"margin-ranking-{reduction}": (
                lambda x, y, r=reduction: F_.margin_ranking_loss(x[:, 0], y[:, 0], t(SIGNS), 0.2, reduction=r),
                [LOGITS, PROBABILITIES]),
            f"hinge-embedding-{reduction}": (
                lambda x, r=reduction: F_.hinge_embedding_loss(x, t(SIGNS_2D), margin=0.5, reduction=r), [LOGITS]),
            f"soft-margin-{reduction}": (lambda x, r=reduction: F_.soft_margin_loss(x, t(SIGNS_2D), reduction=r),
                                         [LOGITS]),
            f"multilabel-soft-margin-{reduction}": (
                lambda x, y, r=reduction: F_.multilabel_soft_margin_loss(x, y, weight=t(WEIGHT), reduction=r),
                [LOGITS, PROBABILITIES]),
            f"cosine-embedding-{reduction}": (
                lambda x, y, r=reduction: F_.cosine_embedding_loss(x, y, t(SIGNS), margin=0.1, reduction=r),
                [LOGITS, PROBABILITIES]),
            f"triplet-margin-{reduction}": (
                lambda x, y, r=reduction: F_.triplet_margin_loss(x, y, y.flip(0), p=1, swap=True, reduction=r),
                [LOGITS, PROBABILITIES]),
            f"poisson-nll-{reduction}": (
                lambda x, y, r=reduction: F_.poisson_nll_loss(x, y * 3, full=True, reduction=r),
                [LOGITS, PROBABILITIES]),
            f"poisson-nll-rates-{reduction}": (
                lambda x, y, r=reduction: F_.poisson_nll_loss(x.exp(), y, log_input=False, reduction=r),
                [LOGITS, PROBABILITIES]),
            f"gaussian-nll-{reduction}": (  # one variance per sample, two of them below eps
                lambda x, y, r=reduction: F_.gaussian_nll_loss(x, y, t(np.array([1e-9, 0.5, 2.0, 0.0, 1.0, 3.0])),
                                                               full=True, reduction=r), [LOGITS, PROBABILITIES]),
        })
    cases["smooth-l1-at-beta-zero"] = (lambda x, y: F_.smooth_l1_loss(x, y, beta=0.0), [LOGITS, PROBABILITIES])
    cases["l1-and-smooth-l1-where-input-is-target"] = (
        lambda x, y: F_.l1_loss(x, y) + F_.smooth_l1_loss(x, y) + F_.huber_loss(x, y), [LOGITS, LOGITS.copy()])
    cases["kl-div-batchmean"] = (lambda x, y: F_.kl_div(x.log_softmax(1), y, reduction="batchmean"),
                                 [LOGITS, PROBABILITIES])
    cases["cross-entropy-unbatched"] = (lambda x, y: F_.cross_entropy(x[0], y[0]), [LOGITS, LABELS])
    cases["cross-entropy-unbatched-smoothed"] = (
        lambda x, y: F_.cross_entropy(x[0], y[0], weight=t(WEIGHT), label_smoothing=0.3), [LOGITS, LABELS])
    cases["bce-at-zero-and-one"] = (lambda x, y: F_.binary_cross_entropy(x, y),
                                    [np.array([0.0, 1.0, 0.5, 0.0]), np.array([1.0, 0.0, 1.0, 0.0])])
    cases["bce-target-gradient"] = (lambda x, y: F_.binary_cross_entropy(y.sigmoid(), x),
                                    [PROBABILITIES, LOGITS])
    cases["bce-target-gradient-at-the-ends"] = (  # not clamped: 115 below e^-100, infinite at 0 and 1
        lambda x, y: F_.binary_cross_entropy(y, x), [np.array([0.5, 0.2, 0.7, 0.1]),
                                                     np.array([1e-50, 0.0, 1.0, 0.3])])
    return cases


CASES = list(losses(jg))


@needs_torch
@pytest.mark.parametrize("name", CASES)
def test_loss_matches_pytorch(name):
    results = []
    for lib in (jg, torch):
        fn, arrays = losses(lib)[name]
        inputs = [lib.tensor(a, requires_grad=(i == 0)) for i, a in enumerate(arrays)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = fn(*inputs)
        loss.sum().backward() if loss.dim() else loss.backward()
        results.append((loss, inputs[0].grad))
    (loss, grad), (expected, expected_grad) = results
    assert tuple(loss.shape) == tuple(expected.shape)
    assert_close(loss, expected, what="loss")
    assert_close(grad, expected_grad, what="gradient")


@needs_torch
@pytest.mark.parametrize("layer,arguments,fn", [
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "ignore_index": 2}, lambda x: x),
    ("NLLLoss", {"reduction": "sum"}, lambda x: x.log_softmax(1)),
    ("MSELoss", {}, lambda x: x),
    ("BCELoss", {}, lambda x: x.sigmoid()),
    ("BCEWithLogitsLoss", {"reduction": "none"}, lambda x: x),
    ("L1Loss", {"reduction": "sum"}, lambda x: x),
    ("SmoothL1Loss", {"beta": 0.3}, lambda x: x),
    ("HuberLoss", {"delta": 0.3, "reduction": "none"}, lambda x: x),
    ("KLDivLoss", {"reduction": "batchmean"}, lambda x: x.log_softmax(1)),
    ("MultiLabelSoftMarginLoss", {"reduction": "sum"}, lambda x: x),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, lambda x: x.exp()),
])
def test_loss_layers_call_their_functions(layer, arguments, fn):
    target = LABELS if layer in ("CrossEntropyLoss", "NLLLoss") else PROBABILITIES
    ours = getattr(nn, layer)(**arguments)(fn(jg.tensor(LOGITS)), jg.tensor(target))
    theirs = getattr(torch.nn, layer)(**arguments)(fn(torch.tensor(LOGITS)), torch.tensor(target))
    assert_close(ours, theirs)


@needs_torch
def test_margin_and_likelihood_loss_layers_call_their_functions():
    x, y, z = (jg.tensor(a) for a in (LOGITS, PROBABILITIES, PROBABILITIES[::-1].copy()))
    tx, ty, tz = (torch.tensor(a) for a in (LOGITS, PROBABILITIES, PROBABILITIES[::-1].copy()))
    calls = [("MarginRankingLoss", {"margin": 0.1}, lambda lib, a, b, c: (a[:, 0], b[:, 0], lib.tensor(SIGNS))),
             ("HingeEmbeddingLoss", {"margin": 2.0}, lambda lib, a, b, c: (a, lib.tensor(SIGNS_2D))),
             ("SoftMarginLoss", {}, lambda lib, a, b, c: (a, lib.tensor(SIGNS_2D))),
             ("CosineEmbeddingLoss", {"margin": -0.2}, lambda lib, a, b, c: (a, b, lib.tensor(SIGNS))),
             ("TripletMarginLoss", {"margin": 0.5, "swap": True}, lambda lib, a, b, c: (a, b, c)),
             ("GaussianNLLLoss", {"full": True}, lambda lib, a, b, c: (a, b, c + 0.1))]
    for layer, arguments, args in calls:
        assert_close(getattr(nn, layer)(**arguments)(*args(jg, x, y, z)),
                     getattr(torch.nn, layer)(**arguments)(*args(torch, tx, ty, tz)), what=layer)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, y, jg.ones(3))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, y, -jg.ones(6))


def test_weighted_loss_layers_keep_their_weight_as_a_buffer():
    loss = nn.CrossEntropyLoss(weight=jg.ones(4))
    assert list(loss.state_dict()) == ["weight"]
    assert loss.double().weight.dtype == jg.float64


def test_plain_cross_entropy_is_the_nll_loss_op():
    loss = F.cross_entropy(jg.tensor(LOGITS, requires_grad=True), jg.tensor(LABELS))
    assert loss.grad_fn.name() == "NllLossBackward0"


def test_the_default_ignore_index_is_ignored_and_other_targets_outside_the_classes_refused():
    """The nll_loss op skips -100 (PyTorch's default ignore_index) as PyTorch does."""
    targets = [0, -100, 1, 1, 2, 3]
    ours = F.cross_entropy(jg.tensor(LOGITS, requires_grad=True), jg.tensor(targets))
    assert ours.grad_fn.name() == "NllLossBackward0"
    if torch is not None:
        np.testing.assert_allclose(ours.item(), torch.nn.functional.cross_entropy(
            torch.tensor(LOGITS), torch.tensor(targets)).item(), rtol=1e-12)
    with pytest.raises(IndexError, match="Target 9 is out of bounds"):
        F.cross_entropy(jg.tensor(LOGITS), jg.tensor([0, 9, 1, 1, 2, 3]))
    with pytest.raises(IndexError, match="out of bounds"):  # a class outside the table, in the composite too
        F.cross_entropy(jg.tensor(LOGITS), jg.tensor([0, 9, 1, 1, 2, 3]), label_smoothing=0.1)


@pytest.mark.parametrize("settings", [{"weight": WEIGHT}, {"label_smoothing": 0.1}])
def test_minus_100_is_refused_when_another_index_is_ignored(settings):
    """With ``ignore_index=1`` a target of -100 is outside the classes (PyTorch's IndexError); the
    composite once skipped it as the op's default ignore_index, a loss silently missing a term."""
    settings = {k: jg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in settings.items()}
    targets = jg.tensor([0, -100, 1, 1, 2, 3])
    for reduction in ("mean", "none"):
        with pytest.raises(IndexError, match="Target -100 is out of bounds"):
            F.cross_entropy(jg.tensor(LOGITS), targets, ignore_index=1, reduction=reduction, **settings)


@needs_torch
@pytest.mark.parametrize("settings", [{"weight": WEIGHT}, {"label_smoothing": 0.1}])
def test_a_batch_with_every_target_ignored_has_pytorchs_zero_gradient(settings):
    """The mean over no kept target is NaN in both libraries, but PyTorch's gradient is 0; the
    composite's was 0 / 0, NaN gradients that an optimizer step writes into every parameter."""
    targets = np.full(6, 1)
    grads = []
    for lib in (jg, torch):
        logits = lib.tensor(LOGITS, requires_grad=True)
        options = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in settings.items()}
        loss = lib.nn.functional.cross_entropy(logits, lib.tensor(targets), ignore_index=1, **options)
        assert np.isnan(loss.item())
        loss.backward()
        grads.append(logits.grad.numpy())
    assert_close(grads[0], grads[1])


def test_class_probabilities_refuse_an_ignore_index():
    """PyTorch refuses a non-negative ``ignore_index`` with class probabilities; jitgrad once
    accepted it and ignored nothing."""
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(jg.tensor(LOGITS), jg.tensor(PROBABILITIES), ignore_index=1)
    F.cross_entropy(jg.tensor(LOGITS), jg.tensor(PROBABILITIES), ignore_index=-1)  # negative: let through


WEIGHTED_LOSSES = {   # name -> (call, the argument PyTorch has no derivative for, as its error names it)
    "bce": (lambda F_, x, t, w: F_.binary_cross_entropy(x.sigmoid(), t, weight=w), "binary_cross_entropy", "weight"),
    "bce-logits": (lambda F_, x, t, w: F_.binary_cross_entropy_with_logits(x, t, weight=w),
                   "binary_cross_entropy_with_logits", "weight"),
    "bce-logits-pos": (lambda F_, x, t, w: F_.binary_cross_entropy_with_logits(x, t, pos_weight=w),
                       "binary_cross_entropy_with_logits", "pos_weight"),
    "cross-entropy": (lambda F_, x, t, w: F_.cross_entropy(x, t[:, 0].long(), weight=w), "nll_loss_forward", "weight"),
    "cross-entropy-smoothed": (lambda F_, x, t, w: F_.cross_entropy(x, t[:, 0].long(), weight=w, label_smoothing=0.2),
                               "nll_loss_forward", "weight"),
    "nll": (lambda F_, x, t, w: F_.nll_loss(x.log_softmax(1), t[:, 0].long(), weight=w), "nll_loss_forward", "weight"),
    "multi-margin": (lambda F_, x, t, w: F_.multi_margin_loss(x, t[:, 0].long(), weight=w), "multi_margin_loss", "weight"),
    "soft-margin-target": (lambda F_, x, t, w: F_.soft_margin_loss(x[0], w), "soft_margin_loss", "target"),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(WEIGHTED_LOSSES))
def test_loss_weights_that_require_grad_are_refused_as_in_pytorch(name):
    """PyTorch has no derivative in these weights and refuses one that requires grad; jitgrad's
    composites gave it a gradient (before 2026-11-28; multi_margin_loss's weight and soft_margin_loss's
    target later that day). Under no_grad the loss is computed."""
    call, function, argument = WEIGHTED_LOSSES[name]
    targets = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    for lib in (jg, torch):
        x, t = lib.tensor(LOGITS[:3, :2], requires_grad=True), lib.tensor(targets)
        w = lib.tensor([1.5, 0.5], dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match=f"^The function '{function}' is not differentiable with respect to "
                                               f"argument '{argument}'. This input cannot have requires_grad True."):
            call(lib.nn.functional, x, t, w)
        with lib.no_grad():
            assert np.isfinite(call(lib.nn.functional, x, t, w).item())


@needs_torch
def test_loss_weights_keep_the_inputs_dtype_as_in_pytorch():
    """A float64 class weight of float32 logits is PyTorch's error for the class-index losses (it was
    promoted, a float64 loss); the binary losses compute in the input's dtype; the probability-target
    cross-entropy promotes, as PyTorch's."""
    logits32, labels = LOGITS.astype(np.float32), LABELS
    for lib in (jg, torch):
        F_, w64 = lib.nn.functional, lib.tensor(WEIGHT)
        for call in (lambda: F_.cross_entropy(lib.tensor(logits32), lib.tensor(labels), weight=w64),
                     lambda: F_.cross_entropy(lib.tensor(logits32), lib.tensor(labels), weight=w64, label_smoothing=0.1),
                     lambda: F_.nll_loss(lib.tensor(logits32), lib.tensor(labels), weight=w64)):
            with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double"):
                call()
        with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float"):
            F_.binary_cross_entropy(lib.tensor(PROBABILITIES.astype(np.float32)), lib.tensor(PROBABILITIES))
    probabilities32 = PROBABILITIES.astype(np.float32)
    for call in (lambda F_, t: F_.binary_cross_entropy(t(probabilities32), t(probabilities32), weight=t(SIGNS_2D) + 2),
                 lambda F_, t: F_.binary_cross_entropy_with_logits(t(logits32), t(probabilities32),
                                                                   weight=t(SIGNS_2D) + 2, pos_weight=t(WEIGHT)),
                 lambda F_, t: F_.cross_entropy(t(logits32), t(PROBABILITIES), weight=t(WEIGHT))):
        ours, theirs = call(jg.nn.functional, jg.tensor), call(torch.nn.functional, torch.tensor)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert abs(ours.item() - theirs.item()) < 1e-5


def test_loss_arguments_are_checked():
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(jg.tensor(LOGITS), jg.tensor(LABELS), label_smoothing=1.5)
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.cross_entropy(jg.tensor(LOGITS), jg.tensor(LABELS), weight=jg.ones(4), reduction="avg")
    with pytest.raises(ValueError, match="Target size"):
        F.binary_cross_entropy_with_logits(jg.ones(3), jg.ones(3, 1))
    with pytest.raises(ValueError, match="Using a target size"):
        F.binary_cross_entropy(jg.ones(3) / 2, jg.ones(3, 1))
    with pytest.warns(UserWarning, match="This will likely lead to incorrect results due to broadcasting"):
        F.mse_loss(jg.ones(3), jg.ones(3, 1))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\]"):
        F.layer_norm(jg.ones(2, 4), (3,))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(jg.ones(3), jg.ones(3), beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(jg.ones(3), jg.ones(3), delta=0.0)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(jg.tensor(LOGITS), jg.tensor(PROBABILITIES))


@needs_torch
def test_kl_div_of_a_negative_target_is_nan_and_a_zero_target_adds_nothing():
    """``xlogy(t, t)``: NaN for a target that is not a probability, as PyTorch (it was a finite number),
    and 0 for a zero target, with the input's gradient -t = 0 there."""
    log_p = np.log(np.array([[0.2, 0.3, 0.5]]))
    target = np.array([[0.0, 0.4, -0.6]])
    results = []
    for lib in (jg, torch):
        x = lib.tensor(log_p, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's log of the negative target
            out = lib.nn.functional.kl_div(x, lib.tensor(target), reduction="none")
        out[:, :2].sum().backward()
        results.append((out, x.grad))
    (ours, grad), (theirs, expected) = results
    assert np.isnan(ours.detach().numpy()[0, 2])
    assert_close(ours, theirs, what="pointwise divergence")
    assert_close(grad, expected, what="input gradient")
