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


def test_embeddings_backward_kernel_adds_rows_as_scatter_add_and_raises_on_a_bad_index():
    """``embedding_dense_backward`` adds whole rows, each index read once: every element must get the
    sums, in the order, of ``np.add.at`` over the index expanded to every column (what the backward
    was before it had an op of its own), bit for bit in float32, where many rows repeat; none into the
    padding row; and an index outside the table raises from the kernel as eagerly."""
    rng = np.random.default_rng(3)
    index = rng.integers(0, 5, (3, 40))
    grad = (rng.standard_normal((3, 40, 4)) * 10.0 ** rng.integers(-4, 5, (3, 40, 1))).astype(np.float32)

    def program(g, i):
        w = jg.zeros(5, 4, dtype=jg.float32, requires_grad=True)
        whole = jg.autograd.grad(F.embedding(i, w), w, g)[0]
        return whole, jg.autograd.grad(F.embedding(i, w, padding_idx=2), w, g)[0]
    kernel = _lowered(program, jg.tensor(grad), jg.tensor(index))
    want = np.zeros((5, 4), np.float32)
    np.add.at(want, (np.broadcast_to(index[..., None], grad.shape), np.arange(4)), grad)
    whole, padded = kernel(grad, index)
    np.testing.assert_array_equal(whole, want)
    np.testing.assert_array_equal(padded, np.where(np.arange(5)[:, None] == 2, 0, want))
    for got, eager in zip((whole, padded), program(jg.tensor(grad), jg.tensor(index)), strict=True):
        np.testing.assert_array_equal(got, eager.numpy())
    index[1, 7] = 5
    with pytest.raises(IndexError, match="embedding_dense_backward"):
        kernel(grad, index)
