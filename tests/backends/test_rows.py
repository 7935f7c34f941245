"""``put_row`` (jitgrad/backends/numba_cpu/rows.py): a stack's row as one copy when numba's types say
both arrays are contiguous, the plain assignment otherwise; the assignment itself without the JIT."""
import numba
import numpy as np
import pytest

from jitgrad.backends.numba_cpu import rows
from jitgrad.backends.numba_cpu.rows import put_row


@numba.njit
def _put_rows(out, first, second):
    put_row(out, 0, first)
    put_row(out, 2, second)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_rows_are_copied_for_every_layout(dtype):
    rng = np.random.default_rng(3)
    for shape in ((4,), (3, 2)):
        first = (rng.standard_normal(shape) * 5).astype(dtype)
        second = (rng.standard_normal(shape[::-1]) * 5).astype(dtype).T    # not contiguous: assigned
        out = np.zeros((3, *shape), dtype)
        _put_rows(out, first, np.ascontiguousarray(second))
        np.testing.assert_array_equal(out[0], first)
        np.testing.assert_array_equal(out[1], 0)
        np.testing.assert_array_equal(out[2], second)
        out[...] = 0
        _put_rows(out, first, second)
        np.testing.assert_array_equal(out[2], second)


def test_put_row_is_the_assignment_without_the_jit(monkeypatch):
    assert rows.put_row is not rows._assign_row
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    assert rows.put_row is rows._assign_row
