"""The numba backend's ``fill_randperm`` against the eager ``permutation`` (numpy's stable argsort), and
its merge sort against numpy's on keys with ties, where only a stable sort gives numpy's order."""
import numpy as np
import pytest

from jitgrad.backends.numba_cpu.sampling import _stable_order, fill_randperm
from jitgrad.random.sampling import permutation


@pytest.mark.parametrize("n", [0, 1, 2, 5, 64, 257])
def test_fill_randperm_is_the_eager_permutation(n):
    for seed in (0, -3, 2 ** 62):
        state = np.array([seed, 11 * n], dtype=np.int64)
        out = np.empty(n, np.int64)
        fill_randperm(state, out)
        np.testing.assert_array_equal(out, permutation(state, n))


def test_the_merge_sort_is_stable_as_numpys():
    keys = np.random.default_rng(0).integers(0, 4, 37).astype(np.float64)
    order = np.empty(37, np.int64)
    _stable_order(keys, order)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
