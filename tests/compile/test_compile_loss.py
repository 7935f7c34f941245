"""A compiled loss: forward values and gradients (through one CompiledFunctionBackward) equal eager."""
from __future__ import annotations


import numpy as np
import pytest

import jitgrad as jg
from jitgrad.compile import CompiledFunctionBackward

from compile_helpers import assert_close
from helpers import leaves

from op_samples import SAMPLES

# A representative set: broadcasting binary ops, unary math, reductions, shape ops, matmul, softmax.
REPRESENTATIVE = ["add-bcast", "mul-bcast", "div-bcast", "pow-tensor**tensor-bcast", "where-bcast",
                  "exp-method", "tanh-method", "sigmoid-method", "gelu-tanh", "sum-dims-keepdim",
                  "mean-dim-keepdim", "mm-operator", "matmul-bcast-batch", "transpose-method",
                  "reshape-method", "log_softmax-dim-1", "softmax-dim1", "var-dim-biased", "amax-dim",
                  "clamp-both", "maximum-bcast", "expand-method", "cat-dim1", "split-sizes",
                  "getitem-slice", "nll_loss-cross_entropy"]
FLOAT32 = ("mul-bcast", "tanh-method", "mm-operator", "log_softmax-dim-1")
BY_ID = {s.id: s for s in SAMPLES}
CHOSEN = [BY_ID[i] for i in REPRESENTATIVE if i in BY_ID]


def test_enough_samples_exist():
    assert len(CHOSEN) == len(REPRESENTATIVE), sorted(set(REPRESENTATIVE) - set(BY_ID))


def _outputs(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


CASES = [(s, np.float64) for s in CHOSEN] + [(s, np.float32) for s in CHOSEN if s.id in FLOAT32]


@pytest.mark.parametrize("sample,dtype", CASES, ids=[f"{s.id}-{np.dtype(d).name}" for s, d in CASES])
def test_sample_forward_and_gradients_equal_eager(sample, dtype):
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in sample.arrays()]
    eager_in, compiled_in = leaves(arrays), leaves(arrays)
    expected = _outputs(sample.fn(*eager_in))
    got = _outputs(jg.compile(sample.fn)(*compiled_in))
    for a, e in zip(got, expected):
        assert_close(a, e, f"{sample.id} output")
        assert a.requires_grad == e.requires_grad
    seeds = [jg.tensor(np.random.default_rng(1).standard_normal(e.shape).astype(dtype)) for e in expected]
    jg.autograd.backward(expected, seeds)
    jg.autograd.backward(got, seeds)
    for i, (a, e) in enumerate(zip(compiled_in, eager_in)):
        assert (a.grad is None) == (e.grad is None)
        if e.grad is not None:
            assert_close(a.grad, e.grad, f"{sample.id} gradient {i}")


def mlp_loss(x, onehot, w1, b1, w2, b2):
    h = jg.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return -(jg.nn.functional.log_softmax(logits, dim=1) * onehot).mean() * 10.0


@pytest.fixture(scope="module")
def mlp():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((8, 5)), np.eye(3)[rng.integers(0, 3, 8)], rng.standard_normal((5, 4)),
              rng.standard_normal(4), rng.standard_normal((4, 3)), rng.standard_normal(3)]
    return jg.compile(mlp_loss), arrays


def _mlp_tensors(arrays):
    return [jg.tensor(a) for a in arrays[:2]] + [jg.tensor(a, requires_grad=True) for a in arrays[2:]]


def test_loss_backward_fills_grad_like_eager(mlp):
    compiled, arrays = mlp
    ours, theirs = _mlp_tensors(arrays), _mlp_tensors(arrays)
    loss = compiled(*ours)
    assert isinstance(loss.grad_fn, CompiledFunctionBackward)
    loss.backward()
    expected = mlp_loss(*theirs)
    expected.backward()
    assert_close(loss, expected)
    for a, e in zip(ours[2:], theirs[2:]):
        assert_close(a.grad, e.grad)
    assert ours[0].grad is None


def test_gradients_accumulate_and_second_backward_needs_retain_graph(mlp):
    compiled, arrays = mlp
    ours, theirs = _mlp_tensors(arrays), _mlp_tensors(arrays)
    loss = compiled(*ours)
    loss.backward(retain_graph=True)
    loss.backward()
    for _ in range(2):
        mlp_loss(*theirs).backward()
    for a, e in zip(ours[2:], theirs[2:]):
        assert_close(a.grad, e.grad)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_only_the_gradients_asked_for_are_computed(mlp):
    compiled, arrays = mlp
    ours, theirs = _mlp_tensors(arrays), _mlp_tensors(arrays)
    (e,) = jg.autograd.grad(mlp_loss(*theirs), [theirs[2]])
    for _ in range(2):  # the first call's fused kernel computes them all; the next ones learn
        (g,) = jg.autograd.grad(compiled(*ours), [ours[2]])
        assert_close(g, e)
    program = compiled.programs[0]
    assert (True, False, False, False) in program.backward_variants
    assert all(t.grad is None for t in ours)


def test_a_loss_computes_its_gradients_with_its_value_only_while_they_are_used():
    """The fused kernel computes the gradients at the call; calls whose backward never runs (an
    evaluation with parameters that require grad) turn that off, and a backward turns it on again.
    Either way the values are eager's, and a gradient scaled on the way (``(2 * loss).backward()``)
    arrives scaled."""
    f = jg.compile(lambda x, w: (x * w).sin().sum(), cache=False)
    x = jg.randn(4, dtype=jg.float64)
    w = jg.randn(4, dtype=jg.float64, requires_grad=True)
    we = w.detach().requires_grad_()
    w.grad, we.grad = jg.zeros(4, dtype=jg.float64), jg.zeros(4, dtype=jg.float64)  # one trace, not two
    program = None
    for call in range(6):
        loss = f(x, w)
        program = f.programs[0]
        fused_before = program.speculating
        if call in (0, 4, 5):
            (2.0 * loss).backward()
            (2.0 * (x * we).sin().sum()).backward()
            assert_close(w.grad, we.grad)
        if call == 3:
            assert not fused_before and program.forward is not None  # two calls without a backward
    assert program.speculating and program.fused is not None


def test_a_grad_kept_without_a_copy_is_the_callers_alone():
    """The first gradient of a leaf becomes its .grad as it is (no copy) only when nothing else holds
    it: writing into that .grad changes neither the next call's gradients nor a retained graph's."""
    f = jg.compile(lambda x: (x.sin() * 2.0).sum(), cache=False)
    x = jg.randn(5, dtype=jg.float64, requires_grad=True)
    expected = (2.0 * x.detach().cos()).numpy()
    for _ in range(3):
        f(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
        x.grad.mul_(0.0)
        x.grad = None
    loss = f(x)
    loss.backward(retain_graph=True)
    x.grad.mul_(0.0)
    x.grad = None
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_create_graph_falls_back_to_the_eager_backward():
    f = jg.compile(lambda x, w: (x * w).sin().sum())
    x, w = jg.randn(5, dtype=jg.float64, requires_grad=True), jg.randn(5, dtype=jg.float64, requires_grad=True)
    xe, we = x.detach().requires_grad_(), w.detach().requires_grad_()
    (gx,) = jg.autograd.grad(f(x, w), x, create_graph=True)
    (gxe,) = jg.autograd.grad((xe * we).sin().sum(), xe, create_graph=True)
    assert gx.requires_grad
    assert_close(gx, gxe)
    assert_close(jg.autograd.grad(gx.sum(), w)[0], jg.autograd.grad(gxe.sum(), we)[0])



class _Layer:
    """A weight and a scale the loss reads from outside (a model, say)."""

    def __init__(self) -> None:
        self.weight = jg.tensor([[0.5, -1.0], [2.0, 0.3]], dtype=jg.float64, requires_grad=True)
        self.scale = 2.0


CHANGES = {
    "weight rebound": lambda layer: setattr(layer, "weight", jg.ones(2, 2, dtype=jg.float64, requires_grad=True)),
    "scale set": lambda layer: setattr(layer, "scale", 5.0),
    "nothing": None,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_create_graph_backward_refuses_a_rerun_that_would_read_other_values(change):
    """The eager re-run behind ``create_graph=True`` reads the weight and the scale afresh: set after
    the call, they gave the gradient of another function, and the call's own weight no gradient
    (until 2026-11-28, silently). Eager's graph keeps what the call read; the re-run raises instead."""
    layer = _Layer()
    loss_of = jg.compile(lambda x: ((x @ layer.weight).tanh() * layer.scale).sum(), cache=False)
    x = jg.tensor([[1.0, 0.5], [0.2, -0.3]], dtype=jg.float64, requires_grad=True)
    loss_of(x)
    loss = loss_of(x)
    if CHANGES[change] is not None:
        CHANGES[change](layer)
        with pytest.raises(RuntimeError, match="changed between a call of a compiled function and a backward"):
            jg.autograd.grad(loss, [x], create_graph=True)
        return
    (gx,) = jg.autograd.grad(loss, [x], create_graph=True)
    xe = x.detach().requires_grad_()
    (gxe,) = jg.autograd.grad(((xe @ layer.weight).tanh() * layer.scale).sum(), [xe], create_graph=True)
    assert_close(gx, gxe)

def test_several_outputs_non_tensor_arguments_and_no_grad():
    def f(x, scale, w):
        y = x * w * scale
        return y.sum(), (y.exp(), x + 1.0)
    compiled = jg.compile(f)
    x, w = jg.randn(3, dtype=jg.float64), jg.randn(3, dtype=jg.float64, requires_grad=True)
    we = w.detach().requires_grad_()
    (s, (e, xp)), (se, (ee, xpe)) = compiled(x, 2.0, w), f(x, 2.0, we)
    for a, b in ((s, se), (e, ee), (xp, xpe)):
        assert_close(a, b)
        assert a.requires_grad == b.requires_grad
    (s + e.sum()).backward()
    (se + ee.sum()).backward()
    assert_close(w.grad, we.grad)
    with jg.no_grad():
        out = compiled(x, 2.0, w)
    assert not out[0].requires_grad


def test_an_input_changed_in_place_before_backward_raises_as_eager():
    f = jg.compile(lambda x, w: (x * w).sum())
    x, w = jg.randn(3, dtype=jg.float64), jg.randn(3, dtype=jg.float64, requires_grad=True)
    out = f(x, w)
    with jg.no_grad():
        x.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_an_input_the_backward_does_not_read_may_change_as_in_eager():
    f = jg.compile(lambda x, w: (x + w).sum())
    x, w = jg.randn(3, dtype=jg.float64), jg.randn(3, dtype=jg.float64, requires_grad=True)
    out = f(x, w)
    with jg.no_grad():
        x.mul_(2.0)
    out.backward()
    assert_close(w.grad, jg.ones(3, dtype=jg.float64))


def test_the_same_tensor_twice():
    f = jg.compile(lambda a, b: (a * b).sum())
    x = jg.randn(3, dtype=jg.float64, requires_grad=True)
    xe = x.detach().requires_grad_()
    f(x, x).backward()
    (xe * xe).sum().backward()
    assert_close(x.grad, xe.grad)
    y = jg.randn(3, dtype=jg.float64)
    assert_close(f(x, y), (x * y).sum())


def test_a_compiled_function_inside_another_joins_its_graph():
    inner = jg.compile(lambda x, w: (x * w).tanh())
    outer = jg.compile(lambda x, w: (inner(x, w) * 2.0).sum())
    x, w = jg.randn(3, dtype=jg.float64), jg.randn(3, dtype=jg.float64, requires_grad=True)
    we = w.detach().requires_grad_()
    outer(x, w).backward()
    ((x * we).tanh() * 2.0).sum().backward()
    assert_close(w.grad, we.grad)
    assert not str(outer.programs[0].joint).count("get_attr")


def test_outputs_share_memory_with_arguments_exactly_as_eager_outputs_do():
    """The interpreter backend may return an argument itself (``x * 1.0`` simplified to ``x``): writing
    into that result must not change the argument. A view of the argument (``x.reshape(-1)``) shares
    its memory, as eagerly (tests/compile/test_compile_output_aliases.py has more)."""
    def f(x):
        return x * 1.0, x.reshape(-1), x.reshape(-1)
    compiled = jg.compile(f, cache=False)
    for run in (compiled, f):
        x = jg.randn(3)
        before = x.numpy().copy()
        first, second, third = run(x)
        first.numpy()[:] = 5.0
        np.testing.assert_array_equal(x.numpy(), before)
        second.numpy()[:] = 7.0
        np.testing.assert_array_equal(x.numpy(), 7.0)
        np.testing.assert_array_equal(third.numpy(), 7.0)
        np.testing.assert_array_equal(first.numpy(), 5.0)


def test_named_tuples_in_the_result_keep_their_type():
    """The IR holds plain tuples; ``max(dim)``'s ``(values, indices)`` and a user's named tuple come back
    with their attributes, from a loss (gradients wanted) and from a call under no_grad alike."""
    from collections import namedtuple
    Pair = namedtuple("Pair", "total peak")

    @jg.compile(cache=False)
    def f(x):
        best = (x * 2.0).max(1)
        return best, Pair(x.sum(), best.values.amax())

    x = jg.randn(3, 4, requires_grad=True)
    best, pair = f(x)
    expected = (x * 2.0).max(1)
    assert type(best) is type(expected) and type(pair) is Pair
    assert_close(best.values, expected.values)
    np.testing.assert_array_equal(best.indices.numpy(), expected.indices.numpy())
    pair.total.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4), np.float32))
    with jg.no_grad():
        best, pair = f(x)
    assert type(best) is type(expected) and type(pair) is Pair
    assert_close(pair.peak, expected.values.amax())


def test_a_loss_in_another_dtype_gives_each_leaf_its_own_dtype_and_shape():
    """The fused kernel's gradients reach the leaves without the engine's checks (``gradients_conform``):
    a float32 weight broadcast into a float64 loss still gets a float32 gradient of its own shape."""
    x = jg.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
    w = jg.tensor(np.array([0.5, -1.0, 2.0], dtype=np.float32), requires_grad=True)

    def loss(x, w):
        return ((x * w.double()).tanh() ** 2).sum()
    compiled = jg.compile(loss)
    compiled(x, w).backward()
    got = w.grad
    w.grad = None
    loss(x, w).backward()
    assert got.dtype == w.dtype == jg.float32 and got.shape == w.shape
    assert_close(got, w.grad)


def test_a_loss_returning_a_leaf_it_made_runs_eagerly_and_the_leaf_gets_its_grad():
    """A leaf that requires grad made inside (``x.detach().requires_grad_()``) is a leaf eagerly, whose
    ``.grad`` a backward fills. A compiled loss gave it its own backward node: never filled, silently
    (until 2026-11-28). Such a loss runs eagerly, with a warning."""
    from jitgrad.compile import CompileWarning

    def f(x, w):
        return (x * w).sin().sum(), (w * 2.0).detach().requires_grad_()
    compiled = jg.compile(f, cache=False)
    w, x = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([0.5, 0.3])
    with pytest.warns(CompileWarning, match="a result is a leaf that requires grad made inside"):
        loss, made = compiled(x, w)
    (loss + (made * made).sum()).backward()
    assert made.is_leaf and made.grad.tolist() == [4.0, 8.0]
