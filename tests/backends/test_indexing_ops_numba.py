"""The integer-indexing, sorting and scan ops compiled by numba for real, forward and backward in
float64 (the plain-Python run of test_lowering_samples.py cannot vouch for numba's typing): gather and
its scatter_add backward, embedding with a padding row, cumsum, masked_fill, a stable sort with NaN
and ties, topk, isnan/isinf, nll_loss skipping its ignore_index; and an index outside its dimension
raising from the kernel as eagerly."""
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


def test_indexing_sorting_and_scans_compile_under_numba():
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((5, 2))
    x[1, 2] = x[1, 0]  # a tie, kept in order by the stable sort
    x[2, 1] = np.nan
    index, tokens = np.array([[0, 3], [2, 2], [1, 0]]), np.array([[4, 1], [0, 4]])
    labels = np.array([1, -100, 0, 1])  # -100: ignored by nll_loss, as in PyTorch

    def program(x, w, index, tokens):
        picked = jg.gather(x, 1, index)
        rows = F.embedding(tokens, w, padding_idx=4)
        ordered = x.sort(1, descending=True)
        top = x.topk(2, 0, largest=False)
        filled = x.masked_fill(x > 0.5, -1.0)
        finite = jg.where(x.isnan() | x.isinf(), 0.0, x)
        loss = ((picked * 2.0).sum() + (rows * rows).sum() + finite.cumsum(1).sum() + filled.sum()
                + jg.where(ordered.values.isnan(), 0.0, ordered.values).sum() + top.values.sum()
                + F.cross_entropy(w[:4] * 1.5, jg.tensor(labels))
                + F.nll_loss(w[1:], jg.tensor(np.array([1, 0, 0, 1])), ignore_index=1, reduction="sum"))
        loss.backward()
        return loss, ordered.indices, top.indices, finite.cumsum(0)
    args = [jg.tensor(x, requires_grad=True), jg.tensor(w, requires_grad=True), jg.tensor(index), jg.tensor(tokens)]
    kernel = _lowered(program, *args)
    eager = [jg.tensor(x, requires_grad=True), jg.tensor(w, requires_grad=True), jg.tensor(index), jg.tensor(tokens)]
    expected = [t.detach().numpy() for t in program(*eager)] + [t.grad.numpy() for t in eager[:2]]
    got = kernel(x, w, index, tokens)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["gather", "embedding"])
def test_an_index_outside_its_dimension_raises_from_the_kernel(op):
    x, good = np.arange(6.0).reshape(2, 3), np.array([[0, 1], [1, 0]])
    program = (lambda x, i: jg.gather(x, 1, i)) if op == "gather" else (lambda x, i: F.embedding(i, x))
    kernel = _lowered(program, jg.tensor(x), jg.tensor(good))
    with pytest.raises(IndexError, match=op):
        kernel(x, np.array([[0, 5], [1, 0]]))
