"""The maths kernels of the CUDA backend (``backends/numba_cuda/kernels``: matrix products, softmax,
argmax/argmin, nll_loss) against numpy, under numba's simulator or on a GPU: shapes that are not
multiples of the tile or block, transposed, sliced and broadcast operands, float32 and float64, ties.

Run: ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_kernels_math.py`` (sizes stay tiny: the
simulator runs a Python thread per CUDA thread)."""
from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from jitgrad.backends.numba_cuda.kernels import linalg, losses, rows

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}
STREAM = 0


def _random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _layout(host: np.ndarray, how: str):
    """``host``'s values on the device as a ``how`` view: contiguous, a transpose of a contiguous
    array, or every other element of a larger one along each dimension."""
    if how == "contiguous":
        return cuda.to_device(host)
    if how == "transposed":
        return cuda.to_device(np.ascontiguousarray(host.T)).T
    larger = np.zeros(tuple(2 * n for n in host.shape), host.dtype)
    larger[tuple(slice(None, None, 2) for _ in host.shape)] = host
    return cuda.to_device(larger)[tuple(slice(None, None, 2) for _ in host.shape)]


def _close(device_array, expected, dtype):
    np.testing.assert_allclose(device_array.copy_to_host(), expected, **TOLERANCE[dtype])


# ---- matrix products --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, k, m", [(1, 1, 1), (5, 7, 6), (9, 4, 3), (3, 0, 2), (17, 9, 10)])
@pytest.mark.parametrize("layout_a, layout_b", [("contiguous", "contiguous"), ("transposed", "strided"),
                                                ("strided", "transposed")])
def test_gemm(dtype, n, k, m, layout_a, layout_b):
    a, b = _random((n, k), dtype, 1), _random((k, m), dtype, 2)
    out = cuda.device_array((n, m), dtype)
    linalg.gemm(_layout(a, layout_a), _layout(b, layout_b), out, STREAM)
    _close(out, a @ b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 5), (2, 5, 4)), ((2, 1, 3, 4), (3, 4, 5)),
                                              ((3, 4), (2, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
                                              ((5,), (5,)), ((1, 2, 3), (2, 1, 3, 2))])
def test_batched_gemm_broadcasts_as_numpy_matmul(dtype, a_shape, b_shape):
    a, b = _random(a_shape, dtype, 3), _random(b_shape, dtype, 4)
    expected = np.matmul(a, b)
    out = cuda.device_array(expected.shape or (1,), dtype)
    linalg.batched_gemm(cuda.to_device(a), cuda.to_device(b), out, STREAM)
    _close(out, expected.reshape(out.shape), dtype)


def test_batched_gemm_reads_strided_batches_and_writes_a_strided_result():
    a = _random((3, 4, 5), np.float64, 5)
    b = _random((3, 5, 2), np.float64, 6)
    big = cuda.to_device(np.zeros((3, 2, 4), np.float64))
    out = big.transpose((0, 2, 1))  # a (3, 4, 2) view, steps (8, 1, 2)
    linalg.batched_gemm(_layout(a, "strided"), cuda.to_device(b), out, STREAM)
    _close(big, np.matmul(a, b).transpose(0, 2, 1), np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, k", [(1, 1), (3, 40), (6, 5), (4, 0)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_gemv(dtype, n, k, layout):
    a, v = _random((n, k), dtype, 7), _random((k,), dtype, 8)
    out = cuda.device_array((n,), dtype)
    linalg.gemv(_layout(a, layout), _layout(v, "strided" if layout == "strided" else "contiguous"), out, STREAM)
    _close(out, a @ v, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 33, 70])
def test_dot(dtype, k):
    a, b = _random((k,), dtype, 9), _random((k,), dtype, 10)
    out = cuda.device_array((1,), dtype)
    linalg.dot(cuda.to_device(a), _layout(b, "strided"), out, STREAM)
    _close(out, [a @ b], dtype)


def test_products_refuse_mixed_dtypes():
    a, b = cuda.to_device(np.ones((2, 2), np.float32)), cuda.to_device(np.ones((2, 2)))
    with pytest.raises(TypeError, match="matmul: expected operands and result of one dtype"):
        linalg.gemm(a, b, cuda.device_array((2, 2), np.float32), STREAM)


def test_products_are_deterministic():
    a, b = _random((6, 37), np.float32, 11), _random((37, 5), np.float32, 12)
    results = []
    for _ in range(2):
        out = cuda.device_array((6, 5), np.float32)
        linalg.gemm(cuda.to_device(a), cuda.to_device(b), out, STREAM)
        results.append(out.copy_to_host())
    assert np.array_equal(results[0], results[1])


# ---- softmax, log_softmax and their backwards ----------------------------------------------------
def _softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim, layout", [((3, 40), 1, "contiguous"), ((5, 3), 0, "transposed"),
                                                ((2, 5, 3), 1, "strided"), ((7,), 0, "contiguous"),
                                                ((2, 3, 4), -1, "transposed"), ((3, 37), 1, "strided")])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(dtype, shape, dim, layout, log):
    x = 10 * _random(shape, dtype, 13)
    out = cuda.device_array(shape, dtype)
    rows.softmax(_layout(x, layout), out, dim, STREAM, log=log)
    expected = _softmax(x.astype(np.float64), dim)
    _close(out, np.log(expected) if log else expected, dtype)


def test_log_softmax_into_a_strided_result():
    x = _random((4, 6), np.float64, 14)
    big = cuda.to_device(np.zeros((6, 4)))
    rows.log_softmax(cuda.to_device(x), big.T, 1, STREAM)
    _close(big, np.log(_softmax(x, 1)).T, np.float64)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf, in the simulator's numpy
def test_softmax_of_a_row_with_infinities():
    x = np.array([[0.0, -np.inf, 1.0], [np.inf, 0.0, 0.0]])
    out = cuda.device_array(x.shape)
    rows.softmax(cuda.to_device(x), out, 1, STREAM)
    with np.errstate(invalid="ignore"):
        expected = _softmax(x, 1)
    np.testing.assert_allclose(out.copy_to_host(), expected)  # the second row is NaN, as in numpy


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim, layouts", [((3, 40), 1, ("contiguous", "strided")),
                                                 ((5, 3), 0, ("transposed", "contiguous")),
                                                 ((2, 5, 3), 1, ("strided", "transposed"))])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward(dtype, shape, dim, layouts, log):
    """The gradient of (log_)softmax for its output y and the output's gradient g, each in its own
    layout, against the formula in float64."""
    x, g = _random(shape, dtype, 16), _random(shape, dtype, 17)
    y = _softmax(x.astype(np.float64), dim)
    y = (np.log(y) if log else y).astype(dtype)
    out = cuda.device_array(shape, dtype)
    rows.softmax_backward(_layout(g, layouts[0]), _layout(y, layouts[1]), out, dim, STREAM, log=log)
    g64, y64 = g.astype(np.float64), y.astype(np.float64)
    expected = (g64 - np.exp(y64) * g64.sum(dim, keepdims=True) if log
                else y64 * (g64 - (g64 * y64).sum(dim, keepdims=True)))
    _close(out, expected, dtype)


# ---- argmax, argmin ----------------------------------------------------------------------------------
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype, shape, dim", [(np.float32, (4, 70), 1), (np.float64, (70, 3), 0),
                                               (np.float32, (2, 3, 5), 1), (np.float64, (6,), 0),
                                               (np.int64, (3, 40), 1), (np.int32, (2, 3), 0),
                                               (np.int8, (3, 2), 1), (np.bool_, (3, 34), 1)])
def test_select_first_best_with_ties(largest, dtype, shape, dim):
    x = np.random.default_rng(15).integers(0, 3, shape).astype(dtype)  # many ties
    indices = cuda.device_array(np.delete(shape, dim).tolist() or [1], np.int64)
    values = cuda.device_array(indices.shape, dtype)
    rows.select(_layout(x, "strided"), dim, indices, values, STREAM, largest)
    position = (np.argmax if largest else np.argmin)(x, axis=dim)
    assert np.array_equal(indices.copy_to_host(), np.reshape(position, indices.shape))
    assert np.array_equal(values.copy_to_host(), np.reshape((np.max if largest else np.min)(x, axis=dim),
                                                            indices.shape))


def test_select_takes_the_first_nan_as_numpy():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [3.0, 3.0, 2.0, 3.0]] + [[0.0] * 3 + [np.nan]] * 2)
    for largest, position in ((True, np.argmax), (False, np.argmin)):
        indices = cuda.device_array((4,), np.int64)
        rows.select(cuda.to_device(x), 1, indices, None, STREAM, largest)
        assert indices.copy_to_host().tolist() == position(x, axis=1).tolist()


@pytest.mark.parametrize("keepdim", [False, True])
def test_values_and_indices(keepdim):
    x = np.random.default_rng(16).integers(0, 4, (3, 37, 2)).astype(np.float32)
    values, indices = rows.values_and_indices(_layout(x, "transposed"), 1, keepdim, False, STREAM)
    assert np.array_equal(values.copy_to_host(), x.min(axis=1, keepdims=keepdim))
    assert np.array_equal(indices.copy_to_host(), x.argmin(axis=1, keepdims=keepdim))


def test_select_of_an_empty_dimension_is_refused():
    with pytest.raises(ValueError, match="argmax: expected a non-empty dimension 1"):
        rows.select(cuda.to_device(np.zeros((2, 0))), 1, cuda.device_array((2,), np.int64), None, STREAM, True)


# ---- nll_loss ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("n, classes", [(1, 3), (37, 5)])
def test_nll_loss_and_backward(dtype, reduction, n, classes):
    log_probs = _random((n, classes), dtype, 17)
    target = np.random.default_rng(18).integers(0, classes, n)
    picked = -log_probs[np.arange(n), target].astype(np.float64)
    expected = {"none": picked, "sum": picked.sum(), "mean": picked.mean()}[reduction]
    out = cuda.device_array((n,) if reduction == "none" else (1,), dtype)
    losses.nll_loss(_layout(log_probs, "transposed"), cuda.to_device(target), out, reduction, STREAM)
    _close(out, np.reshape(expected, out.shape), dtype)

    grad = _random((n,) if reduction == "none" else (1,), dtype, 19)
    gradient = cuda.to_device(np.full((n, classes), np.nan, dtype))  # every element is written
    losses.nll_loss_backward(cuda.to_device(grad), cuda.to_device(target), gradient, reduction, STREAM)
    expected = np.zeros((n, classes), dtype)
    expected[np.arange(n), target] = -grad / (n if reduction == "mean" else 1)
    _close(gradient, expected, dtype)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_nll_loss_skips_the_targets_it_ignores(reduction):
    log_probs, target = _random((5, 3), np.float64, 20), np.array([2, -100, 0, -100, 1])
    kept = target != -100
    picked = np.where(kept, -log_probs[np.arange(5), np.where(kept, target, 0)], 0.0)
    out = cuda.device_array((5,) if reduction == "none" else (1,))
    losses.nll_loss(cuda.to_device(log_probs), cuda.to_device(target), out, reduction, STREAM, -100)
    _close(out, picked if reduction == "none" else [picked.sum() / kept.sum()], np.float64)
    grad = np.ones(5 if reduction == "none" else 1)
    gradient = cuda.to_device(np.full((5, 3), np.nan))
    losses.nll_loss_backward(cuda.to_device(grad), cuda.to_device(target), gradient, reduction, STREAM, -100)
    expected = np.zeros((5, 3))
    expected[np.arange(5)[kept], target[kept]] = -1.0 / (kept.sum() if reduction == "mean" else 1)
    _close(gradient, expected, np.float64)


def test_nll_loss_marks_a_target_outside_the_classes_with_nan():
    out = cuda.device_array((1,))
    losses.nll_loss(cuda.to_device(np.zeros((2, 3))), cuda.to_device(np.array([0, 3])), out, "sum", STREAM)
    assert np.isnan(out.copy_to_host()[0])


def test_nll_loss_refuses_an_unknown_reduction():
    with pytest.raises(ValueError, match="nll_loss: reduction 'avg' is not one of"):
        losses.nll_loss(cuda.to_device(np.zeros((2, 3))), cuda.to_device(np.array([0, 1])),
                        cuda.device_array((1,)), "avg", STREAM)
