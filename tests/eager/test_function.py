"""Custom ``jitgrad.autograd.Function``s, compared with the same Functions written for PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from helpers import numerical_gradient


def leaf(values):
    return jg.tensor(np.array(values, dtype=np.float64), requires_grad=True)


def scaled_exp(lib):
    """exp(x * scale), saving its output: the same code for jitgrad and torch."""
    class ScaledExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = (x * scale).exp()
            ctx.save_for_backward(y)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y * ctx.scale, None
    return ScaledExp


def split_sum_product(lib):
    """Two outputs: x + y and x * y."""
    class SumProduct(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x + y, x * y

        @staticmethod
        def backward(ctx, g_sum, g_product):
            x, y = ctx.saved_tensors
            return g_sum + g_product * y, g_sum + g_product * x
    return SumProduct


def test_node_name_needs_input_grad_and_gradient():
    ScaledExp = scaled_exp(jg)
    x = leaf([0.5, -1.0])
    y = ScaledExp.apply(x, 2.0)
    assert y.grad_fn.name() == "ScaledExpBackward" and type(y.grad_fn).__name__ == "ScaledExpBackward"
    assert y.grad_fn.needs_input_grad == (True, False)
    y.sum().backward()
    (expected,) = numerical_gradient(lambda a: np.exp(2 * a[0]).sum(), [x.detach().numpy()], wrt=[0])
    assert np.allclose(x.grad.numpy(), expected, atol=1e-6)


def test_second_order_through_saved_output():
    ScaledExp = scaled_exp(jg)
    x = leaf([0.5, -1.0])
    (g,) = jg.autograd.grad(ScaledExp.apply(x, 2.0).sum(), x, create_graph=True)
    (gg,) = jg.autograd.grad(g.sum(), x)
    assert np.allclose(gg.numpy(), 4 * np.exp(2 * x.detach().numpy()))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    values = [0.3, 1.2, -0.7]
    x, y = leaf(values), leaf(values[::-1])
    s, p = split_sum_product(jg).apply(x, y)
    (s * 2 + p.sin()).sum().backward()
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(values[::-1], dtype=torch.float64, requires_grad=True)
    ts, tp = split_sum_product(torch).apply(tx, ty)
    (ts * 2 + tp.sin()).sum().backward()
    assert np.allclose(x.grad.numpy(), tx.grad.numpy()) and np.allclose(y.grad.numpy(), ty.grad.numpy())
    e = scaled_exp(jg).apply(x, 3.0)
    te = scaled_exp(torch).apply(tx, 3.0)
    assert np.allclose(e.detach().numpy(), te.detach().numpy())


def test_unused_output_gets_zeros_or_none():
    seen = []

    class Two(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2)
            return (g1 * 2 if g2 is None else g1 * 2 + g2 * 3), None

    x = leaf([1.0, 2.0])
    Two.apply(x, True)[0].sum().backward()
    assert np.array_equal(seen[-1].numpy(), [0.0, 0.0])
    Two.apply(x, False)[0].sum().backward()
    assert seen[-1] is None
    assert np.allclose(x.grad.numpy(), 4.0)


def test_mark_non_differentiable():
    class SortedWithIndex(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            order = x.argmax(0) * 1.0
            ctx.mark_non_differentiable(order)
            return x * 1, order

        @staticmethod
        def backward(ctx, grad, _):
            return grad

    x = leaf([1.0, 3.0])
    values, index = SortedWithIndex.apply(x)
    assert values.requires_grad and not index.requires_grad


def test_mark_dirty_rebases_history_and_refuses_leaves():
    class Double(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            data = x.detach().numpy()  # shares x's memory
            data *= 2  # in place, as an in-place kernel would
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = leaf([1.0, 2.0])
    h = x * 1
    out = Double.apply(h)
    assert out is h and h.grad_fn.name() == "DoubleBackward"
    h.sum().backward()
    assert np.allclose(x.grad.numpy(), 2.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        Double.apply(leaf([1.0]))


def test_input_returned_as_is_keeps_its_own_history():
    class Identity(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 5

    x = leaf([1.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    y.backward()
    assert x.grad.item() == 5.0


def test_once_differentiable_refuses_double_backward():
    class Square(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @jg.autograd.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = leaf([3.0])
    Square.apply(x).backward()
    assert x.grad.item() == 6.0
    (g,) = jg.autograd.grad(Square.apply(x).exp(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        g.backward()
    (g,) = jg.autograd.grad(Square.apply(x), x, create_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):  # as in PyTorch: never silently 0
        g.backward()


class TestBadBackward:
    def test_wrong_number_of_gradients(self):
        class Bad(jg.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, grad):
                return grad

        with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of "
                                               r"gradients \(expected 2, got 1\)"):
            Bad.apply(leaf([1.0]), leaf([2.0])).backward()

    def test_gradient_for_a_non_tensor(self):
        class Bad(jg.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, grad):
                return grad, grad

        with pytest.raises(RuntimeError, match="position 2, but the corresponding forward input was not a "
                                               "Variable"):
            Bad.apply(leaf([1.0]), 3.0).backward()

    def test_gradient_of_the_wrong_shape(self):
        class Bad(jg.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.sum()

            @staticmethod
            def backward(ctx, grad):
                return jg.ones(5, dtype=jg.float64)

        with pytest.raises(RuntimeError, match=r"BadBackward returned an invalid gradient at index 0 - got "
                                               r"\[5\] but expected shape compatible with \[2\]"):
            Bad.apply(leaf([1.0, 2.0])).backward()

    def test_saved_tensors_are_freed(self):
        ScaledExp = scaled_exp(jg)
        y = ScaledExp.apply(leaf([1.0]), 1.0)
        y.backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()


def test_no_graph_without_grad():
    y = scaled_exp(jg).apply(jg.tensor([1.0]), 1.0)
    assert y.grad_fn is None and not y.requires_grad
    with jg.no_grad():
        assert scaled_exp(jg).apply(leaf([1.0]), 1.0).grad_fn is None


def test_traced_through_by_fx():
    ScaledExp = scaled_exp(jg)

    def loss(x):
        out = ScaledExp.apply(x, 2.0).sum()
        out.backward()
        return out

    x = leaf([0.1, 0.4])
    module = jg.fx.trace(loss, x)
    x.grad = None
    traced = module(x)
    traced_grad = x.grad.numpy().copy()
    x.grad = None
    eager = loss(x)
    assert np.allclose(traced.detach().numpy() if traced.requires_grad else traced.numpy(),
                       eager.detach().numpy())
    assert np.allclose(traced_grad, x.grad.numpy())


def test_forward_mode_uses_the_functions_jvp():
    fwAD = jg.autograd.forward_ad

    class Cube(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

        @staticmethod
        def jvp(ctx, x_t):
            (x,) = ctx.saved_tensors
            return x_t * 3 * x * x

    class NoJvp(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = jg.tensor([1.0, 2.0], dtype=jg.float64)
    with fwAD.dual_level():
        out = Cube.apply(fwAD.make_dual(x, jg.tensor([1.0, 0.5], dtype=jg.float64)))
        assert np.allclose(fwAD.unpack_dual(out).tangent.numpy(), [3.0, 6.0])
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            NoJvp.apply(fwAD.make_dual(x, x))


def _aliasing_functions(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    class Tail(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a[1:]

        @staticmethod
        def backward(ctx, grad):
            return lib.cat([lib.zeros(1), grad * 3])

    return Identity, Tail


def test_outputs_aliasing_memory_are_custom_function_views_as_in_pytorch():
    """An input returned as is shares its version counter (a change through it, under no_grad, is seen
    by the nodes that saved the input); an in-place change to such an output, or use of a view output
    after its base changed, is PyTorch's error instead of a gradient that bypasses the Function's backward."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jg, torch):
        Identity, Tail = _aliasing_functions(lib)
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 1
        y = h * h
        out = Identity.apply(h)
        with pytest.raises(RuntimeError, match="Output 0 of Identity is a view and is being modified inplace. "
                                               "This view was created inside a custom Function"):
            out.mul_(2)
        with lib.no_grad():
            out.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        tail = Tail.apply(h)
        h.mul_(2)
        with pytest.raises(RuntimeError, match="Output 0 of Tail is a view and its base or another view of its "
                                               "base has been modified inplace"):
            (tail * tail).sum().backward()
        results.append((h._version, out._version, out._is_view(), out._base is h))
    assert results[0] == results[1]


def test_mark_dirty_of_a_view_is_refused_rather_than_a_wrong_gradient():
    """PyTorch rebuilds the base's history for a dirty view (its gradient here would be [1, 4, 6]); we
    do not, and the base's gradient came out without the Function ([1, 2, 3]), so we refuse it."""

    class Double(jg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = jg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    with pytest.raises(NotImplementedError, match="mark_dirty.. of an input that is a view"):
        Double.apply(h[1:])
    h = jg.tensor([1.0, 2.0, 3.0])
    assert Double.apply(h[1:]).tolist() == [4.0, 6.0]  # nothing to differentiate: as before
