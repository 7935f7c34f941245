"""``tensor``, ``as_tensor``, ``arange``, ``empty_strided`` and ``scalar_tensor`` as PyTorch's: integers
past int64's range are refused (numpy made them uint64 and the cast wrapped 2**63 to -2**63, silently,
until 2026-11-28), ``as_tensor`` of a numpy array shares its memory, strides are as asked."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg


def test_an_integer_past_int64_is_refused_not_wrapped():
    for data in ([2 ** 63], 2 ** 63, [[1, 2 ** 63], [3, 4]]):
        with pytest.raises(ValueError, match="Overflow"):
            jg.tensor(data)
    assert jg.tensor([2 ** 63 - 1, -2 ** 63]).tolist() == [2 ** 63 - 1, -2 ** 63]
    assert jg.tensor([2 ** 63], dtype=jg.float64).item() == 2.0 ** 63


def test_as_tensor_of_an_array_shares_its_memory_when_no_copy_is_needed():
    array = np.array([1.0, 2.0])
    shared = jg.as_tensor(array)
    shared.add_(1)
    assert array.tolist() == [2.0, 3.0] and shared.dtype == jg.float64
    copied = jg.as_tensor(array, dtype=jg.float32)
    copied.add_(1)
    assert array.tolist() == [2.0, 3.0]


def test_arange_names_both_bounds_in_its_error():
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        jg.arange(0, 5, -1)


def test_empty_strided_and_scalar_tensor():
    column_major = jg.empty_strided((2, 3), (1, 2))
    assert column_major.stride() == (1, 2) and not column_major.is_contiguous()
    column_major.copy_(jg.arange(6.0).reshape(2, 3))
    assert column_major.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert jg.empty_strided((2, 0), (1, 1)).shape == (2, 0)
    assert jg.scalar_tensor(3).dtype == jg.float32 and jg.scalar_tensor(3, dtype=jg.int64).item() == 3
