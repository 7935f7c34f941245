"""What the backend cannot lower is a ``LoweringError`` naming the op and the IR node, raised before
anything compiles; what numba refuses is one too, never numba's own exception; and ``jitgrad.compile``
runs such a function eagerly."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends.numba_cpu import LoweringError, compiler, lower, structural_key
from jitgrad.backends.numba_cpu.scalar_functions import FUNCTIONS
from jitgrad.backends.numba_cpu.statements import STATEMENTS
from jitgrad.compile import CompileWarning
from jitgrad.ops.registry import REGISTRY
from lowering_helpers import optimized_graph


def softmax_step(x):
    y = jg.softmax(x.exp() * 2.0, dim=1)
    loss = (y * y).sum()
    loss.backward()
    return loss


X = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


@pytest.fixture
def no_compiling(monkeypatch):
    """Fails the test if the backend gets as far as compiling."""
    def refuse(*args, **kwargs):
        raise AssertionError("lower() compiled a kernel for a graph it cannot lower")
    monkeypatch.setattr(compiler, "_compile", refuse)


@pytest.mark.parametrize("op", ["exp", "sum", "softmax"])
def test_an_op_without_lowering_is_named_with_its_node_before_compiling(op, monkeypatch, no_compiling):
    graph = optimized_graph(softmax_step, [X])
    node = next(n for n in graph.nodes if n.target_name == op)
    monkeypatch.setattr(REGISTRY[op], "lower", None)
    for attempt in (lambda: lower(graph), lambda: structural_key(graph)):
        with pytest.raises(LoweringError) as error:
            attempt()
        assert f"op {op!r}" in str(error.value) and f"%{node.name}: " in str(error.value)


def test_an_intrinsic_the_backend_lacks_is_named_with_its_node_before_compiling(monkeypatch, no_compiling):
    """An op entry names an intrinsic (``softmax``) each backend implements; one this backend does not
    have is the same error as an op without a lowering."""
    graph = optimized_graph(softmax_step, [X])
    monkeypatch.delitem(STATEMENTS, "softmax")
    with pytest.raises(LoweringError, match="no lowering for op 'softmax' \\(IR node %softmax: "):
        lower(graph)


def test_a_lowering_that_cannot_handle_a_use_says_why(monkeypatch, no_compiling):
    graph = optimized_graph(softmax_step, [X])

    def refuse(ctx):
        raise NotImplementedError("softmax over a dimension of one hundred")
    monkeypatch.setitem(STATEMENTS, "softmax", refuse)
    with pytest.raises(LoweringError, match="cannot lower IR node %softmax.*: softmax over a dimension"):
        lower(graph)


def test_numba_refusing_the_generated_code_is_a_lowering_error(monkeypatch):
    graph = optimized_graph(lambda x: (x.exp() * 2.0).sum(dim=1), [X])
    monkeypatch.setitem(FUNCTIONS, "exp", lambda args, dtype: f"math.exp({args[0]}).no_such_attribute")
    kernels = dict(compiler._KERNELS)
    with pytest.raises(LoweringError) as error:
        lower(graph)
    message = str(error.value)
    assert message.startswith("numba could not compile the generated kernel") and "no_such_attribute" in message
    assert "def kernel(" in message  # the source comes with it, to read
    assert type(error.value.__cause__).__module__.startswith("numba")
    assert compiler._KERNELS == kernels  # the failed kernel is not kept


def test_jitgrad_compile_runs_what_cannot_lower_eagerly(monkeypatch):
    def refuse(ctx):
        raise NotImplementedError("not this time")
    monkeypatch.setitem(STATEMENTS, "softmax", refuse)
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    step = jg.compile(softmax_step, cache=False)
    assert step.backend.name == "numba_cpu"
    x, x_eager = jg.tensor(X, requires_grad=True), jg.tensor(X, requires_grad=True)
    with pytest.warns(CompileWarning, match="not this time"):
        loss = step(x)
    expected = softmax_step(x_eager)
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), x_eager.grad.numpy(), rtol=1e-12)
