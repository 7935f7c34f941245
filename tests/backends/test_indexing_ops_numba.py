"""The integer-indexing and sorting ops' CPU kernels compiled by numba for real, where the samples
cannot reach: numba's own sort meeting ties and NaN, and an index outside its dimension raising from
the kernel as eagerly. (Every op's float32 forward is compiled by test_lowering_samples_numba.py,
and its values and backward checked in plain Python by test_lowering_samples.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad import fx
from jitgrad.backends.numba_cpu import lower
from jitgrad.fx import passes


def _lowered(program, *tensors):
    graph = passes.PassManager().run(fx.trace(program, *tensors).graph)
    return lower(graph)


def test_numbas_sort_keeps_ties_in_order_and_nan_above_every_number():
    """What the float32 forward chunks of test_lowering_samples_numba.py (distinct values) leave to
    numba's own sort: ties and NaN, ascending and descending, as eagerly (and in PyTorch)."""
    x = np.array([[1.0, 2.0, 1.0, np.nan, 2.0, 0.5], [3.0, 3.0, 3.0, -1.0, np.nan, np.nan]])

    def program(x):
        up, down = x.sort(1), x.sort(1, descending=True)
        return up.values, up.indices, down.values, down.indices, x.topk(2, 0, largest=False).indices
    kernel = _lowered(program, jg.tensor(x))
    for got, want in zip(kernel(x), program(jg.tensor(x)), strict=True):
        np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("op", ["gather", "embedding"])
def test_an_index_outside_its_dimension_raises_from_the_kernel(op):
    x, good = np.arange(6.0).reshape(2, 3), np.array([[0, 1], [1, 0]])
    program = (lambda x, i: jg.gather(x, 1, i)) if op == "gather" else (lambda x, i: F.embedding(i, x))
    kernel = _lowered(program, jg.tensor(x), jg.tensor(good))
    with pytest.raises(IndexError if op == "embedding" else RuntimeError, match=op):  # PyTorch's types
        kernel(x, np.array([[0, 5], [1, 0]]))

