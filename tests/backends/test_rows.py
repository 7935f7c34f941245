"""``put_row`` (jitgrad/backends/numba_cpu/rows.py): a stack's row as one copy when numba's types say
both arrays are contiguous, the plain assignment otherwise; the assignment itself without the JIT.
``row_sum``, ``row_max``, ``row_dot`` (row_reductions.py): a row folded in vector lanes, the same bits
as their plain versions."""
import numba
import numpy as np
import pytest

from jitgrad.backends.numba_cpu import row_reductions, rows
from jitgrad.backends.numba_cpu.row_reductions import row_dot, row_max, row_sum
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


@numba.njit
def _folds(a, b, p):
    return row_sum(a, p), row_max(a, p), row_dot(a, b, p)


def test_row_folds_give_the_plain_folds_bits_for_every_layout():
    """``row_sum``, ``row_max`` and ``row_dot`` (vector lanes) against their plain versions (the same
    operations in the same order, what NUMBA_DISABLE_JIT runs): rows shorter than the lanes, with a
    remainder; C-contiguous, a slice (numba's layout 'A', packed: vector loads decided at run time) and
    a strided view (lanes loaded one by one); NaN skipped by the max only."""
    rng = np.random.default_rng(4)
    plain = [row_reductions._plain(kind) for kind in ("sum", "max", "dot")]
    lanes = row_reductions.UNROLL * row_reductions.width(np.float32)
    wide = rng.standard_normal((3, 4 * lanes + 8)).astype(np.float32)
    for columns in (5, lanes, 2 * lanes + 3):
        a = rng.standard_normal((3, columns)).astype(np.float32)
        b = rng.standard_normal((3, columns)).astype(np.float32)
        a[2, columns // 2] = np.nan
        sliced = wide[:, :columns]
        sliced[...] = a
        strided = wide[:, ::2][:, :columns]
        for left, right in ((a, b), (sliced, strided)):
            for p in range(3):
                got = _folds(left, right, p)
                want = tuple(f(*args) for f, args in zip(plain, ((left, p), (left, p), (left, right, p))))
                np.testing.assert_array_equal(got, want)
                # a dot is the sum of the rounded products (row buffer then fold = row_dot where the rows lie)
                np.testing.assert_array_equal(got[2], _folds(np.ascontiguousarray(left * right), b, p)[0])
                assert np.isnan(got[0]) == (p == 2) and got[1] == np.nanmax(a[p])
                np.testing.assert_allclose(got[0], a[p].astype(np.float64).sum(), rtol=1e-5)
                np.testing.assert_allclose(got[2], (left[p].astype(np.float64) * right[p]).sum(), rtol=1e-5)


def test_row_folds_are_the_plain_folds_without_the_jit(monkeypatch):
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    x = np.arange(70, dtype=np.float64).reshape(1, 70)
    assert row_reductions.row_sum(x, 0) == x.sum() and row_reductions.row_max(x, 0) == 69.0
    assert row_reductions.row_dot(x, x, 0) == (x * x).sum()


def test_the_loop_nests_row_length_for_vector_folds_is_one_block_of_vectors():
    from jitgrad.backends.numba_cpu.loop_nest import VECTOR_ROW_BYTES
    assert VECTOR_ROW_BYTES == row_reductions.UNROLL * row_reductions.VECTOR_BITS // 8
