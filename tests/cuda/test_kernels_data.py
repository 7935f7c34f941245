"""The CUDA data-movement kernels (``jitgrad/backends/numba_cuda/kernels/{copy,indexing,sampling}.py``)
against numpy, and the random draws against the CPU backend's: on strided, reversed and broadcast
views, ranks 0 to 4, integer, bool and float dtypes, and indices that repeat. Sizes stay tiny: the
simulator runs a Python thread per CUDA thread."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from numba import config, cuda

from jitgrad.backends.numba_cpu.sampling import fill_normal, fill_uniform
from jitgrad.backends.numba_cuda.kernels import copy as copies
from jitgrad.backends.numba_cuda.kernels import indexing, sampling
from jitgrad.backends.numba_cuda.kernels.strided import coalesced, indexed_view
from jitgrad.random import Generator
from jitgrad.random.sampling import sample, significant_bits

RNG = np.random.default_rng(14)


def values(shape: tuple[int, ...], dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        drawn = RNG.random(shape) < 0.5
    elif dtype.kind == "f":
        drawn = RNG.standard_normal(shape)
    else:
        drawn = RNG.integers(-50 if dtype.kind == "i" else 0, 100, shape)
    return np.asarray(drawn, dtype=dtype)  # an array even for shape ()


def device_view(base: np.ndarray, view: Callable[[np.ndarray], np.ndarray] = lambda a: a):
    """``view(base)`` (a slice, transpose or broadcast of ``base``) as a device array over a device copy
    of ``base``: numba makes only some views of device arrays itself."""
    device = cuda.to_device(base)
    if config.ENABLE_CUDASIM:
        return type(device)(view(device._ary))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    host = view(base)
    offset = host.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return DeviceNDArray(host.shape, host.strides, host.dtype, gpu_data=device.gpu_data.view(offset))


VIEWS = {  # rank -> (base shape, views of it)
    0: ((), [lambda a: a]),
    1: ((7,), [lambda a: a, lambda a: a[::-2], lambda a: a[1:6]]),
    2: ((4, 5), [lambda a: a, lambda a: a.T, lambda a: a[::2, ::-1], lambda a: np.broadcast_to(a[:1], (4, 5))]),
    3: ((2, 3, 4), [lambda a: a.transpose(2, 0, 1), lambda a: a[:, ::-1, 1:3]]),
    4: ((2, 1, 3, 2), [lambda a: a, lambda a: a.transpose(3, 1, 0, 2)[::-1]]),
}
CASES = [(rank, k) for rank, (_, views) in VIEWS.items() for k in range(len(views))]


def test_coalescing_merges_only_dimensions_every_operand_walks_alike():
    assert coalesced((2, 3, 4), (12, 4, 1), (12, 4, 1)) == ((24,), [(1,), (1,)])
    assert coalesced((2, 3, 4), (12, 4, 1), (1, 2, 8)) == ((2, 3, 4), [(12, 4, 1), (1, 2, 8)])
    assert coalesced((2, 3, 4), (12, 4, 1), (1, 8, 2)) == ((2, 12), [(12, 1), (1, 2)])
    assert coalesced((2, 1, 4), (4, 99, 1)) == ((8,), [(1,)])
    assert coalesced((1, 1), (5, 3)) == ((1,), [(0,)])


@pytest.mark.parametrize("rank, k", CASES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_copy_of_any_view_equals_numpy(rank, k, dtype):
    shape, views = VIEWS[rank]
    base = values(shape, dtype)
    expected = views[k](base)
    out = cuda.device_array(expected.shape, dtype)
    copies.copy(device_view(base, views[k]), out)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@pytest.mark.parametrize("to, frm", [("float32", "float64"), ("int32", "float32"), ("float64", "int8"),
                                     ("bool", "float16"), ("bool", "int64"), ("float16", "bool")])
def test_copy_converts_and_broadcasts_as_numpy(to, frm):
    base = values((3, 1), frm)
    out = cuda.device_array((2, 3, 4), to)
    copies.copy(device_view(base, lambda a: a[::-1]), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.broadcast_to(base[::-1], (2, 3, 4)).astype(to))


@pytest.mark.parametrize("dtype, value", [("float32", -2.5), ("int32", 7.0), ("bool", 1.0), ("float16", 0.1),
                                          ("uint8", 3)])
def test_fill_writes_only_the_view(dtype, value):
    base = values((4, 6), dtype)
    target = device_view(base)
    copies.fill(indexed_view(target, (slice(1, 4), slice(None, None, -2))), value)
    expected = base.copy()
    expected[1:4, ::-2] = value
    np.testing.assert_array_equal(target.copy_to_host(), expected)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_concatenate_of_views_with_promotion(dim):
    a, b = values((2, 3, 2), "float32"), values((4, 3, 2), "int32")
    a_view, b_view = (lambda x: x[:, :, ::-1]), (lambda x: x.transpose(1, 0, 2)[:, :3])
    pieces = [a_view(a), b_view(b)] if dim == 0 else [a_view(a), a_view(a)]
    expected = np.concatenate(pieces, axis=dim)
    out = cuda.device_array(expected.shape, expected.dtype)
    sources = [device_view(a, a_view), device_view(b, b_view) if dim == 0 else device_view(a, a_view)]
    copies.concatenate(sources, out, dim)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_stack_of_views(dim):
    a, b = values((3, 2), "int64"), values((2, 3), "int64")
    expected = np.stack([a, b.T, a[::-1]], axis=dim)
    out = cuda.device_array(expected.shape, expected.dtype)
    copies.stack([device_view(a), device_view(b, lambda x: x.T), device_view(a, lambda x: x[::-1])], out, dim)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


def test_stack_of_0d_values_held_as_one_element_arrays():
    out = cuda.device_array((3,), np.float32)
    copies.stack([cuda.to_device(np.array([v], np.float32)) for v in (1.5, -2.0, 3.0)], out, 0)
    np.testing.assert_array_equal(out.copy_to_host(), [1.5, -2.0, 3.0])


INDICES = [  # (shape of the indexed array, index)
    ((6,), (np.array([4, 0, 4, 5, 4]),)),
    ((3, 4), (np.array([[2, 0], [2, 2]]), np.array([1, 1]))),
    ((2, 3, 4), (slice(None), np.array([0, 2, 0]), np.array([3, 3, 3]))),
    ((3, 4), (np.array([[True, False, True, True]] * 3),)),
    ((2, 2, 3, 2), (np.array([1, 1, 0]), slice(None), np.array([2, 2, 0]))),
]


def positions_of(shape, index) -> np.ndarray:
    return np.arange(int(np.prod(shape))).reshape(shape)[index]


@pytest.mark.parametrize("shape, index", INDICES)
@pytest.mark.parametrize("dtype", ["float64", "int16"])
def test_gather_by_positions_equals_numpy(shape, index, dtype):
    base = values(tuple(reversed(shape)), dtype)  # the indexed array is its transpose: strided
    src = base.T
    positions = positions_of(shape, index)
    out = indexing.gathered(device_view(base, lambda a: a.T), cuda.to_device(positions.reshape(-1)), positions.shape)
    np.testing.assert_array_equal(out.copy_to_host(), src[index])


@pytest.mark.parametrize("shape, index", INDICES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_index_scatter_sums_repeats_in_order_as_add_at(shape, index, dtype):
    positions = positions_of(shape, index)
    grad = values(positions.shape[::-1], dtype).T  # a strided gradient
    plan = [cuda.to_device(array) for array in indexing.scatter_plan(positions)]
    out = cuda.device_array(shape, dtype)
    indexing.index_scatter(device_view(np.ascontiguousarray(grad.T), lambda a: a.T), *plan, out)
    expected = np.zeros(shape, dtype)
    np.add.at(expected, index, grad)
    np.testing.assert_array_equal(out.copy_to_host(), expected)  # bit for bit: same order of additions


def test_scatter_plan_lists_each_destination_sources_in_order():
    destinations, bounds, sources = indexing.scatter_plan(np.array([5, 1, 5, 5, 0, 1]))
    assert destinations.tolist() == [0, 1, 5]
    assert [sources[bounds[j]:bounds[j + 1]].tolist() for j in range(3)] == [[4], [1, 5], [0, 2, 3]]


@pytest.mark.parametrize("shape, index", INDICES)
def test_index_put_last_write_wins_as_numpy(shape, index):
    positions = positions_of(shape, index)
    value_shape = positions.shape[1:] if positions.ndim > 1 else positions.shape
    new = values(value_shape, "float64")  # float64 values into a float32 tensor: converted
    taken = np.broadcast_to(np.arange(new.size).reshape(value_shape), positions.shape)
    destinations, sources = indexing.put_plan(positions, taken)
    self = values(shape, "float32")
    out = cuda.device_array(shape, np.float32)
    indexing.index_put(device_view(self), cuda.to_device(new), cuda.to_device(destinations), cuda.to_device(sources),
                       out)
    expected = self.copy()
    expected[index] = new
    np.testing.assert_array_equal(out.copy_to_host(), expected)


def test_index_put_of_a_number_and_copy_slices_of_a_view():
    self = values((3, 4), "int64")
    destinations, _ = indexing.put_plan(positions_of((3, 4), (np.array([0, 2, 0]),)))
    out = cuda.device_array((3, 4), np.int64)
    indexing.index_put(device_view(self, lambda a: a), 9.0, cuda.to_device(destinations), None, out)
    expected = self.copy()
    expected[[0, 2]] = 9
    np.testing.assert_array_equal(out.copy_to_host(), expected)
    positions = np.array([[1, 5], [9, 11]])  # copy_slices: src's elements in C order at the positions
    src = values((2, 2), "int64")
    destinations, sources = indexing.put_plan(positions)
    indexing.index_put(device_view(self), device_view(np.ascontiguousarray(src.T), lambda a: a.T),
                       cuda.to_device(destinations), cuda.to_device(sources), out)
    expected = self.copy()
    expected.reshape(-1)[positions.reshape(-1)] = src.reshape(-1)  # the device array is src, strided
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 2)])
def test_draws_are_eager_and_the_cpu_backends_numbers(dtype, shape):
    """Eager's ``sample`` for every float dtype; the CPU backend's kernels too where numba compiles
    them (not float16 arrays)."""
    generator = Generator(2026)
    count = int(np.prod(shape))
    for distribution in ("uniform", "normal"):
        state = generator.take(count)
        out = cuda.device_array(shape, dtype)
        sampling.draw(cuda.to_device(state), out, distribution)
        drawn = out.copy_to_host()
        np.testing.assert_array_equal(drawn, sample(state, shape, dtype, distribution))
        if dtype == "float16":
            continue
        expected = np.empty(count, dtype)
        if distribution == "uniform":
            fill_uniform(state, expected, significant_bits(dtype))
        else:
            fill_normal(state, expected)
        np.testing.assert_array_equal(drawn.reshape(-1), expected)


def test_draw_into_a_strided_output():
    state = Generator(7).take(6)
    target = cuda.device_array((3, 4), np.float32)
    copies.fill(target, -1.0)
    sampling.normal(state, indexed_view(target, (slice(None), slice(None, None, 2))))
    expected = np.full((3, 4), -1.0, np.float32)
    flat = np.empty(6, np.float32)
    fill_normal(state, flat)
    expected[:, ::2] = flat.reshape(3, 2)
    np.testing.assert_array_equal(target.copy_to_host(), expected)
