"""The integer-indexing and sorting ops compiled by numba for real, in float64 and backward (the
plain-Python run of test_lowering_samples.py cannot vouch for numba's typing, and its numba twin
compiles float32 forwards only), and an index outside its dimension raising from the kernel as
eagerly."""
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


def test_sorting_embedding_and_ignored_targets_compile_under_numba():
    """What the float32 forward chunks of test_lowering_samples_numba.py leave out: a descending sort
    of float64 with NaN and ties, the embedding's backward with a padding row, and nll_loss with a
    target it ignores, forward and backward."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((5, 2))
    x[1, 2] = x[1, 0]  # a tie, kept in order by the stable sort
    x[2, 1] = np.nan
    tokens, labels = np.array([[4, 1], [0, 4]]), np.array([1, -100, 0, 1])  # -100: ignored, as in PyTorch

    def program(x, w, tokens):
        ordered = x.sort(1, descending=True)
        loss = ((F.embedding(tokens, w, padding_idx=4) ** 2).sum() + F.cross_entropy(w[:4] * 1.5, jg.tensor(labels))
                + jg.where(ordered.values.isnan(), 0.0, ordered.values).sum())
        loss.backward()
        return loss, ordered.indices
    kernel = _lowered(program, jg.tensor(x, requires_grad=True), jg.tensor(w, requires_grad=True), jg.tensor(tokens))
    eager = [jg.tensor(x, requires_grad=True), jg.tensor(w, requires_grad=True), jg.tensor(tokens)]
    expected = [t.detach().numpy() for t in program(*eager)] + [t.grad.numpy() for t in eager[:2]]
    got = kernel(x, w, tokens)
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
