"""Full reductions of large loops whose rows are too short to fold in vectors (K14's ``tanh(a @ b).sum()``
over rows of 16), which the numba backend folds over the elements as one flat range
(``LoopNest.accumulate_flat``): sums and means, chunks that end inside a block, float32, and the
groups it must leave to the row loop (a broadcast operand, a transposed view), against numpy and the fx
Interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from jitgrad.backends.numba_cpu.loop_nest import FLAT_BLOCK, FLAT_CHUNKS, PARALLEL_ELEMENTS
from helpers import assert_close
from lowering_helpers import interpreted, lowered

ROWS, COLUMNS = 4099, 16           # rows of 128 bytes in float64; chunks of 4,099 elements: a short last block
assert ROWS * COLUMNS >= PARALLEL_ELEMENTS and (ROWS * COLUMNS // FLAT_CHUNKS) % FLAT_BLOCK != 0
VALUES = np.random.default_rng(3).uniform(-2.0, 2.0, (ROWS, COLUMNS))
CUBE = np.random.default_rng(4).uniform(-2.0, 2.0, (16, 64, 65))

FLAT = {   # program, and what numpy computes for it
    "tanh sum": (lambda x: x.tanh().sum(), lambda x: np.tanh(x).sum()),
    "mean of squares": (lambda x: (x * x).mean(), lambda x: (x * x).mean()),
    "sum keepdim": (lambda x: x.exp().sum((0, 1), keepdim=True), lambda x: np.exp(x).sum(keepdims=True)),
    # rank 3, rows of 65 (520 bytes in float64): K3's ``((a @ b) ** 2).sum()`` shape, odd
    "rank 3": (lambda x: (x ** 2).sum(), lambda x: (x ** 2).sum()),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", FLAT)
def test_flat_reductions_equal_numpy_and_the_interpreter(name, dtype, plain_python):
    program, expected = FLAT[name]
    values = CUBE if name == "rank 3" else VALUES
    x = values.astype(dtype)
    graph, kernel = lowered(program, [x])
    assert "_flat" in kernel.source and "_lane" not in kernel.source, "not folded as one flat range"
    got = list(kernel(x))
    assert_close(got, interpreted(graph, [x]), dtype=dtype)
    assert_close(got[0], np.asarray(expected(values), dtype=dtype).reshape(got[0].shape), dtype=dtype)


def test_the_elementwise_values_a_flat_reduction_keeps_are_stored(plain_python):
    """``tanh`` is both summed and returned: the flat loop writes every element of it."""
    graph, kernel = lowered(lambda x: (x.tanh(), x.tanh().sum()), [VALUES])
    assert "_flat" in kernel.source
    got = list(kernel(VALUES))
    np.testing.assert_allclose(got[0], np.tanh(VALUES), rtol=1e-15, atol=1e-15)
    assert_close(got, interpreted(graph, [VALUES]), dtype=np.float64)


def test_a_nan_anywhere_reaches_a_flat_sum(plain_python):
    with_nan = VALUES.copy()
    with_nan[ROWS - 1, COLUMNS - 1] = np.nan   # the last element of the last (short) block
    graph, kernel = lowered(lambda x: (x * 1.5).sum(), [with_nan])
    assert "_flat" in kernel.source
    got = list(kernel(with_nan))
    assert np.isnan(got[0]).all()
    assert_close(got, interpreted(graph, [with_nan]), dtype=np.float64)


OTHERS = {   # the row loop keeps these: an operand the flat index cannot read, or rows long enough
    "broadcast row": (lambda x: (x * x[0]).sum(), [VALUES]),
    "transposed": (lambda x: x.T.exp().sum(), [VALUES]),
    "amax (NaN-propagating)": (lambda x: (x * 2.0 + 1.0).amax(), [VALUES]),
    "wide rows": (lambda x: (x * x).sum(), [VALUES[:4096].reshape(1024, 64)]),
}


@pytest.mark.parametrize("name", OTHERS)
def test_groups_the_flat_range_cannot_read_keep_the_row_loop(name, plain_python):
    program, arrays = OTHERS[name]
    graph, kernel = lowered(program, arrays)
    assert "_flat" not in kernel.source
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=np.float64)


def test_the_flat_fold_does_not_depend_on_parallel(plain_python):
    """The chunks depend on the number of elements only: a serial kernel folds in the same order."""
    results = []
    for parallel in (True, False):
        _, kernel = lowered(lambda x: x.tanh().sum(), [VALUES], parallel=parallel)
        assert ("prange" in kernel.source) is parallel and "_flat" in kernel.source
        results.append(kernel(VALUES)[0])
    np.testing.assert_array_equal(results[0], results[1])
