"""Tracing: every registry op (forward and backward) through ``trace``, the generated code run on its
own, backward nodes in the engine's order, ``.grad`` outputs, conversions refused, ``trace_joint``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgrad as jg
from jitgrad import fx
from jitgrad.fx.joint import is_backward
from jitgrad.fx.tracer import Tracer
from jitgrad.ops.registry import observing
from helpers import leaves
from op_samples import SAMPLES

SAMPLE_IDS = [s.id for s in SAMPLES]


def loss_program(sample):
    """The sample's op and, for a differentiable one, a backward of a weighted sum of its output."""
    def program(*inputs):
        out = sample.fn(*inputs)
        if sample.differentiable:
            weights = jg.tensor(np.linspace(-1.0, 1.0, out.numel()).reshape(out.shape))
            (out * weights).sum().backward()
        return out
    return program


def run_eager(sample, arrays):
    inputs = leaves(arrays)
    out = loss_program(sample)(*inputs)
    return out, [t.grad for t in inputs]


def assert_same(actual, expected):
    if expected is None:
        assert actual is None
        return
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-9)
    assert actual.dtype == expected.dtype


@pytest.mark.parametrize("sample", SAMPLES, ids=SAMPLE_IDS)
def test_traced_module_equals_eager_on_every_op(sample):
    arrays = sample.arrays(seed=1)
    expected, expected_grads = run_eager(sample, arrays)
    gm = fx.trace(loss_program(sample), *leaves(sample.arrays(seed=2)))  # traced on other values
    gm.graph.lint()
    inputs = leaves(arrays)
    assert_same(gm(*inputs), expected)
    for got, want in zip([t.grad for t in inputs], expected_grads):
        assert_same(got, want)
    namespace: dict = {}
    exec(gm.code, namespace)  # the source alone gives the same values
    alone = namespace["forward"](*leaves(arrays), constants=gm.constants)
    assert_same(alone[0] if sample.differentiable else alone, expected)


def test_backward_nodes_follow_the_engines_order():
    def program(x, w):
        loss = ((x * w).exp() + x.sin()).sum()
        loss.backward()
        return loss

    x, w = jg.randn(3, requires_grad=True), jg.randn(3, requires_grad=True)
    seen: list[str] = []
    with observing(lambda op, args, attrs, out: seen.append(op.name)):
        program(x, w)
    gm = fx.trace(program, jg.randn(3, requires_grad=True), jg.randn(3, requires_grad=True))
    traced = [n.target.name for n in gm.graph.nodes if n.op is fx.Opcode.CALL_FUNCTION]
    assert traced == seen
    backward = [n.target.name for n in gm.graph.nodes if is_backward(n) and n.op is fx.Opcode.CALL_FUNCTION]
    assert backward == ["reshape", "expand", "cos", "mul", "mul", "mul", "mul", "add"]


def test_gradients_accumulate_like_eager():
    def twice(x):
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return y

    gm = fx.trace(twice, jg.randn(4, requires_grad=True))
    x = jg.randn(4, requires_grad=True)
    x.grad = jg.ones(4)
    gm(x)
    np.testing.assert_allclose(x.grad.numpy(), 1.0 + 4.0 * x.detach().numpy(), rtol=1e-6)
    assert x.grad.grad_fn is None
    assert "add" in [n.target_name for n in gm.graph.nodes if is_backward(n)]


def test_autograd_grad_and_create_graph_are_captured():
    def grad_of_grad(x):
        (g,) = jg.autograd.grad((x ** 3).sum(), x, create_graph=True)
        (gg,) = jg.autograd.grad(g.sum(), x)
        return g, gg

    gm = fx.trace(grad_of_grad, jg.randn(3, requires_grad=True))
    x = jg.tensor([1.0, -2.0, 0.5], requires_grad=True)
    g, gg = gm(x)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2, rtol=1e-6)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy(), rtol=1e-6)


def test_shape_control_flow_and_non_tensor_arguments_are_specialised():
    def program(x, scale):
        return x * scale if x.shape[0] > 2 else x

    gm = fx.trace(program, jg.randn(3), 4.0)
    assert [p.name for p in gm.graph.placeholders] == ["x"]
    assert "mul(%x, 4.0)" in str(gm.graph)
    np.testing.assert_allclose(gm(jg.ones(3)).numpy(), [4.0, 4.0, 4.0])


def test_node_metadata_comes_from_the_ops_rules_and_a_wrong_rule_stops_the_trace(monkeypatch):
    """Each node's shape and dtype is what its op's rule gives (``OpDef.meta``), checked against the
    value the op returned: a rule that disagrees is a TraceError naming the op, not a wrong graph."""
    from jitgrad.ops.meta_rules import TensorMeta
    from jitgrad.ops.registry import REGISTRY
    gm = fx.trace(lambda x: (x.exp() * 2).sum(1), jg.randn(2, 3))
    assert [n.format_meta() for n in gm.graph.nodes][1:3] == ["float32[2, 3]", "float32[2, 3]"]
    monkeypatch.setattr(REGISTRY["exp"], "meta", lambda self: TensorMeta(self.shape, np.dtype(np.float64)))
    with pytest.raises(fx.TraceError, match="rule of op exp gives .*float64.* but the op returned .*float32"):
        fx.trace(lambda x: (x.exp() * 2).sum(1), jg.randn(2, 3))
    monkeypatch.setattr(REGISTRY["exp"], "meta", lambda self: TensorMeta(self.shape[::-1], self.dtype))
    with pytest.raises(fx.TraceError, match=r"rule of op exp gives .*\(3, 2\).* but the op returned .*\(2, 3\)"):
        fx.trace(lambda x: (x.exp() * 2).sum(1), jg.randn(2, 3))


def test_an_in_place_write_casts_to_the_written_tensors_dtype_in_the_graph_too():
    """``z += y`` keeps ``z`` float32 when ``y`` is float64, as numpy's write casts: the graph reads
    ``z`` through a ``to_dtype``, so every later node's metadata is what its op returns."""
    def program(x, y):
        z = x * 1.0
        z += y
        return z * 2.0
    x, y = jg.randn(3), jg.randn(3, dtype=jg.float64)
    gm = fx.trace(program, x, y)
    gm.graph.lint()
    assert [n.target_name for n in gm.graph.nodes if n.op == "call_function"] == ["mul", "add", "to_dtype", "mul"]
    assert gm(x, y).dtype == jg.float32
    np.testing.assert_array_equal(gm(x, y).numpy(), program(x, y).numpy())


@pytest.mark.parametrize("convert, operation", [
    (lambda t: t.sum().item(), "Tensor.item()"),
    (lambda t: bool(t.sum() > 0), "bool()"),
    (lambda t: float(t.sum()), "float()"),
    (lambda t: int(t.sum()), "int()"),
    (lambda t: t.tolist(), "Tensor.tolist()"),
    (lambda t: np.asarray(t), "Tensor.numpy()"),
    (lambda t: [0, 1][t.argmax()], "__index__"),
])
def test_python_values_are_refused_with_the_line(convert, operation):
    with pytest.raises(fx.TraceError) as error:
        fx.trace(lambda t: convert(t), jg.randn(3))
    message = str(error.value)
    assert operation in message and "test_fx_tracer.py" in message and "convert, operation" not in message


def test_trace_joint_takes_tangents_and_reports_saved_values():
    def f(x, w):
        return (x * w).tanh(), x.sum()

    x, w = jg.randn(2, 3, requires_grad=True), jg.randn(3, requires_grad=True)
    joint = fx.trace_joint(f, x, w)
    joint.graph.lint()
    assert joint.primals == ("x", "w") and joint.tangents == ("tangent_0", "tangent_1")
    assert set(joint.saved) == {"x", "w", "tanh"}
    t0, t1 = jg.randn(2, 3), jg.randn(())
    (y, s), (gx, gw) = joint.module(x, w, t0, t1)
    out = f(x, w)
    ex, ew = jg.autograd.grad(out, (x, w), (t0, t1))
    np.testing.assert_allclose(y.detach().numpy(), out[0].detach().numpy())
    np.testing.assert_allclose(gx.detach().numpy(), ex.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gw.detach().numpy(), ew.numpy(), rtol=1e-6)


UNARY = ["exp", "tanh", "sin", "sigmoid", "neg", "relu"]
BINARY = ["add", "sub", "mul", "maximum"]
program_steps = st.lists(st.tuples(st.sampled_from(UNARY + BINARY + ["sum0", "reshape"]),
                                   st.integers(0, 10), st.integers(0, 10)), min_size=1, max_size=8)


def random_program(steps):
    """A straight-line program over two (4, 3) inputs; each step reads earlier values by index."""
    def program(x, y):
        values = [x, y]
        for name, i, j in steps:
            a, b = values[i % len(values)], values[j % len(values)]
            if name in BINARY:
                if a.shape != b.shape:
                    b = b.reshape(-1).sum()
                values.append(getattr(jg, name)(a, b))
            elif name == "sum0":
                values.append(a.sum(0))  # a 0-d value too: its dim 0 is all of it
            elif name == "reshape":
                values.append(a.reshape(-1))
            else:
                values.append(getattr(jg, name)(a))
        loss = sum(v.sum() for v in values[2:])
        loss.backward()
        return loss
    return program


@settings(max_examples=15, deadline=None)
@given(program_steps)
def test_random_programs_trace_to_eager_values_and_gradients(steps):
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(4, 3)), rng.normal(size=(4, 3))]
    program = random_program(steps)
    gm = fx.trace(program, *leaves(arrays))
    gm.graph.lint()
    eager_inputs, traced_inputs = leaves(arrays), leaves(arrays)
    assert_same(gm(*traced_inputs), program(*eager_inputs))
    for got, want in zip(traced_inputs, eager_inputs):
        assert_same(got.grad, want.grad)


def test_a_rule_is_asked_once_per_distinct_call(monkeypatch):
    """The tracer keeps its ops' shape rules' answers by what they read (``call_meta_key``): an
    unrolled loop asks once, and calls that differ in a dtype, a shape or the type of a Python number
    (promotion reads it) are asked apart; an answer reused wrongly would fail the trace's check
    against the value."""
    from jitgrad.fx import tracer as tracer_module
    asked = []
    real = tracer_module.call_meta
    monkeypatch.setattr(tracer_module, "call_meta", lambda target, *rest: asked.append(target.name) or
                        real(target, *rest))

    def f(x, y, n):
        for _ in range(6):
            x = x * 2
        return x, y * 2, y * 2.0, n * 2, n * 2.0, n[:2] * 2, n * True
    module = fx.trace(f, jg.randn(3), jg.randn(3, dtype=jg.float64), jg.tensor([1, 2, 3]))
    assert asked.count("mul") == 7
    outputs = module(jg.randn(3), jg.randn(3, dtype=jg.float64), jg.tensor([1, 2, 3]))
    assert [o.dtype for o in outputs] == [jg.float32, jg.float64, jg.float64, jg.int64, jg.float32, jg.int64,
                                          jg.int64]


def test_a_released_tracer_lets_its_tensors_go_without_the_cycle_collector():
    """The hooks recording ``.grad`` hold the tracer, which holds them and every traced tensor: a cycle
    only the collector could free (``Tracer.release``, called by ``jitgrad.compile`` after a trace)."""
    import gc
    import weakref
    w = jg.randn(3, requires_grad=True)

    def f(x):
        (x * w).tanh().sum().backward()
        return w.grad

    was = gc.isenabled()
    gc.disable()
    try:
        for release in (False, True):
            tracer = Tracer(capture_writes=True)
            with tracer.running():
                tracer.lift("w", w)
                f(jg.ones(3))
            traced = [weakref.ref(t) for t, _ in tracer.traced_values() if t is not w]
            if release:
                tracer.release()
            del tracer
            alive = sum(r() is not None for r in traced)
            assert (alive == 0) if release else alive > 1  # (the unreleased one waits for a collection)
    finally:
        if was:
            gc.enable()
