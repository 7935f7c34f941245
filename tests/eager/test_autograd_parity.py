"""The eager autograd core against PyTorch's documented behaviour: hooks' results, ``autograd.grad``'s
arguments, custom Functions and the error messages users search for. Each test runs without torch
(the expected behaviour is written out), and where torch is installed the same program runs on it too,
so a test that drifts from PyTorch fails. Sizes are tiny and nothing here compiles a kernel."""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest

import jitgrad as jg

from helpers import each_library, leaf, values

try:
    import torch
except ImportError:  # the comparisons with PyTorch are skipped, the written-out expectations still run
    torch = None


class TestNodeHookResults:
    """A node's pre- and post-hooks may return replacements, checked as PyTorch checks them: before
    2026-11-28 a short tuple from a pre-hook made every gradient None, and numbers went into the
    formulas, silently."""

    @each_library
    @pytest.mark.parametrize("kind", ["pre", "post"])
    @pytest.mark.parametrize("returned, error, message", [
        (lambda grads: list(grads), TypeError, "expected tuple, but hook returned 'list'"),
        (lambda grads: 3, TypeError, "expected tuple, but hook returned 'int'"),
        (lambda grads: (), RuntimeError, r"hook '<lambda>' has returned an incorrect number of values \(got 0, "
                                         r"but expected \d\)"),
        (lambda grads: (3,) * len(grads), TypeError, "expected Variable, but hook returned 'int'"),
        (lambda grads: (grads[0][:1],) + grads[1:], RuntimeError, "hook '<lambda>' has changed the size of value"),
    ], ids=["list", "int", "empty", "numbers", "shape"])
    def test_a_wrong_result_is_an_error(self, lib, kind, returned, error, message):
        x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
        y = x * w
        if kind == "pre":
            y.grad_fn.register_prehook(lambda grads: returned(grads))
        else:
            y.grad_fn.register_hook(lambda grads, _: returned(grads))
        with pytest.raises(error, match=message):
            y.sum().backward()

    @each_library
    def test_a_post_hook_cannot_give_a_gradient_where_there_was_none(self, lib):
        x = leaf(lib, 1.0, 2.0)
        y = x * 2  # the number's slot has no gradient
        y.grad_fn.register_hook(lambda grads, _: (grads[0], grads[0]))
        with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
            y.sum().backward()

    @each_library
    def test_none_entries_drop_gradients_and_tensors_replace_them(self, lib):
        x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
        y = x * w
        y.grad_fn.register_prehook(lambda grads: (grads[0] * 10,))
        y.grad_fn.register_hook(lambda grads, _: (None, grads[1] + 1))
        y.sum().backward()
        assert x.grad is None and values(w.grad) == [11.0, 21.0]


@each_library
def test_hooks_on_outputs_of_one_node_run_in_the_order_they_were_registered(lib):
    x = leaf(lib, 1.0, 2.0, 3.0, 4.0)
    first, second = x.split(2)
    order = []
    second.register_hook(lambda grad: order.append("second"))
    first.register_hook(lambda grad: order.append("first"))
    second.register_hook(lambda grad: order.append("second again"))
    (first * 2 + second * 3).sum().backward()
    assert order == ["second", "second again", "first"]
    assert values(x.grad) == [2.0, 2.0, 3.0, 3.0]

@each_library
def test_a_tensor_hook_returning_a_non_tensor_gets_pytorchs_error(lib):
    x = leaf(lib, 1.0, 2.0)
    y = x * 2
    y.register_hook(lambda grad: [grad])
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'list'"):
        y.sum().backward()


@each_library
def test_a_multi_grad_hook_gets_a_list(lib):
    a, b = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
    calls = []
    lib.autograd.graph.register_multi_grad_hook((a, b), calls.append)
    (a * 2).sum().backward()
    assert len(calls) == 1 and type(calls[0]) is list
    assert values(calls[0][0]) == [2.0, 2.0] and calls[0][1] is None


def function_class(lib: Any, forward: Callable, backward: Callable, **more: Callable) -> type:
    """A custom Function of ``lib`` made of the given static methods."""
    methods = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    methods.update({name: staticmethod(method) for name, method in more.items()})
    return type("Scale", (lib.autograd.Function,), methods)


class TestCustomFunctions:
    @each_library
    def test_setup_context_style_forward_takes_no_ctx(self, lib):
        seen = []

        def setup_context(ctx, inputs, output):
            seen.append((len(inputs), lib.is_grad_enabled(), output.requires_grad))
            ctx.scale = inputs[1]
            ctx.save_for_backward(inputs[0])

        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.scale * x, None

        scale = function_class(lib, lambda x, k: x * x * k / 2, backward, setup_context=setup_context)
        x = leaf(lib, 1.0, 2.0)
        y = scale.apply(x, 3.0)
        y.sum().backward()
        assert seen == [(2, False, False)] and y.grad_fn.name() == "ScaleBackward"
        assert values(x.grad) == [3.0, 6.0]

    @each_library
    def test_a_non_tensor_output_gets_a_none_gradient(self, lib):
        grads = []

        def backward(ctx, grad, grad_of_number):
            grads.append(grad_of_number)
            return grad * 2

        pair = function_class(lib, lambda ctx, x: (x * 2, 3), backward)
        x = leaf(lib, 1.0, 2.0)
        y, number = pair.apply(x)
        y.sum().backward()
        assert number == 3 and grads == [None] and values(x.grad) == [2.0, 2.0]

    @each_library
    def test_mark_dirty_bumps_the_version_and_must_return_the_tensor(self, lib):
        def double_in_place(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        def double_copy(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        h = leaf(lib, 1.0, 2.0) * 1
        out = function_class(lib, double_in_place, lambda ctx, grad: grad * 2).apply(h)
        assert out is h and h._version == 2  # the op's bump and mark_dirty's
        with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward method were "
                                               "not returned as output"):
            function_class(lib, double_copy, lambda ctx, grad: grad * 2).apply(leaf(lib, 1.0) * 1)

    @each_library
    @pytest.mark.parametrize("case", ["save a number", "return a number", "leaf marked dirty"])
    def test_misuse_gets_pytorchs_error(self, lib, case):
        def forward(ctx, x):
            if case == "save a number":
                ctx.save_for_backward(x, 3)
            if case == "leaf marked dirty":
                ctx.mark_dirty(x)
                return x
            return x * 2

        function = function_class(lib, forward, lambda ctx, grad: 3.0 if case == "return a number" else grad)
        error, message = {
            "save a number": (TypeError, "save_for_backward can only save variables, but argument 1 is of type int"),
            "return a number": (RuntimeError, re.escape("expected Variable or None (got float)")),
            "leaf marked dirty": (RuntimeError, "a leaf Variable that requires grad has been used in an in-place "
                                                "operation."),
        }[case]
        with pytest.raises(error, match=message):
            function.apply(leaf(lib, 1.0, 2.0)).sum().backward()


class TestGradArguments:
    def test_is_grads_batched_gives_one_row_per_grad_output_row(self):
        """jitgrad only: PyTorch's vmap costs 0.6 s to warm up, and its rows are these by definition."""
        lib = jg
        x = leaf(lib, 1.0, 2.0)
        y = x.sin() * x
        rows = lib.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]], dtype=lib.float64)
        (batched,) = lib.autograd.grad(y, x, rows, is_grads_batched=True, create_graph=True)
        expected = [lib.autograd.grad(y, x, row, retain_graph=True)[0] for row in rows]
        assert np.array_equal(batched.detach().numpy(), np.stack([values(g) for g in expected]))
        batched.sum().backward()  # the rows stay differentiable under create_graph
        assert x.grad is not None
        with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first dimension"):
            lib.autograd.grad(x * 2, x, lib.ones(2, dtype=lib.float64), is_grads_batched=True)

    @each_library
    def test_materialize_grads_refuses_allow_unused_false(self, lib):
        x, unused = leaf(lib, 1.0), leaf(lib, 2.0)
        with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                                             "materialize_grads=True, but got: allow_unused=False."):
            lib.autograd.grad(x.sum(), [x, unused], allow_unused=False, materialize_grads=True)

    @each_library
    def test_empty_inputs_get_pytorchs_messages(self, lib):
        x = leaf(lib, 1.0)
        with pytest.raises(RuntimeError, match=re.escape("`inputs` argument to `grad()` cannot be empty.")):
            lib.autograd.grad((x * 2).sum(), [])
        with pytest.raises(RuntimeError, match=re.escape("`inputs` argument to `backward()` cannot be empty.")):
            (x * 2).sum().backward(inputs=[])


@each_library
@pytest.mark.parametrize("program, owner", [
    (lambda x: (lambda y: (y, y.add_(1)))(x.exp()), ", which is output 0 of Exp,"),
    (lambda x: (lambda h: (h * h, h.add_(1)))(x * 1), ", which is output 0 of Add,"),
    (lambda x: (x.sin(), x.detach().add_(1)), ""),
])
def test_a_saved_tensor_changed_in_place_names_its_node_as_pytorch_2_13_does(lib, program, owner):
    x = leaf(lib, 1.0, 2.0)
    out, _ = program(x)
    message = (r"one of the variables needed for gradient computation has been modified by an inplace operation: "
               r"\[\S+ \[2\]\]" + re.escape(owner) + r" is at version 1; expected version 0 instead. Hint: "
               r"enable anomaly detection to find the operation that failed to compute its gradient, with \w+"
               + re.escape(".autograd.set_detect_anomaly(True, check_nan=False)."))
    with pytest.raises(RuntimeError, match=message):
        out.sum().backward()


class TestModes:
    @each_library
    def test_an_alias_of_an_inference_tensor_is_one(self, lib):
        with lib.inference_mode():
            made = lib.ones(2, dtype=lib.float64)
        assert made.detach().is_inference() and made.data.is_inference()
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward. Please do not use "
                                               "Tensors created in inference mode"):
            made.detach() * leaf(lib, 1.0, 2.0)
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside"):
            made.detach().requires_grad_()

    @each_library
    def test_a_view_of_a_normal_tensor_made_in_inference_mode_is_normal(self, lib):
        """Until 2026-11-28 every view made in inference mode was an inference tensor."""
        base = lib.ones(2, dtype=lib.float64)
        with lib.inference_mode():
            view = base[0:1]
            view.mul_(3)
        assert not view.is_inference() and values(base) == [3.0, 1.0]
        view.mul_(2)   # its base does not require grad: nothing to track
        assert values(base) == [6.0, 1.0]

    @each_library
    def test_a_view_made_in_inference_mode_cannot_change_in_place_outside_it(self, lib):
        y = leaf(lib, 1.0, 2.0) * 2
        with lib.inference_mode():
            view = y[0:1]
        with pytest.raises(RuntimeError, match="A view was created in inference mode and is being modified inplace "
                                               "in normal mode.*both inside the inference_mode block"):
            view.mul_(2)
        with lib.inference_mode():
            inner = y[0:1]
            assert lib.is_grad_enabled() is False and not inner.is_inference()
            with lib.enable_grad():   # nothing is recorded in inference mode, even with grad mode on
                assert y[0:1].grad_fn is None

    @each_library
    def test_anomaly_mode_checks_a_lone_seed_where_it_arrives(self, lib):
        assert not lib.is_anomaly_enabled()
        x = leaf(lib, 1.0, 4.0)
        with pytest.warns(UserWarning), lib.autograd.detect_anomaly():
            assert lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
            loss = (x * 2).sum()
            with pytest.raises(RuntimeError, match="Function 'SumBackward0' returned nan values in its 0th output."):
                loss.backward(lib.tensor(float("nan"), dtype=lib.float64))


@each_library
def test_assigning_a_grad_of_another_dtype_or_size_gets_pytorchs_error(lib):
    x = leaf(lib, 1.0, 2.0)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype '.*float.*' to a tensor with "
                                           "grad_dtype"):
        x.grad = lib.ones(3, dtype=lib.float32)  # both wrong: the dtype is named first
    with pytest.raises(RuntimeError, match=re.escape("attempting to assign a gradient of size '[3]' to a tensor of "
                                                     "size '[2]'. Please ensure that the gradient and the tensor "
                                                     "are the same size")):
        x.grad = lib.ones(3, dtype=lib.float64)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type list"):
        x.grad = [1.0, 2.0]
    assert x.grad is None


class TestViewsChangedInPlace:
    @each_library
    def test_an_output_of_unbind_cannot_change_in_place(self, lib):
        """Until 2026-11-28 unbind returned a select per index, each a view one could change."""
        first, second = (leaf(lib, 1.0, 2.0, 3.0, 4.0).reshape(2, 2) * 2).unbind(0)
        assert second.grad_fn.name() == "UnbindBackward0"
        with pytest.raises(RuntimeError, match="Output 0 of Unbind\\w* is a view and is being modified inplace"):
            first.mul_(2)

    @each_library
    def test_a_view_changed_in_place_retains_only_its_own_gradient(self, lib):
        x = leaf(lib, 1.0, 2.0)
        y = x * 2
        view = y[:1]
        view.retain_grad()
        view.mul_(3)
        (y.sum() + (view * 5).sum()).backward()
        assert values(view.grad) == [5.0] and values(x.grad) == [36.0, 2.0]

    @each_library
    def test_grad_of_a_view_changed_in_place_and_of_its_base_is_theirs_after_the_change(self, lib):
        """Until 2026-11-28 the view's history was the op's node: its gradient took in what the base's
        users sent through CopySlices ([6.0] here), and the base's missed the view's users ([1.0, 1.0])."""
        y = leaf(lib, 1.0, 2.0) * 2
        view = y[:1]
        view.mul_(3)
        loss = y.sum() + (view * 5).sum()
        by_view, by_base = lib.autograd.grad(loss, [view, y], retain_graph=True)
        assert values(by_view) == [5.0] and values(by_base) == [6.0, 1.0]
        assert lib.autograd.grad(y.sum(), [view], allow_unused=True) == (None,)   # y does not read the view


class TestCustomFunctionsForwardMode:
    @each_library
    def test_jvp_reads_what_save_for_forward_saved(self, lib):
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x * x

        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return 2 * x * tangent

        square = function_class(lib, forward, lambda ctx, grad: grad, jvp=jvp)
        forward_ad = lib.autograd.forward_ad
        with forward_ad.dual_level():
            dual = forward_ad.make_dual(lib.tensor([1.0, 2.0], dtype=lib.float64),
                                        lib.tensor([1.0, 0.5], dtype=lib.float64))
            assert values(forward_ad.unpack_dual(square.apply(dual)).tangent) == [2.0, 2.0]

    @each_library
    def test_vjp_is_backwards_other_name(self, lib):
        methods = {"forward": staticmethod(lambda ctx, x: x * 2), "vjp": staticmethod(lambda ctx, grad: grad * 3)}
        triple = type("Triple", (lib.autograd.Function,), methods)
        x = leaf(lib, 1.0, 2.0)
        triple.apply(x).sum().backward()
        assert values(x.grad) == [3.0, 3.0]
        both = type("Both", (triple,), {"backward": staticmethod(lambda ctx, grad: grad)})
        with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp' for a custom Function is not "
                                               "allowed"):
            both.apply(x).sum().backward()

    @each_library
    def test_forward_mode_misuse_gets_pytorchs_errors(self, lib):
        forward_ad = lib.autograd.forward_ad
        with pytest.raises(RuntimeError, match="Trying to create a dual Tensor for forward AD but no level exists"):
            forward_ad.make_dual(lib.ones(2), lib.ones(2))
        with forward_ad.dual_level():
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
                with forward_ad.dual_level():
                    pass
            with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, but got"):
                forward_ad.make_dual(lib.ones(2), lib.tensor([1, 0]))


class TestSavedTensorHooks:
    @each_library
    def test_a_pack_hook_that_changes_its_input_in_place_is_refused(self, lib):
        def pack(tensor):
            with lib.no_grad():
                tensor.mul_(2)
            return tensor

        x = leaf(lib, 1.0, 2.0)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda packed: packed):
            with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in place"):
                x * x

    @each_library
    def test_an_unpack_hook_must_return_a_tensor(self, lib):
        x = leaf(lib, 1.0, 2.0)
        with lib.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, lambda packed: 3):
            y = x.exp()
        with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor but got "
                                            "result of type int"):
            y.sum().backward()

    @each_library
    def test_disable_saved_tensors_hooks_refuses_them_inside(self, lib):
        graph = lib.autograd.graph

        @graph.disable_saved_tensors_hooks("no hooks in here")
        def guarded():
            with graph.saved_tensors_hooks(lambda tensor: tensor, lambda packed: packed):
                pass

        with pytest.raises(RuntimeError, match="no hooks in here"):
            guarded()
        with graph.disable_saved_tensors_hooks("outer"):
            with graph.disable_saved_tensors_hooks("inner"), pytest.raises(RuntimeError, match="inner"):
                graph.saved_tensors_hooks(lambda tensor: tensor, lambda packed: packed).__enter__()
            with pytest.raises(RuntimeError, match="outer"):
                graph.saved_tensors_hooks(lambda tensor: tensor, lambda packed: packed).__enter__()
        with graph.saved_tensors_hooks(lambda tensor: tensor, lambda packed: packed):
            with pytest.raises(RuntimeError, match="hooks are on"):
                with graph.disable_saved_tensors_hooks("hooks are on"):
                    pass


@each_library
def test_grad_takes_only_inputs_where_pytorch_has_it(lib):
    x = leaf(lib, 1.0, 2.0)
    # outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused
    (grad, unused) = lib.autograd.grad((x * 2).sum(), [x, leaf(lib, 3.0)], None, None, False, True, True)
    assert values(grad) == [2.0, 2.0] and unused is None
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        lib.autograd.grad((x * 2).sum(), x, only_inputs=False)


def test_gradcheck_takes_fast_mode():
    """jitgrad only: PyTorch's gradcheck takes 1.9 s to warm up; its signature has fast_mode."""
    x = leaf(jg, 1.0, 2.0)
    assert jg.autograd.gradcheck(lambda t: t.sin() * t, (x,), fast_mode=True)
    assert jg.autograd.gradgradcheck(lambda t: t.sin() * t, (x,), fast_mode=True)


@each_library
def test_a_node_shows_what_it_saved_under_pytorchs_names(lib):
    x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
    product, power = x * w, x.exp()
    assert values(product.grad_fn._saved_self) == [1.0, 2.0] and values(product.grad_fn._saved_other) == [3.0, 4.0]
    assert {"_saved_self", "_saved_other"} <= set(dir(product.grad_fn))
    assert np.allclose(values(power.grad_fn._saved_result), np.exp([1.0, 2.0]))
    with pytest.raises(AttributeError, match="_saved_nothing"):
        product.grad_fn._saved_nothing
    power.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        power.grad_fn._saved_result


@each_library
def test_gradients_kept_under_create_graph_are_copies_of_their_own(lib):
    x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
    h = x * 1
    h.retain_grad()
    (h + w).sum().backward(create_graph=True)  # one incoming gradient (a broadcast of the seed) for all three
    assert x.grad is not w.grad and h.grad is not x.grad
    with lib.no_grad():
        x.grad.zero_()
        h.grad.mul_(5)
    assert values(x.grad) == [0.0, 0.0] and values(w.grad) == [1.0, 1.0] and values(h.grad) == [5.0, 5.0]
    x.grad = None
    (x ** 3).sum().backward(create_graph=True)
    first = x.grad
    x.grad = None
    first.sum().backward()  # the copy stays differentiable
    assert values(x.grad) == [6.0, 12.0]


@each_library
def test_autograd_functional_misuse_gets_pytorchs_words(lib):
    functional, x = lib.autograd.functional, lib.tensor([1.0, 2.0], dtype=lib.float64)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients. The "
                                           "outputs must be computed in a differentiable manner from the input when "
                                           "running in strict mode"):
        functional.vjp(lambda t: t.detach().sum(), x, strict=True)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns a "
                                           "single Tensor with a single element."):
        functional.vjp(lambda t: t * 2, x)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to jacobian must be either a "
                                        "Tensor or a tuple of Tensors but the given outputs of the user-provided "
                                        "function has type <class 'float'>."):
        functional.jacobian(lambda t: 3.0, x)
