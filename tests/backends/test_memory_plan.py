"""The memory plan inside a kernel: the kernel allocates exactly the plan's buffers, a buffer the plan
hands on is not overwritten while a view of its old value is still read, and what a call returns is
the caller's own (no output shares memory with another, with an argument or with a constant of the
graph)."""
from __future__ import annotations

import itertools
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends.numba_cpu.codegen import generate
from helpers import assert_close
from lowering_helpers import interpreted, lowered, optimized_graph

RNG = np.random.default_rng(11)
SQUARES = [RNG.standard_normal((4, 4)) for _ in range(3)]


def reads_a_view_after_its_buffer_is_reused(x, w, v):
    first = x @ w
    transposed = first.T              # first's last reader, were views not its memory...
    second = x @ v                    # ...and second would take its buffer
    return (transposed @ second).sum(dim=0)


def node_named(graph, name):
    return next(n for n in graph.nodes if n.name == name)


def test_a_reused_buffer_is_not_overwritten_while_a_view_of_it_is_read():
    graph, kernel = lowered(reads_a_view_after_its_buffer_is_reused, SQUARES)
    first, view, second = (node_named(graph, name) for name in ("mm", "permute", "mm_1"))
    assert first.meta["buffer"] != second.meta["buffer"]  # plan_memory knows the view reads first
    assert view.meta["view_of"] == "mm" and "buffer" not in view.meta
    reader = next(iter(view.users))
    assert graph.nodes.index(second) < graph.nodes.index(reader) <= first.meta["live"][1]
    assert_close(list(kernel(*SQUARES)), interpreted(graph, SQUARES), dtype=np.float64)
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
    assert_close(list(outputs), interpreted(views_kernel.graph, arrays), dtype=np.float64)


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


def relu_of_product(x, w):
    return (x @ w).relu().mean()


def chain(x, w, v):
    return x.exp().sin().cos().tanh().sum(0) * w.sum()


def step_of_a_layer(x, w, v):
    loss = jg.log_softmax((x @ w).tanh() @ v, dim=1).mean()
    loss.backward()
    return loss


PROGRAMS = {"relu of a product": (relu_of_product, SQUARES[:2]), "chain": (chain, SQUARES),
            "views returned": (returns_views, SQUARES), "step of a layer": (step_of_a_layer, SQUARES),
            "view read late": (reads_a_view_after_its_buffer_is_reused, SQUARES)}


def allocated(kernel) -> tuple[set[str], int, int]:
    """What a generated kernel allocates: the names of its workspace buffers, and the count and bytes
    of those and of the output arrays the caller passes in."""
    names = set(re.findall(r"^    (\w+) = workspace_\w+\[", kernel.source, re.MULTILINE))
    nbytes = sum(n * np.dtype(dtype).itemsize for dtype, n in kernel.workspaces) + \
        sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in kernel.output_arrays)
    return names, len(names) + len(kernel.output_arrays), nbytes


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_kernel_allocates_the_plan_as_it_is(name):
    program, arrays = PROGRAMS[name]
    graph = optimized_graph(program, arrays)
    stats = graph.history[-1].stats
    names, count, nbytes = allocated(generate(graph))
    assert (count, nbytes) == (stats["buffers"], stats["planned_bytes"])
    assert names == {n.meta["buffer"] for n in graph.nodes if n.meta.get("buffer", "").startswith("buf")}


def test_the_plan_of_a_fused_loss_holds_no_value_the_loop_keeps_to_itself():
    """``relu`` lives inside the loop that sums it: a product's buffer and the result's, 100 bytes."""
    x, w = SQUARES[0][:, :3].astype(np.float32), SQUARES[1][:3].astype(np.float32)
    graph = optimized_graph(relu_of_product, [x, w])
    assert graph.history[-1].stats == {"unplanned_bytes": 64 + 64 + 4, "planned_bytes": 64 + 4,
                                       "peak_live_bytes": 64 + 4, "buffers": 2}
    assert "buffer" not in graph.find("relu").meta
