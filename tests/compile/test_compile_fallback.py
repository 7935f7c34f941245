"""What a compiled function cannot reproduce exactly runs eagerly (one warning) or, with fullgraph=True,
raises an error naming the op and the line; check=True compares with eager."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.compile import CompileCheckError, CompileError, CompileWarning, LoweringError
from jitgrad.compile import backend as backend_module


def branchy(x):
    if x.sum() > 0:  # data-dependent control flow
        return x * 2.0
    return x * 3.0


def test_data_dependent_control_flow_warns_once_and_runs_eagerly():
    f = jg.compile(branchy)
    with pytest.warns(CompileWarning, match="bool\\(\\) on a traced tensor"):
        for sign in (1.0, -1.0):
            x = jg.ones(3, dtype=jg.float64) * sign
            assert_close(f(x), branchy(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(jg.ones(3, dtype=jg.float64))


def test_fullgraph_names_the_line():
    with pytest.raises(CompileError, match="if x.sum\\(\\) > 0:"):
        jg.compile(branchy, fullgraph=True)(jg.ones(3))


def test_an_op_without_lowering_names_the_op_and_line(monkeypatch):
    def no_exp(graph, **options):
        if any(n.target_name == "exp" for n in graph.nodes):
            raise LoweringError("no lowering for op exp")
        return backend_module.interpret(graph, **options)
    monkeypatch.setattr(backend_module.INTERPRETER, "lower", no_exp)

    def f(x):
        y = x * 2.0
        return y.exp()
    x = jg.randn(3, dtype=jg.float64, requires_grad=True)
    with pytest.raises(CompileError) as error:
        jg.compile(f, fullgraph=True, cache=False)(x)
    message = str(error.value)
    assert "exp" in message and "return y.exp()" in message and "test_compile_fallback.py" in message
    assert error.value.__cause__ is None and error.value.__suppress_context__
    with pytest.warns(CompileWarning, match="no lowering"):
        out = jg.compile(f, cache=False)(x)
    out.sum().backward()
    assert_close(x.grad, 2.0 * f(x.detach()))


@pytest.mark.parametrize("inside", [
    lambda y: y.register_hook(lambda g: g * 10.0),
    lambda y: y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 3.0, *grad_inputs[1:])),
    lambda y: y.retain_grad(),
], ids=["tensor_hook", "node_hook", "retain_grad"])
def test_hooks_inside_are_recorded_as_the_engine_runs_them(inside):
    """A hook registered inside runs in the traced backward like any other code the engine runs, so
    its ops are part of the compiled backward: the gradient is eager's, hook included."""
    def f(x):
        y = x * 2.0
        inside(y)
        return (y * y).sum()
    x = jg.randn(3, dtype=jg.float64, requires_grad=True)
    xe = x.detach().requires_grad_()
    jg.compile(f, fullgraph=True, cache=False)(x).backward()
    f(xe).backward()
    assert_close(x.grad, xe.grad)


def test_retain_grad_on_a_returned_value_is_refused():
    def f(x):
        y = x * 2.0
        y.retain_grad()
        return y
    with pytest.raises(CompileError, match="retain_grad\\(\\) on a value the compiled function returns"):
        jg.compile(f, fullgraph=True, cache=False)(jg.randn(3, requires_grad=True))


def test_a_hook_on_a_captured_tensor_runs_once_when_the_engine_reaches_it():
    w = jg.ones(3, dtype=jg.float64, requires_grad=True)
    w.register_hook(lambda g: g * 10.0)
    x = jg.full((3,), 2.0, dtype=jg.float64)
    jg.compile(lambda x: (x * w).sum(), cache=False, fullgraph=True)(x).backward()
    assert_close(w.grad, jg.full((3,), 20.0, dtype=jg.float64))


def test_a_hook_on_an_argument_of_a_step_runs_eagerly():
    def step(x):
        loss = (x * x).sum()
        loss.backward()
        return loss
    x = jg.randn(3, dtype=jg.float64, requires_grad=True)
    x.register_hook(lambda g: g * 0.0)
    with pytest.warns(CompileWarning, match="hook"):
        jg.compile(step)(x)
    assert_close(x.grad, jg.zeros(3, dtype=jg.float64))


class TripleSquare(jg.autograd.Function):
    """A custom Function in jitgrad ops whose backward is deliberately not the derivative (3x, not
    2x): a compiled function must run this backward, not one of its own."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3.0 * x


class NumpySquare(jg.autograd.Function):
    """A custom Function that leaves jitgrad for numpy: nothing a graph can capture."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return jg.tensor(x.detach().numpy() ** 2)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return jg.tensor(grad.detach().numpy() * 2.0 * x.detach().numpy())


def test_a_custom_function_in_jitgrad_ops_compiles_with_its_own_backward():
    f = jg.compile(lambda x: TripleSquare.apply(x).sum(), fullgraph=True, cache=False)
    x = jg.randn(4, dtype=jg.float64, requires_grad=True)
    xe = x.detach().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(x)
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    out.backward()
    TripleSquare.apply(xe).sum().backward()
    assert_close(x.grad, xe.grad)


def test_a_custom_function_that_reads_numpy_runs_eagerly_with_every_input():
    def loss(x):
        return NumpySquare.apply(x).sum()
    with pytest.raises(CompileError, match="numpy\\(\\) on a traced tensor"):
        jg.compile(loss, fullgraph=True)(jg.ones(2, dtype=jg.float64, requires_grad=True))
    f = jg.compile(loss)
    with pytest.warns(CompileWarning, match="numpy\\(\\) on a traced tensor"):
        f(jg.ones(2, dtype=jg.float64, requires_grad=True))
    for start in (1.0, 5.0):  # a captured constant would give the first input's answer again
        x = jg.arange(3, dtype=jg.float64).add(start).requires_grad_()
        out = f(x)
        out.backward()
        assert_close(out, (x.detach() ** 2).sum())
        assert_close(x.grad, 2.0 * x.detach())


def test_a_hook_added_between_calls_is_seen_by_the_next_call():
    def step(x):
        loss = (x * x).sum()
        loss.backward()
        return loss
    f = jg.compile(step)
    x = jg.randn(3, dtype=jg.float64, requires_grad=True)
    f(x)
    assert_close(x.grad, 2.0 * x.detach())
    x.grad = None
    x.register_hook(lambda g: g * 0.0)
    with pytest.warns(CompileWarning, match="hook"):
        f(x)
    assert_close(x.grad, jg.zeros(3, dtype=jg.float64))


def test_an_index_tensor_argument_is_never_baked_into_the_graph():
    def gather(x, index):
        return (x[index] * 2.0).sum()
    f = jg.compile(gather)
    x = jg.randn(3, 4, dtype=jg.float64)
    with pytest.warns(CompileWarning, match="numpy\\(\\) on a traced tensor"):
        f(x, jg.tensor(np.array([0, 1, 2])))
    for rows in ([2, 2, 0], [1, 0, 1]):   # the same shapes: a graph with the first index would be reused
        index = jg.tensor(np.array(rows))
        assert_close(f(x, index), gather(x, index))


def test_forward_mode_ad_runs_eagerly():
    """Inside a dual level a compiled call ran its kernels and the result had no tangent (until
    2026-11-28, silently); it runs eagerly there, as under anomaly mode."""
    import jitgrad.autograd.forward_ad as fwAD
    fn = lambda x: (x * 0.5).tanh().sum()   # noqa: E731
    compiled = jg.compile(fn, cache=False)
    x = jg.tensor(np.arange(3.0))
    compiled(x)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(compiled(fwAD.make_dual(x, jg.ones(3, dtype=jg.float64)))).tangent
        expected = fwAD.unpack_dual(fn(fwAD.make_dual(x, jg.ones(3, dtype=jg.float64)))).tangent
    assert tangent is not None
    assert_close(tangent, expected)


@pytest.mark.parametrize("read", [lambda x: x.grad_fn is None, lambda x: x.is_leaf], ids=["grad_fn", "is_leaf"])
def test_the_history_of_a_computed_input_is_read_eagerly(read):
    """A borrowed input has no history in the trace; until 2026-11-28 ``x.grad_fn is None`` read there
    took the leaf's branch for an input computed outside, silently. Now such a read runs the call
    eagerly; a leaf's is answered in the trace."""
    def scaled(x):
        return (x * (2.0 if read(x) else 3.0)).sum()
    compiled = jg.compile(scaled, cache=False)
    leaf = jg.tensor(np.arange(3.0), requires_grad=True)
    computed = leaf * 1.0
    assert_close(compiled(leaf), scaled(leaf))
    with pytest.warns(CompileWarning, match="computed outside the function"):
        assert_close(compiled(computed), scaled(computed))


def test_anomaly_mode_runs_eagerly():
    f = jg.compile(lambda x: (x * 2.0).sum())
    x = jg.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly"), jg.autograd.detect_anomaly():
        out = f(x)
    assert type(out.grad_fn).__name__ == "SumBackward0"


@pytest.mark.parametrize("inside", [False, True], ids=["loss", "step"])
def test_saved_tensor_hooks_around_a_call_run_it_eagerly(inside):
    """Eager mode passes what its graph saves through active saved-tensor hooks (here doubling it, so
    the gradient doubles too); a compiled call saves nothing of that graph. Until 2026-11-28 the call
    ran compiled and its gradient ignored the hooks, silently."""
    def loss(x, w):
        return (x * w).tanh().sum()

    def step(x, w):
        loss(x, w).backward()
        return w.grad

    fn = step if inside else loss
    compiled = jg.compile(fn, cache=False)
    x = jg.randn(3, dtype=jg.float64)
    w, we = (jg.randn(3, dtype=jg.float64, requires_grad=True) for _ in range(2))
    with jg.no_grad():
        we.copy_(w)
    compiled(x, w)   # compiled first, outside the hooks
    w.grad = None
    with pytest.warns(CompileWarning, match="saved-tensor hooks are active"), \
            jg.autograd.graph.saved_tensors_hooks(lambda t: t * 2.0, lambda t: t):
        out, expected = compiled(x, w), fn(x, we)
        if not inside:
            out.backward()
            expected.backward()
    assert_close(w.grad, we.grad)


def _fails_after_backward(x, w, fail):
    (x * w).sum().backward()
    if fail:
        raise ValueError("a bad batch")
    return w.grad * 1.0


def test_an_exception_of_the_function_comes_after_the_effects_eager_mode_has_before_it():
    """Until 2026-11-28 an exception raised while tracing came out of the trace, which had given
    ``w.grad`` back: the caller saw no gradient where eager mode leaves one."""
    compiled = jg.compile(_fails_after_backward, cache=False)
    x = jg.randn(3, dtype=jg.float64)
    w = jg.randn(3, dtype=jg.float64, requires_grad=True)
    for _ in range(2):
        w.grad = None
        with pytest.raises(ValueError, match="a bad batch"):
            compiled(x, w, True)
        assert_close(w.grad, x)
    assert_close(compiled(x, w, False), 2.0 * x)   # compiles once the function returns


def _fails_only_when_traced(x, w):
    from jitgrad.ops.registry import observed
    if observed():   # something only a trace sees: a limit of the tracer, not of the function
        raise KeyError("traced")
    return (x * w).sum()


def test_a_function_that_raises_only_while_traced_runs_eagerly_said_and_is_not_traced_again(monkeypatch):
    """Until 2026-11-28 such a call ran eagerly silently, and every later call traced again first."""
    from jitgrad.compile.decorator import CompiledFunction
    traces = []
    build = CompiledFunction._build_specializing
    monkeypatch.setattr(CompiledFunction, "_build_specializing",
                        lambda self, *a: traces.append(1) or build(self, *a))
    compiled = jg.compile(_fails_only_when_traced, cache=False)
    x, w = jg.randn(3, dtype=jg.float64), jg.randn(3, dtype=jg.float64, requires_grad=True)
    with pytest.warns(CompileWarning, match="raised KeyError while traced .'traced'., and not when run eagerly"):
        assert_close(compiled(x, w), _fails_only_when_traced(x, w))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            assert_close(compiled(x, w), _fails_only_when_traced(x, w))
    assert len(traces) == 1
    assert "raised KeyError while traced" in compiled.explain(x, w).fallback_reason
    with pytest.raises(CompileError, match="raised KeyError while traced"):
        jg.compile(_fails_only_when_traced, cache=False, fullgraph=True)(x, w)


def test_check_passes_and_catches_a_wrong_backend(monkeypatch):
    def f(x, w):
        return (x * w).tanh().sum()
    x, w = jg.randn(4, dtype=jg.float64), jg.randn(4, dtype=jg.float64, requires_grad=True)
    f_checked = jg.compile(f, check=True)
    f_checked(x, w).backward()

    def off_by_one(graph, **options):
        compiled = backend_module.interpret(graph, **options)
        call = compiled.__call__

        class Wrong:
            source = compiled.source

            def __call__(self, *arrays):
                return tuple(a + 1.0 for a in call(*arrays))
        return Wrong()
    monkeypatch.setattr(backend_module.INTERPRETER, "lower", off_by_one)
    with pytest.raises(CompileCheckError, match="output 0 differs from eager"):
        jg.compile(f, check=True, cache=False)(x, w)


def test_check_on_a_step_compares_updates_and_grads():
    def step(x, w):
        loss = (x * w).sum()
        loss.backward()
        with jg.no_grad():
            w -= 0.5 * w.grad
        return loss
    x, w = jg.randn(4, dtype=jg.float64), jg.randn(4, dtype=jg.float64, requires_grad=True)
    we = w.detach().requires_grad_()
    jg.compile(step, check=True)(x, w)
    step(x, we)
    assert_close(w, we)
