"""The memory plan inside a kernel: a buffer the plan hands on is not overwritten while a view of its
old value is still read, and what a call returns is the caller's own (no output shares memory with
another, with an argument or with a constant of the graph)."""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

import jitgrad as jg
from lowering_helpers import assert_close, interpreted, lowered

RNG = np.random.default_rng(11)
SQUARES = [RNG.standard_normal((4, 4)) for _ in range(3)]


def reads_a_view_after_its_buffer_is_reused(x, w, v):
    first = x @ w
    transposed = first.T              # the plan sees first's last reader here...
    second = x @ v                    # ...and gives its buffer to second
    return (transposed @ second).sum(dim=0)


def node_named(graph, name):
    return next(n for n in graph.nodes if n.name == name)


def test_a_reused_buffer_is_not_overwritten_while_a_view_of_it_is_read():
    graph, kernel = lowered(reads_a_view_after_its_buffer_is_reused, SQUARES)
    first, view, second = (node_named(graph, name) for name in ("mm", "permute", "mm_1"))
    assert first.meta["buffer"] == second.meta["buffer"]  # what plan_memory alone would do
    reader = next(iter(view.users))
    assert graph.nodes.index(second) < graph.nodes.index(reader)
    assert_close(list(kernel(*SQUARES)), interpreted(graph, SQUARES), np.float64)
    eager = reads_a_view_after_its_buffer_is_reused(*(jg.tensor(a) for a in SQUARES))
    np.testing.assert_allclose(kernel(*SQUARES)[0], eager.numpy(), rtol=1e-12)


TABLE = jg.tensor(np.arange(6.0))


def returns_views(x, w, v):
    y = x * 2.0
    low, high = y.split(2, dim=1)
    values, indices = y.max(dim=1)
    return (x, x.T, x[1:], w * 1.0, y, y.T, y[0], low, high, low.T, values, indices, y.max(dim=1)[0],
            TABLE[2:], v.reshape(16))


@pytest.fixture(scope="module")
def views_kernel():
    graph, kernel = lowered(returns_views, SQUARES)
    return SimpleNamespace(graph=graph, kernel=kernel)


def test_no_output_shares_memory_with_another_or_with_an_argument(views_kernel):
    arrays = [a.copy() for a in SQUARES]
    outputs = views_kernel.kernel(*arrays)
    assert len(outputs) == 15
    for a, b in itertools.combinations(outputs, 2):
        assert not np.shares_memory(a, b)
    for out, argument in itertools.product(outputs, arrays):
        assert not np.shares_memory(out, argument)
    assert_close(list(outputs), interpreted(views_kernel.graph, arrays), np.float64)


def test_writing_into_outputs_changes_neither_the_arguments_nor_the_next_call(views_kernel):
    arrays = [a.copy() for a in SQUARES]
    expected = [o.copy() for o in views_kernel.kernel(*arrays)]
    for out in views_kernel.kernel(*arrays):
        out[...] = 0
    for argument, original in zip(arrays, SQUARES):
        np.testing.assert_array_equal(argument, original)
    for got, want in zip(views_kernel.kernel(*arrays), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(TABLE.numpy(), np.arange(6.0))  # the graph's constant too
