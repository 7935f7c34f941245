"""Every layer against PyTorch's with the same weights (float64): outputs, the gradients of the
inputs and of every parameter, and the buffers a forward updates (BatchNorm's running statistics)."""
from __future__ import annotations

import numpy as np
import pytest
from layer_pairs import as_numpy, assert_close, needs_torch, same_weights, torch

import jitgrad as jg
import jitgrad.nn as nn

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4))
SEQUENCE = RNG.standard_normal((6, 5, 4))
IMAGES = RNG.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) / 20.0  # distinct values: no ties to pool


def run_both(make, inputs, train: bool = True, calls: int = 1):
    """The layer built by ``make(lib)`` in both libraries, called ``calls`` times on ``inputs`` (numpy
    arrays; floating ones require grad), each output's first tensor backpropagated against the same
    random weights. Returns the two modules and the two lists of input tensors."""
    ours, theirs = make(jg), make(torch)
    same_weights(ours, theirs)
    ours.train(train)
    theirs.train(train)
    ours_in = [jg.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    theirs_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    for _ in range(calls):
        out_ours, out_theirs = ours(*ours_in), theirs(*theirs_in)
        for a, b in zip(_tensors(out_ours), _tensors(out_theirs)):
            assert_close(a, b, what="output")
        first_ours, first_theirs = _tensors(out_ours)[0], _tensors(out_theirs)[0]
        weights = RNG.standard_normal(tuple(first_theirs.shape))
        (first_ours * jg.tensor(weights)).sum().backward()
        (first_theirs * torch.tensor(weights)).sum().backward()
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(a.grad, b.grad, what=f"gradient of {name}")
    for (name, a), (_, b) in zip(ours.named_buffers(), theirs.named_buffers()):
        assert_close(a, b, what=f"buffer {name}")
    for a, b in zip(ours_in, theirs_in):
        if b.grad is not None:
            assert_close(a.grad, b.grad, what="gradient of the input")
    return ours, theirs


def _tensors(out) -> list:
    """The tensors of a layer's output, in order (an LSTM's ``(output, (h, c))`` flattened)."""
    if isinstance(out, tuple):
        return [t for item in out for t in _tensors(item)]
    return [out]


LAYERS = {
    "linear": (lambda L: L.nn.Linear(4, 3), [X]),
    "linear-no-bias-3d": (lambda L: L.nn.Linear(4, 2, bias=False), [SEQUENCE]),
    "identity": (lambda L: L.nn.Sequential(L.nn.Linear(4, 2), L.nn.Identity()), [X]),
    "flatten": (lambda L: L.nn.Sequential(L.nn.Flatten(0, 1), L.nn.Linear(4, 2)), [SEQUENCE]),
    "relu": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.ReLU()), [X]),
    "tanh": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.Tanh()), [X]),
    "sigmoid": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.Sigmoid()), [X]),
    "gelu": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.GELU()), [X]),
    "gelu-tanh": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.GELU("tanh")), [X]),
    "softmax": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.Softmax(dim=1)), [X]),
    "log-softmax": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.LogSoftmax(dim=-1)), [X]),
    "dropout-eval": (lambda L: L.nn.Sequential(L.nn.Linear(4, 3), L.nn.Dropout(0.5)), [X]),
    "layer-norm": (lambda L: L.nn.LayerNorm(4), [X]),
    "layer-norm-2d": (lambda L: L.nn.LayerNorm((5, 4)), [SEQUENCE]),
    "layer-norm-plain": (lambda L: L.nn.LayerNorm(4, elementwise_affine=False), [X]),
    "batch-norm": (lambda L: L.nn.BatchNorm1d(4), [X]),
    "batch-norm-3d": (lambda L: L.nn.BatchNorm1d(5), [SEQUENCE]),
    "batch-norm-cumulative": (lambda L: L.nn.BatchNorm1d(4, momentum=None), [X]),
    "batch-norm-untracked": (lambda L: L.nn.BatchNorm1d(4, affine=False, track_running_stats=False), [X]),
    "embedding": (lambda L: L.nn.Embedding(10, 3), [np.array([[1, 2, 3], [2, 9, 0]])]),
    "embedding-padding": (lambda L: L.nn.Embedding(10, 3, padding_idx=-8), [np.array([[1, 2, 3], [2, 9, 2]])]),
    "rnn-cell": (lambda L: L.nn.RNNCell(4, 3), [X]),
    "rnn-cell-relu-state": (lambda L: L.nn.RNNCell(4, 3, nonlinearity="relu"), [X, RNG.standard_normal((5, 3))]),
    "rnn-cell-unbatched": (lambda L: L.nn.RNNCell(4, 3, bias=False), [X[0]]),
    "gru-cell": (lambda L: L.nn.GRUCell(4, 3), [X, RNG.standard_normal((5, 3))]),
    "gru-cell-unbatched": (lambda L: L.nn.GRUCell(4, 3), [X[0]]),
    "lstm-cell": (lambda L: L.nn.LSTMCell(4, 3), [X]),
    "rnn": (lambda L: L.nn.RNN(4, 3, num_layers=2), [SEQUENCE]),
    "rnn-relu-state": (lambda L: L.nn.RNN(4, 3, nonlinearity="relu"), [SEQUENCE, RNG.standard_normal((1, 5, 3))]),
    "gru-bidirectional": (lambda L: L.nn.GRU(4, 3, bidirectional=True, batch_first=True), [SEQUENCE]),
    "gru-unbatched": (lambda L: L.nn.GRU(4, 3, num_layers=2, bias=False), [SEQUENCE[:, 0]]),
    "lstm": (lambda L: L.nn.LSTM(4, 3, num_layers=2, bidirectional=True), [SEQUENCE]),
    "lstm-unbatched": (lambda L: L.nn.LSTM(4, 3), [SEQUENCE[:, 0]]),
    # convolution and pooling
    "conv2d": (lambda L: L.nn.Conv2d(2, 3, 3), [IMAGES]),
    "conv2d-strided-grouped": (lambda L: L.nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2),
                                                     groups=2, bias=False), [IMAGES]),
    "conv2d-same-unbatched": (lambda L: L.nn.Conv2d(2, 3, 3, padding="same"), [IMAGES[0]]),
    "conv1d": (lambda L: L.nn.Conv1d(2, 3, 3, stride=2, padding=1), [IMAGES[:, :, 0]]),
    "max-pool2d": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 3, 2), L.nn.MaxPool2d(2)), [IMAGES]),
    "max-pool2d-ceil": (lambda L: L.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), [IMAGES]),
    "cnn": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 4, 3, padding=1), L.nn.ReLU(), L.nn.MaxPool2d(2),
                                      L.nn.Flatten(), L.nn.Linear(4 * 3 * 3, 3)), [IMAGES]),
    "conv-transpose2d": (lambda L: L.nn.ConvTranspose2d(2, 3, 3), [IMAGES]),
    "conv-transpose2d-strided-grouped": (lambda L: L.nn.ConvTranspose2d(2, 4, (3, 2), stride=(2, 3), padding=(1, 1),
                                                                        output_padding=(1, 2), groups=2,
                                                                        dilation=(1, 2)), [IMAGES]),
    "conv-transpose2d-unbatched": (lambda L: L.nn.ConvTranspose2d(2, 1, 2, stride=2, bias=False), [IMAGES[0]]),
    "conv-transpose1d": (lambda L: L.nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1),
                         [IMAGES[:, :, 0]]),
    "autoencoder": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 4, 3, stride=2, padding=1), L.nn.ReLU(),
                                              L.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)),
                    [IMAGES[..., :6]]),
    "upsample-nearest": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 3, 3), L.nn.Upsample(scale_factor=2)), [IMAGES]),
    "upsample-bilinear": (lambda L: L.nn.Upsample(size=(4, 9), mode="bilinear", align_corners=True), [IMAGES]),
    "pixel-shuffle": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 8, 1), L.nn.PixelShuffle(2), L.nn.PixelUnshuffle(2)),
                      [IMAGES]),
    "unflatten": (lambda L: L.nn.Sequential(L.nn.Flatten(), L.nn.Unflatten(1, (2, 42))), [IMAGES]),
    "padding-layers": (lambda L: L.nn.Sequential(L.nn.ReflectionPad2d((1, 2, 0, 1)), L.nn.ZeroPad2d(1),
                                                 L.nn.ReplicationPad2d(2), L.nn.ConstantPad2d((0, 1, 2, 0), 0.5),
                                                 L.nn.CircularPad2d(1)), [IMAGES]),
    "padding-layers-1d": (lambda L: L.nn.Sequential(L.nn.ReflectionPad1d(2), L.nn.ConstantPad1d((1, 0), -1.0),
                                                    L.nn.ReplicationPad1d((0, 3)), L.nn.CircularPad1d(1)),
                          [IMAGES[:, :, 0]]),
    "conv-padding-modes": (lambda L: L.nn.Sequential(
        L.nn.Conv2d(2, 2, 3, padding=(1, 2), padding_mode="reflect"),
        L.nn.Conv2d(2, 2, 2, padding=1, padding_mode="circular", groups=2)), [IMAGES]),
    "conv1d-same-even-kernel": (lambda L: L.nn.Sequential(L.nn.Conv1d(2, 3, 4, padding="same"),
                                                          L.nn.Conv1d(3, 2, 4, padding="same", dilation=3,
                                                                      padding_mode="replicate")), [IMAGES[:, :, 0]]),
    "padding-layers-3d": (lambda L: L.nn.Sequential(L.nn.ReflectionPad3d((1, 0, 0, 1, 1, 1)), L.nn.CircularPad3d(1)),
                          [IMAGES[None, :1, :, :3, :3]]),
    "upsampling-2d-layers": (lambda L: L.nn.Sequential(L.nn.UpsamplingNearest2d(scale_factor=2),
                                                       L.nn.UpsamplingBilinear2d(size=(5, 7))), [IMAGES]),
    "dropout2d-eval": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 3, 3), L.nn.Dropout2d(0.5)), [IMAGES]),
    "max-pool1d": (lambda L: L.nn.MaxPool1d(3, stride=2, padding=1, ceil_mode=True), [IMAGES[:, :, 0]]),
    "avg-pool2d-tiles": (lambda L: L.nn.AvgPool2d(2), [IMAGES[..., :6]]),
    "avg-pool2d-padded": (lambda L: L.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), [IMAGES]),
    "avg-pool2d-real-count": (lambda L: L.nn.AvgPool2d((3, 2), stride=(2, 3), padding=1, ceil_mode=True,
                                                       count_include_pad=False), [IMAGES]),
    "avg-pool2d-divisor": (lambda L: L.nn.AvgPool2d(3, stride=1, padding=1, divisor_override=5), [IMAGES[0]]),
    "avg-pool1d": (lambda L: L.nn.AvgPool1d(3, stride=2, padding=1), [IMAGES[:, :, 0]]),
    "adaptive-avg-pool2d": (lambda L: L.nn.AdaptiveAvgPool2d((4, 3)), [IMAGES]),
    "adaptive-avg-pool2d-tiles": (lambda L: L.nn.AdaptiveAvgPool2d(1), [IMAGES]),
    "adaptive-avg-pool1d": (lambda L: L.nn.AdaptiveAvgPool1d(4), [IMAGES[:, :, 0]]),
    # attention
    "multihead-attention": (lambda L: L.nn.MultiheadAttention(4, 2), [SEQUENCE, SEQUENCE[:3], SEQUENCE[:3]]),
    "multihead-attention-batch-first": (lambda L: L.nn.MultiheadAttention(4, 4, bias=False, batch_first=True),
                                        [SEQUENCE, SEQUENCE, SEQUENCE]),
    "multihead-attention-unbatched": (lambda L: L.nn.MultiheadAttention(4, 1), [X, X[:2], X[:2]]),
    "transformer-encoder-layer": (lambda L: L.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), [SEQUENCE]),
    "transformer-encoder-norm-first": (lambda L: L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(
        4, 2, 8, dropout=0.0, activation="gelu", batch_first=True, norm_first=True), 2, L.nn.LayerNorm(4),
        enable_nested_tensor=False), [SEQUENCE]),
    "transformer-decoder-layer": (lambda L: L.nn.TransformerDecoderLayer(4, 1, 8, dropout=0.0), [SEQUENCE[:3], SEQUENCE]),
    "transformer": (lambda L: L.nn.Transformer(4, 2, 1, 2, 8, dropout=0.0), [SEQUENCE, SEQUENCE[:3]]),
    # normalization over images
    "batch-norm-2d": (lambda L: L.nn.BatchNorm2d(2), [IMAGES]),
    "batch-norm-3d-volumes": (lambda L: L.nn.BatchNorm3d(2, momentum=None), [IMAGES[:, :, None]]),
    "group-norm": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 4, 3), L.nn.GroupNorm(2, 4)), [IMAGES]),
    "group-norm-plain": (lambda L: L.nn.GroupNorm(1, 2, affine=False), [IMAGES]),
    "cnn-batch-norm": (lambda L: L.nn.Sequential(L.nn.Conv2d(2, 4, 3, padding=1), L.nn.BatchNorm2d(4), L.nn.ReLU(),
                                                 L.nn.AdaptiveAvgPool2d((2, 2)), L.nn.Flatten(), L.nn.Linear(16, 3)),
                       [IMAGES]),
}


@needs_torch
@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # PyTorch's Transformer about its fast path
def test_layer_matches_pytorch(name, train):
    make, inputs = LAYERS[name]
    if name in ("dropout-eval", "dropout2d-eval") and train:
        pytest.skip("dropout draws differ from PyTorch's while training (see test_dropout_*)")
    run_both(make, inputs, train=train, calls=3)


@needs_torch
def test_lstm_takes_its_state_and_returns_pytorchs():
    ours, theirs = nn.LSTM(4, 3, num_layers=2), torch.nn.LSTM(4, 3, num_layers=2)
    same_weights(ours, theirs)
    h, c = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 3))
    out, (h_n, c_n) = ours(jg.tensor(SEQUENCE), (jg.tensor(h), jg.tensor(c)))
    expected, (h_t, c_t) = theirs(torch.tensor(SEQUENCE), (torch.tensor(h), torch.tensor(c)))
    for a, b in ((out, expected), (h_n, h_t), (c_n, c_t)):
        assert_close(a, b)
    cell_ours, cell_theirs = nn.LSTMCell(4, 3), torch.nn.LSTMCell(4, 3)
    same_weights(cell_ours, cell_theirs)
    for a, b in zip(cell_ours(jg.tensor(X[0]), (jg.tensor(h[0, 0]), jg.tensor(c[0, 0]))),
                    cell_theirs(torch.tensor(X[0]), (torch.tensor(h[0, 0]), torch.tensor(c[0, 0])))):
        assert_close(a, b)


def test_embedding_refuses_indices_outside_the_table():
    table = nn.Embedding(4, 2)
    for bad in ([4], [-1]):
        with pytest.raises(IndexError, match="index out of range in self"):
            table(jg.tensor(bad))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        table(jg.tensor([0.0]))
    with pytest.raises(NotImplementedError, match="max_norm"):
        nn.Embedding(4, 2, max_norm=1.0)


def test_embedding_from_pretrained():
    weights = jg.tensor([[1.0, 2.0], [3.0, 4.0]])
    frozen = nn.Embedding.from_pretrained(weights)
    assert not frozen.weight.requires_grad and frozen(jg.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(weights, freeze=False).weight.requires_grad


def test_dropout_scales_what_it_keeps_and_is_repeatable():
    layer = nn.Dropout(0.25)
    x = jg.ones(20000)
    jg.manual_seed(3)
    first = layer(x).numpy()
    jg.manual_seed(3)
    assert np.array_equal(layer(x).numpy(), first)
    kept = first != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(first[kept], 1 / 0.75)
    assert np.array_equal(layer.eval()(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="dropout probability p has to be between 0 and 1, but got p=1.5"):
        nn.Dropout(1.5)


@needs_torch
@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 0, 3)])
def test_batch_and_group_norm_of_empty_inputs_are_empty_as_in_pytorch(shape):
    """A batch of 0 (or no channels): an empty result, the running statistics as they were, as PyTorch;
    until 2026-11-28 batch_norm refused it (or divided by 0 channels) and group_norm's reshape to -1 was
    ambiguous."""
    def run(L):
        x = L.ones(shape, dtype=L.float64, requires_grad=True)
        running = L.zeros(shape[1], dtype=L.float64)
        y = L.nn.functional.batch_norm(x, running, L.ones(shape[1], dtype=L.float64), training=True)
        if shape[1]:
            y = y + L.nn.functional.group_norm(x, 2)
        y.sum().backward()
        return tuple(y.shape), tuple(x.grad.shape), running.tolist()
    assert run(jg) == run(torch)


def test_batch_norm_needs_more_than_one_value_per_channel_to_train():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(jg.ones(1, 3))
    nn.BatchNorm1d(3).eval()(jg.ones(1, 3))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(jg.ones(2, 3, 1, 1))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.BatchNorm2d(3)(jg.ones(2, 3))
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)


def test_default_initialisations_have_pytorchs_bounds():
    jg.manual_seed(0)
    linear = nn.Linear(50, 40)
    bound = 1 / np.sqrt(50)
    for param in (linear.weight, linear.bias):
        values = as_numpy(param)
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.9 * bound
    gru = nn.GRU(10, 25, num_layers=2)
    assert all(np.abs(as_numpy(p)).max() <= 1 / 5 for p in gru.parameters())
    table = nn.Embedding(300, 40, padding_idx=3)
    weights = as_numpy(table.weight)
    assert not weights[3].any() and abs(weights.std() - 1) < 0.05
    norm = nn.LayerNorm(3)
    assert norm.weight.tolist() == [1.0] * 3 and norm.bias.tolist() == [0.0] * 3


def test_a_transformer_draws_its_matrices_by_xavier_uniform_as_pytorchs():
    """PyTorch's Transformer redraws every parameter of two or more dimensions by xavier_uniform_;
    jitgrad's kept each Linear's default (a bound half as wide for the feed-forward's second matrix)
    before 2026-11-28. Vectors keep their layers' initialisations."""
    jg.manual_seed(0)
    model = nn.Transformer(8, 2, 1, 1, dim_feedforward=16)
    for name, param in model.named_parameters():
        values = as_numpy(param)
        if param.dim() > 1:
            bound = np.sqrt(6 / sum(values.shape[:2]))
            assert 0.8 * bound < np.abs(values).max() <= bound, name
    assert as_numpy(model.encoder.norm.weight).tolist() == [1.0] * 8


def test_initialisation_follows_the_seed():
    jg.manual_seed(5)
    first = as_numpy(nn.Linear(3, 3).weight).copy()
    jg.manual_seed(5)
    assert np.array_equal(as_numpy(nn.Linear(3, 3).weight), first)


def test_layers_take_a_dtype():
    assert nn.Linear(2, 2, dtype=jg.float64).weight.dtype == jg.float64
    assert nn.BatchNorm1d(2, dtype=jg.float64).running_var.dtype == jg.float64
    if not jg.cuda.is_available():  # tests/cuda makes layers on the GPU
        with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
            nn.Linear(2, 2, device="cuda")
