"""The second tier of layers, functions and losses against PyTorch's (float64): outputs, the gradients
of the inputs and of every parameter, the running statistics a forward updates, and the reprs."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from layer_pairs import assert_close, needs_torch, same_weights, torch

import jitgrad as jg

RNG = np.random.default_rng(7)
X = RNG.standard_normal((5, 4))
ROWS = RNG.standard_normal((3, 6))
IMAGES = RNG.standard_normal((2, 3, 4, 3))
SIGNS = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
LABELS = np.array([0, 3, 1, 1, 2])
MULTI = (RNG.random((5, 4)) > 0.5).astype(np.float64)
COUNTS = np.array([[0.0, 1.0, 3.0, 7.0]] * 5)
NOISE = RNG.standard_normal((5, 4))
BILINEAR_WEIGHT, BILINEAR_BIAS = RNG.standard_normal((2, 4, 4)), RNG.standard_normal(2)
KINKS = np.array([-1.0, -0.5, -0.2, 0.0, 0.3, 0.5, 2.0])  # on the shrinkages' and threshold's kinks

LAYERS = {
    "softplus": (lambda L: L.nn.Softplus(beta=2.0, threshold=1.0), [X]),
    "softmin": (lambda L: L.nn.Softmin(dim=0), [X]),
    "softmax2d": (lambda L: L.nn.Softmax2d(), [IMAGES]),
    "glu": (lambda L: L.nn.GLU(), [X]),
    "prelu": (lambda L: L.nn.PReLU(), [X]),
    "prelu-per-channel": (lambda L: L.nn.PReLU(3, init=0.1), [IMAGES]),
    "threshold": (lambda L: L.nn.Threshold(0.3, -2.0), [KINKS]),
    "hardshrink": (lambda L: L.nn.Hardshrink(), [KINKS]),
    "softshrink": (lambda L: L.nn.Softshrink(0.2), [KINKS]),
    "tanhshrink": (lambda L: L.nn.Tanhshrink(), [X]),
    "bilinear": (lambda L: L.nn.Bilinear(4, 6, 2), [X[:3], ROWS]),
    "bilinear-no-bias": (lambda L: L.nn.Bilinear(4, 4, 3, bias=False), [X, X[::-1].copy()]),
    "unfold-fold": (lambda L: L.nn.Sequential(L.nn.Unfold(2, padding=1), L.nn.Fold((4, 3), 2, padding=1)), [IMAGES]),
    "rms-norm": (lambda L: L.nn.RMSNorm(4), [X]),
    "rms-norm-2d-eps": (lambda L: L.nn.RMSNorm((4, 3), eps=1e-3, elementwise_affine=False), [IMAGES]),
    "instance-norm-1d": (lambda L: L.nn.InstanceNorm1d(3, affine=True), [IMAGES[:, :, 0]]),
    "instance-norm-2d-tracked": (lambda L: L.nn.InstanceNorm2d(3, affine=True, track_running_stats=True), [IMAGES]),
    "instance-norm-2d-unbatched": (lambda L: L.nn.InstanceNorm2d(3, momentum=None, track_running_stats=True),
                                   [IMAGES[0]]),
    "local-response-norm": (lambda L: L.nn.LocalResponseNorm(2, alpha=0.5, k=2.0), [IMAGES]),
    "local-response-norm-3d": (lambda L: L.nn.LocalResponseNorm(3), [IMAGES[:, :, :, 0]]),
}


def _run_both(make, inputs, train: bool) -> None:
    ours, theirs = make(jg), make(torch)
    same_weights(ours, theirs)
    ours.train(train)
    theirs.train(train)
    ours_in = [jg.tensor(a, requires_grad=True) for a in inputs]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    for _ in range(2):  # a second call sees the running statistics the first updated
        out_ours, out_theirs = ours(*ours_in), theirs(*theirs_in)
        assert_close(out_ours, out_theirs, what="output")
        weights = RNG.standard_normal(tuple(out_theirs.shape))
        (out_ours * jg.tensor(weights)).sum().backward()
        (out_theirs * torch.tensor(weights)).sum().backward()
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(a.grad, b.grad, what=f"gradient of {name}")
    for (name, a), (_, b) in zip(ours.named_buffers(), theirs.named_buffers()):
        assert_close(a, b, what=f"buffer {name}")
    for a, b in zip(ours_in, theirs_in):
        assert_close(a.grad, b.grad, what="gradient of the input")
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


@needs_torch
@pytest.mark.parametrize("name", LAYERS)
def test_layer_matches_pytorch(name):
    make, inputs = LAYERS[name]
    _run_both(make, inputs, train=True)
    if "norm" in name:
        _run_both(make, inputs, train=False)


def functions(lib):
    """name -> (function of the library's tensors, arrays): the gradient of every floating array is
    compared but for the targets, given as integer arrays or in ``constant``."""
    F = lib.nn.functional
    t = lib.tensor
    cases = {
        "softmin": (lambda x: F.softmin(x, dim=1), [X]),
        "glu-dim0": (lambda x: F.glu(x[:4], 0), [X]),
        "prelu-scalar": (lambda x, w: F.prelu(x, w), [KINKS, np.array([0.3])]),
        "prelu-per-channel": (lambda x, w: F.prelu(x, w), [X, np.linspace(-1.0, 1.0, 4)]),
        "threshold": (lambda x: F.threshold(x, 0.0, 0.5), [KINKS]),
        "hardshrink": (lambda x: F.hardshrink(x, 0.2), [KINKS]),
        "softshrink": (lambda x: F.softshrink(x), [KINKS]),
        "tanhshrink": (lambda x: F.tanhshrink(x), [KINKS]),
        "rrelu-evaluating": (lambda x: F.rrelu(x, 0.1, 0.4) + lib.nn.RReLU().eval()(x), [KINKS]),
        "bilinear-3d": (lambda a, b, w, c: F.bilinear(a, b, w, c),
                        [IMAGES[..., 0], IMAGES[..., 1], BILINEAR_WEIGHT, BILINEAR_BIAS]),
        "rms-norm": (lambda x, w: F.rms_norm(x, (4,), w), [X, NOISE[0]]),
        "instance-norm-running": (
            lambda x: F.instance_norm(x, t(np.ones(3) * 0.2), t(np.ones(3) * 2), use_input_stats=False), [IMAGES]),
        "local-response-norm": (lambda x: F.local_response_norm(x, 4, alpha=0.3, beta=0.5), [IMAGES]),
        "poisson-nll-full": (lambda x, y: F.poisson_nll_loss(x, y, full=True), [X, COUNTS]),
        "poisson-nll-rates": (lambda x, y: F.poisson_nll_loss(x.exp(), y, log_input=False, reduction="none"),
                              [X, COUNTS]),
        "gaussian-nll-full": (lambda x, y, v: F.gaussian_nll_loss(x, y, v.square(), full=True),
                              [X, X[::-1].copy(), NOISE]),
        "gaussian-nll-clamped-var": (lambda x, y, v: F.gaussian_nll_loss(x, y, v, eps=0.5, reduction="none"),
                                     [X, X[::-1].copy(), np.abs(NOISE[:, :1])]),
        "gaussian-nll-one-short": (lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction="sum"),
                                   [X, X[::-1].copy(), np.abs(NOISE[:, 0]) + 0.1]),
        "gaussian-nll-float-var": (lambda x, y: F.gaussian_nll_loss(x, y, 0.7), [X, X[::-1].copy()]),
        "multi-margin-unbatched": (lambda x, y: F.multi_margin_loss(x[0], y[0]), [X, LABELS]),
        "cosine-embedding-unbatched": (lambda a, b, y: F.cosine_embedding_loss(a[0], b[0], y[1], margin=0.1),
                                       [X, X[::-1].copy(), SIGNS]),
        "size-average-false": (lambda x, y: F.soft_margin_loss(x, y, size_average=False), [X, np.sign(X)]),
        "reduce-false": (lambda a, b, y: F.margin_ranking_loss(a, b, y, reduce=False), [X[:, 0], X[:, 1], SIGNS]),
    }
    for reduction in ("mean", "sum", "none"):
        r = reduction
        cases.update({
            f"margin-ranking-{r}": (lambda a, b, y, r=r: F.margin_ranking_loss(a, b, y, margin=0.2, reduction=r),
                                    [X[:, 0], X[:, 1], SIGNS]),
            f"hinge-embedding-{r}": (lambda x, y, r=r: F.hinge_embedding_loss(x, y, margin=0.5, reduction=r),
                                     [X[:, 0], SIGNS]),
            f"soft-margin-{r}": (lambda x, y, r=r: F.soft_margin_loss(x, y, reduction=r), [X, np.sign(X)]),
            f"multilabel-soft-margin-{r}": (
                lambda x, y, r=r: F.multilabel_soft_margin_loss(x, y, weight=t(np.arange(1.0, 5.0)), reduction=r),
                [X, MULTI]),
            f"multi-margin-{r}": (lambda x, y, r=r: F.multi_margin_loss(x, y, reduction=r), [X, LABELS]),
            f"multi-margin-squared-weighted-{r}": (
                lambda x, y, r=r: F.multi_margin_loss(x, y, p=2, margin=0.7, weight=t(np.arange(1.0, 5.0)),
                                                      reduction=r), [X, LABELS]),
            f"cosine-embedding-{r}": (lambda a, b, y, r=r: F.cosine_embedding_loss(a, b, y, margin=-0.2, reduction=r),
                                      [X, X[::-1].copy(), SIGNS]),
            f"triplet-margin-{r}": (lambda a, p, n, r=r: F.triplet_margin_loss(a, p, n, reduction=r),
                                    [X, X[::-1].copy() * 0.5, NOISE]),
            f"triplet-margin-swap-p1-{r}": (
                lambda a, p, n, r=r: F.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction=r),
                [X, X[::-1].copy() * 0.5, NOISE]),
            f"poisson-nll-{r}": (lambda x, y, r=r: F.poisson_nll_loss(x, y, reduction=r), [X, COUNTS]),
            f"gaussian-nll-{r}": (lambda x, y, v, r=r: F.gaussian_nll_loss(x, y, v, reduction=r),
                                  [X, X[::-1].copy(), np.abs(NOISE) + 0.1]),
        })
    return cases


TARGETS = {"soft-margin", "margin-ranking", "hinge-embedding", "multilabel", "cosine-embedding", "poisson"}
CASES = list(functions(jg))


@needs_torch
@pytest.mark.parametrize("name", CASES)
def test_function_matches_pytorch(name):
    results = []
    for lib in (jg, torch):
        fn, arrays = functions(lib)[name]
        # the last array of a loss with labels is a constant target; every other floating one a leaf
        constant = len(arrays) - 1 if any(name.startswith(kind) for kind in TARGETS) or "size" in name \
            or "reduce" in name else None
        inputs = [lib.tensor(a, requires_grad=a.dtype.kind == "f" and i != constant) for i, a in enumerate(arrays)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*inputs)
        out.sum().backward() if out.dim() else out.backward()
        results.append((out, [x.grad for x in inputs if x.requires_grad]))
    (out, grads), (expected, expected_grads) = results
    assert tuple(out.shape) == tuple(expected.shape)
    assert_close(out, expected, what="value")
    for index, (grad, expected_grad) in enumerate(zip(grads, expected_grads)):
        assert_close(grad, expected_grad, what=f"gradient of input {index}")


@needs_torch
@pytest.mark.parametrize("layer,arguments,inputs", [
    ("MarginRankingLoss", {"margin": 0.3, "reduction": "sum"}, [X[:, 0], X[:, 1], SIGNS]),
    ("HingeEmbeddingLoss", {"size_average": False}, [X[:, 0], SIGNS]),
    ("CosineEmbeddingLoss", {"margin": 0.2}, [X, X[::-1].copy(), SIGNS]),
    ("SoftMarginLoss", {"reduction": "none"}, [X, np.sign(X)]),
    ("MultiLabelSoftMarginLoss", {}, [X, MULTI]),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5}, [X, LABELS]),
    ("TripletMarginLoss", {"margin": 0.5, "p": 3.0, "swap": True}, [X, X[::-1].copy(), X * 0.3]),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, [np.abs(X) + 0.1, COUNTS]),
    ("GaussianNLLLoss", {"full": True, "eps": 0.1}, [X, X[::-1].copy(), np.abs(X)]),
])
def test_loss_layers_call_their_functions(layer, arguments, inputs):
    outputs = []
    for lib in (jg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # size_average's deprecation
            module = getattr(lib.nn, layer)(**arguments)
        outputs.append((module(*[lib.tensor(a) for a in inputs]), repr(module), list(module.state_dict())))
    (ours, ours_repr, ours_keys), (theirs, theirs_repr, theirs_keys) = outputs
    assert_close(ours, theirs)
    assert ours_repr == theirs_repr and ours_keys == theirs_keys


@needs_torch
@pytest.mark.parametrize("call,error", [
    (lambda L: L.nn.functional.glu(L.ones(2, 3)), RuntimeError),
    (lambda L: L.nn.functional.softshrink(L.ones(2), -1.0), RuntimeError),
    (lambda L: L.nn.functional.prelu(L.ones(2, 3), L.ones(2)), RuntimeError),
    (lambda L: L.nn.functional.prelu(L.ones(3), L.ones(3)), RuntimeError),
    (lambda L: L.nn.PReLU()(L.ones(2, 3, dtype=L.float64)), RuntimeError),   # a float32 slope: no promotion
    (lambda L: L.nn.GRU(3, 2)(L.ones(4, 1, 3, dtype=L.float64)), ValueError),   # float32 weights
    (lambda L: L.nn.functional.rms_norm(L.ones(2, 3), (2,)), RuntimeError),
    (lambda L: L.nn.functional.multi_margin_loss(L.ones(2, 3), L.zeros(2, dtype=L.int64), p=3), ValueError),
    (lambda L: L.nn.functional.gaussian_nll_loss(L.ones(2, 3), L.ones(2, 3), -L.ones(2, 3)), ValueError),
    (lambda L: L.nn.functional.gaussian_nll_loss(L.ones(2, 3), L.ones(2, 3), L.ones(3, 3)), ValueError),
    (lambda L: L.nn.functional.triplet_margin_loss(L.ones(2, 3), L.ones(3), L.ones(2, 3)), RuntimeError),
    (lambda L: L.nn.functional.margin_ranking_loss(L.ones(2, 3), L.ones(3), L.ones(2, 3)), RuntimeError),
    (lambda L: L.nn.functional.local_response_norm(L.ones(2, 3), 2), ValueError),
    (lambda L: L.nn.InstanceNorm2d(2, affine=True)(L.ones(1, 3, 2, 2)), ValueError),
    (lambda L: L.nn.InstanceNorm1d(2)(L.ones(1, 2, 2, 2)), ValueError),
    (lambda L: L.nn.Softmax2d()(L.ones(2, 2)), ValueError),
    (lambda L: L.nn.functional.rrelu(L.ones(2), 0.5, 0.1), RuntimeError),
    (lambda L: L.nn.functional.rrelu(L.ones(2, dtype=L.int64), training=True), NotImplementedError),
])
def test_bad_input_raises_pytorchs_error(call, error):
    messages = []
    for lib in (jg, torch):
        with pytest.raises(error) as caught:
            call(lib)
        messages.append(str(caught.value))
    assert messages[0].split()[:2] == messages[1].split()[:2], messages


@needs_torch
def test_rrelu_draws_uniform_slopes_while_training():
    """Training, each negative element's slope is drawn uniformly from [lower, upper] by jitgrad's
    generator (so a seed repeats it) and is its gradient, as PyTorch's; compared in distribution with
    PyTorch's draws (mean and spread of 4000 slopes, five standard errors apart at most)."""
    lower, upper = 0.1, 0.4
    x = jg.tensor(-np.linspace(0.5, 2.0, 4000), requires_grad=True)
    jg.manual_seed(3)
    out = jg.nn.functional.rrelu(x, lower, upper, training=True)
    out.sum().backward()
    slopes = out.detach().numpy() / x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-12)
    jg.manual_seed(3)
    assert np.array_equal(jg.nn.RReLU(lower, upper)(x).detach().numpy(), out.detach().numpy())  # train mode
    torch.manual_seed(3)
    theirs = (torch.nn.functional.rrelu(torch.tensor(x.detach().numpy()), lower, upper, training=True)
              / torch.tensor(x.detach().numpy())).numpy()
    assert slopes.min() >= lower and slopes.max() <= upper and theirs.min() >= lower and theirs.max() <= upper
    spread = (upper - lower) / np.sqrt(12)
    for ours_stat, theirs_stat, expected, error in ((slopes.mean(), theirs.mean(), (lower + upper) / 2, spread / 63),
                                                    (slopes.std(), theirs.std(), spread, spread / 80)):
        assert abs(ours_stat - expected) < 5 * error and abs(theirs_stat - expected) < 5 * error
    positive = jg.tensor([0.5, 2.0])
    assert jg.nn.functional.rrelu(positive, training=True).tolist() == [0.5, 2.0]
    assert repr(jg.nn.RReLU(0.1, 0.3, inplace=True)) == repr(torch.nn.RReLU(0.1, 0.3, inplace=True))


@needs_torch
@pytest.mark.parametrize("name,fn", [
    ("rms-norm", lambda L, x, y: L.nn.functional.rms_norm(x, (4,)).pow(3).sum()),
    ("triplet-margin", lambda L, x, y: L.nn.functional.triplet_margin_loss(x, y, x * 0.5, margin=3.0)),
    ("gaussian-nll", lambda L, x, y: L.nn.functional.gaussian_nll_loss(x, y, x.square() + 0.1)),
    ("instance-norm", lambda L, x, y: L.nn.functional.instance_norm(x.reshape(1, 5, 4)).pow(3).sum()),
], ids=lambda value: value if isinstance(value, str) else "")
def test_second_derivatives_match_pytorch(name, fn):
    """Composed of registry ops, the new functions differentiate twice (``create_graph``) as PyTorch's."""
    results = []
    for lib in (jg, torch):
        x = lib.tensor(X, requires_grad=True)
        grad, = lib.autograd.grad(fn(lib, x, lib.tensor(NOISE)), [x], create_graph=True)
        second, = lib.autograd.grad((grad * lib.tensor(NOISE)).sum(), [x])
        results.append((grad.detach(), second))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, tolerance=1e-9)


MIXED_DTYPE_NORMS = {   # name -> the layer in either library, given (N, 3, 2) inputs
    "layer-norm": lambda nn: nn.LayerNorm(2), "group-norm": lambda nn: nn.GroupNorm(1, 3),
    "batch-norm": lambda nn: nn.BatchNorm1d(3), "batch-norm-eval": lambda nn: nn.BatchNorm1d(3).eval(),
    "instance-norm": lambda nn: nn.InstanceNorm1d(3, affine=True),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(MIXED_DTYPE_NORMS))
def test_a_norm_refuses_parameters_of_another_dtype_than_its_input_as_pytorch(name):
    """A float32 layer given a float64 batch (or the reverse) is PyTorch's error; jitgrad promoted the
    pair silently (before 2026-11-28): a float64 result torch never gives."""
    batch = RNG.standard_normal((4, 3, 2))
    for layer_dtype, batch_dtype in (("float32", "float64"), ("float64", "float32")):
        for lib in (jg, torch):
            layer = MIXED_DTYPE_NORMS[name](lib.nn).to(getattr(lib, layer_dtype))
            with pytest.raises(RuntimeError, match="mixed dtype"):
                layer(lib.tensor(batch.astype(batch_dtype)))
    half = jg.tensor(batch.astype(np.float16))
    assert jg.nn.functional.layer_norm(half, (2,), jg.ones(2), jg.zeros(2)).dtype == jg.float16  # PyTorch's too


@needs_torch
def test_rms_norm_returns_its_inputs_dtype_with_a_weight_of_another():
    batch, weight = RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal(3)
    ours = jg.nn.functional.rms_norm(jg.tensor(batch), (3,), jg.tensor(weight))
    with warnings.catch_warnings():   # PyTorch's note that its fused kernel is skipped
        warnings.simplefilter("ignore", UserWarning)
        theirs = torch.nn.functional.rms_norm(torch.tensor(batch), (3,), torch.tensor(weight))
    assert ours.dtype == jg.float32 and theirs.dtype == torch.float32
    assert_close(ours, theirs, 1e-6)


@needs_torch
@pytest.mark.parametrize("name", ["threshold", "hardshrink", "softshrink"])
def test_the_shrinkages_and_threshold_keep_a_nan_as_pytorch(name):
    """A NaN input failed their "above" tests and came out as ``value`` or 0 (before 2026-11-28),
    hiding a diverged value; PyTorch's tests are "within", so the NaN passes through."""
    values = np.array([np.nan, -1.0, 0.1, 2.0])
    call = {"threshold": lambda F_, x: F_.threshold(x, 0.5, -3.0), "hardshrink": lambda F_, x: F_.hardshrink(x),
            "softshrink": lambda F_, x: F_.softshrink(x, 0.5)}[name]
    ours = call(jg.nn.functional, jg.tensor(values))
    theirs = call(torch.nn.functional, torch.tensor(values))
    assert np.isnan(ours.numpy()[0])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
