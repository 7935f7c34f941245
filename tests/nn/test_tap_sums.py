"""``tap_sum`` (``jitgrad/ops/tap_sums.py``), which ``interpolate`` and the average poolings are made of:
its tables, its gradients, and where an ``inf`` or NaN goes, eagerly and compiled, against PyTorch.

Until 2026-11-28 these functions were matrix products with banded weight matrices, so one non-finite
input made every output NaN (``0 * inf``); each test of placement here fails on that code."""
from __future__ import annotations

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.ops.tap_sums import tap_sum, tap_tables

RNG = np.random.default_rng(11)

# each: a call of jitgrad.nn.functional or torch.nn.functional by the same name and arguments
CALLS = {
    "nearest": ("interpolate", {"size": (9, 5)}),
    "nearest-exact": ("interpolate", {"scale_factor": 1.5, "mode": "nearest-exact"}),
    "bilinear": ("interpolate", {"size": (11, 4), "mode": "bilinear"}),
    "bilinear-corners": ("interpolate", {"scale_factor": 2.0, "mode": "bilinear", "align_corners": True}),
    "bicubic": ("interpolate", {"size": (8, 9), "mode": "bicubic"}),
    "area": ("interpolate", {"size": (4, 5), "mode": "area"}),
    "avg_pool2d-overlapping": ("avg_pool2d", {"kernel_size": 3, "stride": 1, "padding": 1}),
    "avg_pool2d-ceil-real-count": ("avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                                  "count_include_pad": False}),
    "avg_pool2d-divisor": ("avg_pool2d", {"kernel_size": 2, "stride": 1, "divisor_override": 3}),
    "adaptive_avg_pool2d": ("adaptive_avg_pool2d", {"output_size": (4, 5)}),
}


def _image(value: float) -> np.ndarray:
    """A (2, 2, 6, 7) image holding ``value`` at one position and at one of the last column."""
    x = RNG.standard_normal((2, 2, 6, 7))
    x[0, 1, 2, 3] = value
    x[1, 0, 5, 6] = value
    return x


def _value_and_gradient(lib, name: str, options: dict, x: np.ndarray, weights: np.ndarray | None):
    leaf = lib.tensor(x, requires_grad=True)
    out = getattr(lib.nn.functional, name)(leaf, **options)
    if weights is None:
        weights = RNG.standard_normal(tuple(out.shape))
    (out * lib.tensor(weights)).sum().backward()
    return out.detach().numpy(), leaf.grad.numpy(), weights


def _same_placement(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    for kind in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(kind(ours), kind(theirs), err_msg=f"{what}: {kind.__name__}")
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-9, atol=1e-9, err_msg=what)


@needs_torch
@pytest.mark.parametrize("value", [np.inf, np.nan], ids=["inf", "nan"])
@pytest.mark.parametrize("name", CALLS)
def test_a_non_finite_input_reaches_the_outputs_and_gradients_pytorch_gives_it(name, value):
    function, options = CALLS[name]
    x = _image(value)
    theirs, their_grad, weights = _value_and_gradient(torch, function, options, x, None)
    ours, our_grad, _ = _value_and_gradient(jg, function, options, x, weights)
    _same_placement(ours, theirs, f"{name} value")
    _same_placement(our_grad, their_grad, f"{name} gradient")


def test_one_nan_stays_in_the_neighbourhood_that_reads_it():
    """Without PyTorch: a NaN at one pixel of a 12 x 12 image reaches at most the outputs whose taps
    cover it (bilinear x2: 4 x 4 of 24 x 24; a 3 x 3 mean: 3 x 3)."""
    x = np.zeros((1, 1, 12, 12))
    x[0, 0, 5, 6] = np.nan
    resized = F.interpolate(jg.tensor(x), scale_factor=2, mode="bilinear").numpy()
    assert 0 < np.isnan(resized).sum() <= 16
    assert np.isnan(resized[0, 0, 9:13, 11:15]).any() and not np.isnan(resized[0, 0, :8]).any()
    pooled = F.avg_pool2d(jg.tensor(x), 3, stride=1, padding=1).numpy()
    assert np.isnan(pooled).sum() == 9 and np.isnan(pooled[0, 0, 4:7, 5:8]).all()


def test_tables_and_their_transpose_describe_the_same_matrix():
    index = RNG.integers(0, 6, (5, 3))
    index[1, 2] = 6  # a short row: the position past the end reads nothing
    weight = RNG.standard_normal((5, 3))
    tables = tap_tables(index, weight, 6)
    forward, backward = np.zeros((5, 7)), np.zeros((6, 6))
    np.add.at(forward, (np.arange(5)[:, None], tables.index), tables.weight)
    np.add.at(backward, (np.arange(6)[:, None], tables.index_t), tables.weight_t)
    np.testing.assert_allclose(forward[:, :6].T, backward[:, :5])
    assert forward[1, 6] == weight[1, 2] and (tables.index_t <= 5).all()


def test_tap_sum_gradients_of_first_and_second_order_match_finite_differences():
    tables = tap_tables(np.array([[0, 2], [1, 3], [3, 3], [2, 4]]), RNG.standard_normal((4, 2)), 5)
    x = jg.tensor(RNG.standard_normal((2, 5, 3)), requires_grad=True)
    assert jg.autograd.gradcheck(lambda t: tap_sum(t, 1, tables) ** 2, (x,))
    assert jg.autograd.gradgradcheck(lambda t: tap_sum(t, 1, tables) ** 2, (x,))


def test_compiled_resizing_and_pooling_place_non_finite_values_as_eagerly():
    def resize_and_pool(t):
        return (F.interpolate(t, size=(9, 5), mode="bicubic"), F.avg_pool2d(t, 3, stride=1, padding=1),
                F.adaptive_avg_pool2d(t, (4, 5)))

    compiled = jg.compile(resize_and_pool, fullgraph=True)
    for value in (np.inf, np.nan, 1.0):
        x = jg.tensor(_image(value))
        for ours, eager in zip(compiled(x), resize_and_pool(x)):
            _same_placement(ours.numpy(), eager.numpy(), f"compiled with {value}")


@needs_torch
@pytest.mark.parametrize("options", [{"kernel_size": 3, "stride": 1, "padding": 1},
                                     {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                      "count_include_pad": False},
                                     {"kernel_size": 2, "divisor_override": 3}])
def test_average_pooling_of_int64_truncates_as_pytorch(options):
    x = RNG.integers(-50, 50, (2, 3, 6, 7))
    ours, theirs = F.avg_pool2d(jg.tensor(x), **options), torch.nn.functional.avg_pool2d(torch.tensor(x), **options)
    assert ours.dtype == jg.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_integer_inputs_pytorch_refuses_are_refused():
    x = jg.tensor(RNG.integers(0, 9, (1, 1, 4, 4)))
    with pytest.raises(NotImplementedError, match="'Long'"):
        F.adaptive_avg_pool2d(x, 3)
    with pytest.raises(NotImplementedError, match="mode='bilinear' is not implemented for 'Long'"):
        F.interpolate(x, scale_factor=2, mode="bilinear")
    with pytest.raises(NotImplementedError, match="\"avg_pool2d\" not implemented for 'Int'"):
        F.avg_pool2d(x.to(jg.int32), 2)
    np.testing.assert_array_equal(F.interpolate(x, scale_factor=2).numpy(), x.numpy().repeat(2, 2).repeat(2, 3))


def test_compiled_tap_sums_of_a_vector_and_of_a_transposed_matrix_equal_eager():
    """The last dimension's loops with no block dimension (a vector) and over strided rows."""
    tables = tap_tables(np.array([[0, 1], [2, 6], [5, 5]]), RNG.standard_normal((3, 2)), 6)

    def both(vector, matrix):
        return tap_sum(vector, 0, tables) * 1.0, tap_sum(matrix.t(), 1, tables) * 1.0

    vector, matrix = jg.tensor(RNG.standard_normal(6)), jg.tensor(RNG.standard_normal((6, 4)))
    for ours, eager in zip(jg.compile(both, fullgraph=True)(vector, matrix), both(vector, matrix)):
        np.testing.assert_allclose(ours.numpy(), eager.numpy(), rtol=1e-12, atol=1e-12)
