"""Reductions over loops of at least PARALLEL_ELEMENTS elements, which the backend writes as a row loop
then a fold of the row with LANES running values (``accumulate_in_lanes``): every reduction's
template, rows and whole arrays, sizes that leave a remainder, NaN, against the fx Interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from jitgrad.backends.numba_cpu.loop_nest import LANES, PARALLEL_ELEMENTS
from helpers import assert_close
from lowering_helpers import interpreted, lowered

ROWS, COLUMNS = 130, 2 * LANES * 64 + 3          # a remainder after the lanes
assert ROWS * COLUMNS >= PARALLEL_ELEMENTS
VALUES = np.random.default_rng(0).uniform(-1.0, 1.0, (ROWS, COLUMNS))

PROGRAMS = {
    "sum rows": lambda x: (x.exp() * 2.0).sum(1),
    "sum": lambda x: (x * x).sum(),
    "mean rows keepdim": lambda x: x.mean(1, keepdim=True),
    "var rows": lambda x: x.var(1),
    "std": lambda x: (x + 1.0).std(),
    "logsumexp rows": lambda x: x.logsumexp(1),
    "amax rows": lambda x: x.amax(1),
    "amin": lambda x: x.amin(),
    "prod rows": lambda x: (x * 0.01 + 1.0).prod(1),
    "count rows": lambda x: (x > 0.25).sum(1),
    "standardized rows": lambda x: (x - x.mean(1, keepdim=True)) / (x.std(1, keepdim=True) + 1e-5),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_large_reductions_equal_the_interpreter(name, plain_python):
    graph, kernel = lowered(PROGRAMS[name], [VALUES])
    assert "_lane" in kernel.source, "the lanes were not used"
    assert_close(list(kernel(VALUES)), interpreted(graph, [VALUES]), dtype=np.float64)


def test_nan_reaches_the_result_from_any_lane(plain_python):
    with_nan = VALUES.copy()
    with_nan[3, 5], with_nan[7, COLUMNS - 1] = np.nan, np.nan   # in a lane, and in the remainder
    with_nan[9, 2] = np.inf   # logsumexp's shift skips NaN (its exps bring it back) but not inf
    graph, kernel = lowered(lambda x: (x.amax(1), x.amin(1), x.sum(1), x.logsumexp(1)), [with_nan])
    results = list(kernel(with_nan))
    for got in results:
        assert np.isnan(got[3]) and np.isnan(got[7]) and not np.isnan(np.delete(got, [3, 7])).any()
    assert results[3][9] == np.inf
    assert_close(results, interpreted(graph, [with_nan]), dtype=np.float64)

