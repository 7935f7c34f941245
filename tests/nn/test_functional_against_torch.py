"""``pad``, ``one_hot``, the distances and the poolings' argument checks of ``nn.functional`` against
PyTorch's: values, gradients (weighted by random numbers, so that every position's counts), and the
errors of bad arguments."""
from __future__ import annotations

import numpy as np
import pytest
from layer_pairs import assert_close, needs_torch, torch

import jitgrad as jg
import jitgrad.nn.functional as F

RNG = np.random.default_rng(5)
CUBE = RNG.standard_normal((2, 3, 4, 5))


def _both(fn_of_lib, *arrays):
    """``fn_of_lib(lib)(*tensors)`` in both libraries, the first array requiring grad; the outputs and
    that input's gradient."""
    results = []
    weights = None
    for lib in (jg, torch):
        inputs = [lib.tensor(a, requires_grad=(i == 0)) for i, a in enumerate(arrays)]
        out = fn_of_lib(lib)(*inputs)
        if weights is None:
            weights = RNG.standard_normal(tuple(out.shape))
        (out * lib.tensor(weights)).sum().backward()
        results.append((out, inputs[0].grad))
    return results


PADS = {  # non-constant modes pad the last 1, 2 or 3 dimensions of inputs with 1 or 2 more, as PyTorch's
    "constant": ((1, 2), {"value": 1.5}, CUBE),
    "constant-cropping": ((-1, 2, 0, 1), {}, CUBE),
    "constant-three-dims": ((1, 0, 0, 2, 1, 1), {}, CUBE),
    "reflect": ((2, 3), {"mode": "reflect"}, CUBE[0]),
    "reflect-2d": ((1, 2, 3, 1), {"mode": "reflect"}, CUBE),
    "replicate": ((3, 4), {"mode": "replicate"}, CUBE[0]),
    "replicate-3d": ((1, 2, 2, 1, 1, 2), {"mode": "replicate"}, CUBE),
    "circular-2d": ((1, 2, 2, 3), {"mode": "circular"}, CUBE),
    "circular-cropping": ((-1, 2, 2, -1), {"mode": "circular"}, CUBE),  # crops, then wraps what is left
}


@needs_torch
@pytest.mark.parametrize("name", PADS)
def test_pad_matches_pytorch(name):
    amounts, options, array = PADS[name]
    (ours, grad), (theirs, expected) = _both(lambda lib: lambda x: lib.nn.functional.pad(x, amounts, **options), array)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert_close(ours, theirs, what="padded")
    assert_close(grad, expected, what="gradient")


def test_pad_refuses_what_pytorch_refuses():
    x = jg.ones(1, 2, 3)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times"):
        F.pad(x, (1,) * 8)
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension, "
                                           r"but got: padding \(3, 3\) at dimension 2 of input \[1, 2, 3\]"):
        F.pad(x, (3, 3), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode bogus"):
        F.pad(x, (1, 1), mode="bogus")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value argument'):
        F.pad(x, (1, 1), mode="reflect", value=2.0)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D input tensor"):
        F.pad(jg.ones(3), (1, 1), mode="replicate")


@needs_torch
@pytest.mark.parametrize("num_classes", [-1, 6])
def test_one_hot_matches_pytorch(num_classes):
    labels = np.array([[0, 2, 4], [1, 1, 3]])
    ours = F.one_hot(jg.tensor(labels), num_classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(labels), num_classes)
    assert ours.dtype == jg.int64 and tuple(ours.shape) == tuple(theirs.shape)
    assert np.array_equal(ours.numpy(), theirs.numpy())


def test_one_hot_refuses_bad_classes():
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(jg.tensor([0, 3]), 2)
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(jg.tensor([-1, 2]))
    with pytest.raises(RuntimeError, match="only applicable to index tensor of type LongTensor"):
        F.one_hot(jg.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor"):
        F.one_hot(jg.zeros(0, dtype=jg.int64))


DISTANCES = {
    "cosine": lambda lib: lambda a, b: lib.nn.functional.cosine_similarity(a, b),
    "cosine-last-dim-broadcast": lambda lib: lambda a, b: lib.nn.functional.cosine_similarity(a, b[:1], dim=-1),
    "cosine-zero-vector": lambda lib: lambda a, b: lib.nn.functional.cosine_similarity(a, b * 0.0, dim=0),
    "pairwise": lambda lib: lambda a, b: lib.nn.functional.pairwise_distance(a, b),
    "pairwise-p1-keepdim": lambda lib: lambda a, b: lib.nn.functional.pairwise_distance(a, b, p=1.0, keepdim=True),
    "pairwise-p3": lambda lib: lambda a, b: lib.nn.functional.pairwise_distance(a, b, p=3.0),
    "pairwise-inf": lambda lib: lambda a, b: lib.nn.functional.pairwise_distance(a, b, p=float("inf")),
    "cosine-layer": lambda lib: lambda a, b: lib.nn.CosineSimilarity(dim=0, eps=1e-6)(a, b),
    "pairwise-layer": lambda lib: lambda a, b: lib.nn.PairwiseDistance(p=1.5)(a, b),
    # PyTorch clamps the norms to eps without recording it: the gradient flows through the norm
    "cosine-clamped-norm": lambda lib: lambda a, b: lib.nn.functional.cosine_similarity(a, b, eps=3.0),
    # the inputs broadcast before dim is read: dim=1 of a 1-d x1
    "cosine-broadcast-first": lambda lib: lambda a, b: lib.nn.functional.cosine_similarity(a[0], b, dim=1),
    # p=0 counts the differences that are not zero (a.sum gives both libraries a gradient to compare)
    "pairwise-p0": lambda lib: lambda a, b: lib.nn.functional.pairwise_distance(a.round(), b.round(), p=0.0,
                                                                                 eps=0.0) + a.sum(-1),
}


@needs_torch
@pytest.mark.parametrize("name", DISTANCES)
def test_distances_match_pytorch(name):
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    (ours, grad), (theirs, expected) = _both(DISTANCES[name], a, b)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert_close(ours, theirs, what="distance")
    assert_close(grad, expected, tolerance=1e-9, what="gradient")


@needs_torch
def test_cosine_similarity_of_a_zero_vector_has_pytorchs_gradient():
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    a[:, 2] = 0.0
    (ours, grad), (theirs, expected) = _both(lambda lib: lambda x, y: lib.nn.functional.cosine_similarity(x, y, dim=0),
                                             a, b)
    assert_close(ours, theirs, what="similarity")
    assert_close(grad, expected, tolerance=1e-9, what="gradient at the zero vector")


def test_poolings_refuse_bad_windows():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.avg_pool2d(jg.ones(1, 2, 5, 5), 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Calculated output size: \(2x0x0\). Output size is too small"):
        F.avg_pool2d(jg.ones(1, 2, 5, 5), 7)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(jg.ones(1, 2, 5, 5), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="Expected 2 to 3 dimensions, but got 4-dimensional tensor"):
        F.avg_pool1d(jg.ones(2, 5, 5, 5), 2)
    with pytest.raises(RuntimeError, match="max_pool1d: Expected 2D or 3D"):
        F.max_pool1d(jg.ones(2, 5, 5, 5), 2)


BLOCKED = np.array([[True, False, True], [False, False, False], [True, True, False], [True, False, False]])
ATTENTION = {
    "plain": {},
    "scaled": {"scale": 0.3},
    "causal": {"is_causal": True},
    "boolean-mask": {"attn_mask": BLOCKED},
    "boolean-mask-with-a-blind-query": {"attn_mask": np.where(np.arange(4)[:, None] == 1, False, BLOCKED)},
    "float-mask": {"attn_mask": RNG.standard_normal((4, 3))},
}


@needs_torch
@pytest.mark.parametrize("name", ATTENTION)
def test_scaled_dot_product_attention_matches_pytorch(name):
    """Over (N, heads, L, E) queries and (N, heads, S, E) keys and values; a query masked from every
    key attends to nothing, with a zero gradient (PyTorch's math kernel), never NaN."""
    q, k, v = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((2, 3, 3, 5)), RNG.standard_normal((2, 3, 3, 5))

    def attention(lib):
        options = {key: lib.tensor(value) if isinstance(value, np.ndarray) else value
                   for key, value in ATTENTION[name].items()}
        return lambda query, key, value: lib.nn.functional.scaled_dot_product_attention(query, key, value, **options)

    (ours, grad), (theirs, expected) = _both(attention, q, k, v)
    assert_close(ours, theirs, what="attention")
    assert_close(grad, expected, what="gradient of the queries")
    assert np.isfinite(grad.numpy()).all()


@needs_torch
def test_grouped_query_attention_matches_pytorch():
    """``enable_gqa``: two key and value heads each serve two consecutive query heads."""
    q, k, v = RNG.standard_normal((2, 4, 3, 5)), RNG.standard_normal((2, 2, 3, 5)), RNG.standard_normal((2, 2, 3, 5))
    (ours, grad), (theirs, expected) = _both(lambda lib: lambda query, key, value: lib.nn.functional.
                                             scaled_dot_product_attention(query, key, value, is_causal=True,
                                                                          enable_gqa=True), q, k, v)
    assert_close(ours, theirs, what="attention")
    assert_close(grad, expected, what="gradient of the queries")
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide the number of heads"):
        F.scaled_dot_product_attention(jg.tensor(q), jg.tensor(q[:, :3]), jg.tensor(q[:, :3]), enable_gqa=True)


@needs_torch
def test_multihead_attention_masks_match_pytorch():
    """Boolean masks say which keys are *not* attended (the opposite of scaled_dot_product_attention's),
    float masks add; with and without the weights, averaged over the heads or not."""
    query, memory = RNG.standard_normal((4, 2, 6)), RNG.standard_normal((3, 2, 6))
    padding = np.array([[False, False, True], [False, True, True]])
    settings = [{"key_padding_mask": padding}, {"attn_mask": BLOCKED & ~BLOCKED[:, :1]},
                {"attn_mask": RNG.standard_normal((4, 3)), "average_attn_weights": False},
                {"key_padding_mask": np.array([[True, True, True], [False, True, True]]), "need_weights": False}]
    for options in settings:
        modules = [lib.nn.MultiheadAttention(6, 3) for lib in (jg, torch)]
        modules[1].load_state_dict({k: torch.tensor(v.numpy()) for k, v in modules[0].state_dict().items()})
        results = []
        for lib, module in zip((jg, torch), modules):
            q, m = lib.tensor(query, requires_grad=True), lib.tensor(memory)
            given = {key: lib.tensor(value) if isinstance(value, np.ndarray) else value for key, value in options.items()}
            out, weights = module.double()(q, m, m, **given)
            (out * out).sum().backward()
            results.append((out, weights, q.grad, module.in_proj_weight.grad))
        for ours, theirs in zip(*results):
            assert (ours is None) == (theirs is None)
            if ours is not None:
                assert_close(ours, theirs, tolerance=1e-9)


@needs_torch
@pytest.mark.parametrize("options", [{"kdim": 3, "vdim": 5}, {"add_bias_kv": True, "add_zero_attn": True},
                                     {"kdim": 3, "vdim": 5, "add_bias_kv": True, "batch_first": True}],
                         ids=["kdim-vdim", "bias-kv-zero-attn", "all-batch-first"])
def test_multihead_attention_of_other_key_sizes_and_appended_keys_matches_pytorch(options):
    """Separate projection weights for keys and values of their own sizes; a learnt and a zero key
    appended to every sequence, which the masks (padded) let every query see."""
    theirs = torch.nn.MultiheadAttention(6, 3, **options).double()
    ours = jg.nn.MultiheadAttention(6, 3, **options).double()
    assert sorted(dict(ours.named_parameters())) == sorted(dict(theirs.named_parameters()))
    ours.load_state_dict({k: jg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    batch_first = options.get("batch_first", False)
    shapes = [(4, 2, 6), (3, 2, options.get("kdim", 6)), (3, 2, options.get("vdim", 6))]
    arrays = [RNG.standard_normal((s[1], s[0], s[2]) if batch_first else s) for s in shapes]
    padding = np.array([[False, False, True], [False, True, False]])
    results = []
    for lib, module in ((jg, ours), (torch, theirs)):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
        out, weights = module(q, k, v, key_padding_mask=lib.tensor(padding), attn_mask=lib.tensor(BLOCKED[:, :3]),
                              average_attn_weights=False)
        ((out * out).sum() + weights.sum()).backward()
        results.append((out, weights, q.grad, k.grad, v.grad, *(p.grad for _, p in sorted(module.named_parameters()))))
    for mine, expected in zip(*results):
        assert_close(mine, expected, tolerance=1e-9)


def test_attention_refuses_what_pytorch_refuses():
    q = jg.ones(1, 2, 3)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=jg.ones(2, 2, dtype=jg.bool), is_causal=True)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        jg.nn.MultiheadAttention(4, 3)
    attention = jg.nn.MultiheadAttention(4, 2)
    x = jg.ones(3, 2, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(2, 2\), but should be \(3, 3\)"):
        attention(x, x, x, attn_mask=jg.ones(2, 2, dtype=jg.bool))
    with pytest.raises(AssertionError, match=r"expecting key_padding_mask shape of \(2, 3\)"):
        attention(x, x, x, key_padding_mask=jg.ones(3, 2, dtype=jg.bool))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        attention(x, x, x, is_causal=True)


@needs_torch
def test_conv_transpose_takes_an_output_size_as_pytorch():
    ours, theirs = jg.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), torch.nn.ConvTranspose2d(2, 3, 3, stride=2,
                                                                                                  padding=1)
    ours.load_state_dict({k: jg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    for size in ([7, 9], [8, 10], (1, 3, 8, 9)):
        assert_close(ours(jg.tensor(x), output_size=size), theirs(torch.tensor(x), output_size=size), 1e-5)
    with pytest.raises(ValueError, match="requested an output size of"):
        ours(jg.tensor(x), output_size=[9, 9])


def test_conv_transpose_refuses_what_pytorch_refuses():
    x = jg.ones(1, 2, 3, 3)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(x, jg.ones(2, 2, 3, 3), output_padding=1)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[3, 2, 3, 3\], expected "
                                           r"input\[1, 2, 3, 3\] to have 3 channels, but got 2 channels instead"):
        F.conv_transpose2d(x, jg.ones(3, 2, 3, 3))
    with pytest.raises(RuntimeError, match="Given groups=3, expected weight to be at least 3 at dimension 0"):
        F.conv_transpose2d(x, jg.ones(2, 2, 3, 3), groups=3)


RESIZES = {
    "nearest-size": ((2, 3, 5, 7), {"size": (8, 4)}),
    "nearest-scale": ((2, 3, 5, 7), {"scale_factor": 1.7}),
    "nearest-exact": ((2, 3, 5, 7), {"size": (3, 9), "mode": "nearest-exact"}),
    "nearest-1d": ((2, 3, 5), {"scale_factor": 2}),
    "linear": ((2, 3, 5), {"size": 9, "mode": "linear"}),
    "linear-corners": ((2, 3, 5), {"size": 8, "mode": "linear", "align_corners": True}),
    "bilinear-scale": ((2, 3, 5, 7), {"scale_factor": (2.0, 0.6), "mode": "bilinear"}),
    "bilinear-recomputed": ((2, 3, 5, 7), {"scale_factor": 1.3, "mode": "bilinear", "recompute_scale_factor": True}),
    "bilinear-corners-down": ((2, 3, 5, 7), {"size": (3, 1), "mode": "bilinear", "align_corners": True}),
    "trilinear": ((1, 2, 3, 4, 5), {"size": (4, 2, 7), "mode": "trilinear"}),
    "area": ((2, 3, 5, 7), {"size": (2, 3), "mode": "area"}),
    "area-3d": ((1, 2, 3, 5, 4), {"size": (2, 3, 6), "mode": "area"}),
    "bicubic-up": ((2, 3, 5, 7), {"size": (9, 4), "mode": "bicubic"}),
    "bicubic-scale": ((2, 3, 5, 7), {"scale_factor": (0.6, 2.5), "mode": "bicubic"}),
    "bicubic-corners": ((2, 3, 5, 7), {"size": (8, 3), "mode": "bicubic", "align_corners": True}),
}


@needs_torch
@pytest.mark.parametrize("name", RESIZES)
def test_interpolate_matches_pytorch(name):
    shape, options = RESIZES[name]
    (ours, grad), (theirs, expected) = _both(lambda lib: lambda x: lib.nn.functional.interpolate(x, **options),
                                             RNG.standard_normal(shape))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert_close(ours, theirs, what="resized")
    assert_close(grad, expected, what="gradient")


def test_interpolate_refuses_what_pytorch_refuses():
    x = jg.ones(1, 1, 4, 4)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2.0)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(2,), mode="bilinear")


@needs_torch
@pytest.mark.parametrize("factor", [2, 3])
def test_pixel_shuffle_and_unshuffle_match_pytorch(factor):
    array = RNG.standard_normal((2, 2 * factor * factor, 3, 2))
    (ours, grad), (theirs, expected) = _both(lambda lib: lambda x: lib.nn.functional.pixel_shuffle(x, factor), array)
    assert_close(ours, theirs)
    assert_close(grad, expected)
    back = F.pixel_unshuffle(ours, factor)
    assert np.array_equal(back.detach().numpy(), array)
    assert_close(back, torch.nn.functional.pixel_unshuffle(theirs, factor))


def test_channel_dropout_zeroes_whole_channels():
    jg.manual_seed(0)
    out = F.dropout2d(jg.ones(8, 16, 3, 3), 0.5).numpy()
    per_channel = out.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0 < (per_channel == 0).all(-1).mean() < 1
    assert np.array_equal(F.dropout2d(jg.ones(2, 3, 4, 4), 0.5, training=False).numpy(), np.ones((2, 3, 4, 4)))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(jg.ones(2, 3, 4), 0.5)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(jg.ones(2, 3, 4, 5), 0.5)
