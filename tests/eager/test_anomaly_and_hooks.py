"""Anomaly mode, saved-tensor hooks and multi-grad hooks."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd.graph import register_multi_grad_hook, save_on_cpu, saved_tensors_hooks


def leaf(*values):
    return jg.tensor(np.array(values, dtype=np.float64), requires_grad=True)


class TestAnomalyMode:
    def test_nan_in_backward_names_the_node_and_the_forward_line(self):
        x = leaf(-1.0, 4.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's own sqrt(-1) warning
            with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"), \
                    jg.autograd.detect_anomaly():
                y = x.sqrt()  # the line the report must name
                with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in "
                                                       r"its 0th output\.") as info, \
                        pytest.warns(UserWarning, match="Traceback of forward call that caused the error"):
                    y.sum().backward()
        notes = "".join(getattr(info.value, "__notes__", []))
        assert "Error detected in SqrtBackward0" in notes and "y = x.sqrt()" in notes

    def test_check_nan_false_lets_nan_through(self):
        x = leaf(-1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with jg.autograd.detect_anomaly(check_nan=False):
                x.sqrt().backward()
        assert np.isnan(x.grad.item())

    def test_error_in_backward_reports_forward_stack(self):
        class Broken(jg.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 1

            @staticmethod
            def backward(ctx, grad):
                raise ValueError("broken backward")

        x = leaf(1.0)
        with jg.autograd.set_detect_anomaly(True):
            y = Broken.apply(x)  # forward line
            with pytest.raises(ValueError, match="broken backward") as info, pytest.warns(UserWarning):
                y.backward()
        assert "y = Broken.apply(x)" in "".join(info.value.__notes__)
        assert not jg.autograd.is_anomaly_enabled()

    def test_nodes_record_their_creation_only_in_anomaly_mode(self):
        x = leaf(1.0)
        assert "traceback_" not in (x * 2).grad_fn.metadata
        with jg.autograd.set_detect_anomaly(True):
            node = (x * 2).grad_fn
        assert any("node = (x * 2).grad_fn" in line for line in node.metadata["traceback_"])

    def test_set_detect_anomaly_as_a_call(self):
        jg.autograd.set_detect_anomaly(True)
        try:
            assert jg.autograd.is_anomaly_enabled()
        finally:
            jg.autograd.set_detect_anomaly(False)
        assert not jg.autograd.is_anomaly_enabled()


class TestSavedTensorHooks:
    def test_pack_and_unpack_see_every_saved_tensor(self):
        packed, unpacked = [], []

        def pack(t):
            packed.append(tuple(t.shape))
            return t.detach().numpy().copy()

        def unpack(array):
            unpacked.append(array.shape)
            return jg.tensor(array)

        x = leaf(1.0, 2.0)
        with saved_tensors_hooks(pack, unpack):
            y = (x.exp() * x).sum()  # exp saves its result; mul saves both inputs
        y.backward()
        assert len(packed) == 3 and len(unpacked) == 3
        v = np.array([1.0, 2.0])
        assert np.allclose(x.grad.numpy(), np.exp(v) * (1 + v))

    def test_double_backward_through_an_unpacked_result(self):
        x = leaf(0.5)
        with saved_tensors_hooks(lambda t: t.detach().numpy(), lambda a: jg.tensor(a)):
            y = x.exp()
        (g,) = jg.autograd.grad(y, x, create_graph=True)
        (gg,) = jg.autograd.grad(g, x)
        assert np.isclose(gg.item(), np.exp(0.5))

    def test_save_on_cpu_changes_nothing(self):
        x = leaf(1.0, 2.0)
        with save_on_cpu():
            (x.sin() * x).sum().backward()
        v = np.array([1.0, 2.0])
        assert np.allclose(x.grad.numpy(), np.cos(v) * v + np.sin(v))


class TestMultiGradHook:
    def test_all_waits_for_every_computed_gradient(self):
        a, b, unused = leaf(1.0), leaf(2.0), leaf(3.0)
        calls = []
        handle = register_multi_grad_hook((a, b, unused), calls.append)
        (a * b * 5).sum().backward()
        assert len(calls) == 1
        ga, gb, gu = calls[0]
        assert ga.item() == 10.0 and gb.item() == 5.0 and gu is None
        handle.remove()
        (a * b).sum().backward()
        assert len(calls) == 1

    def test_any_fires_once_with_the_first(self):
        a, b = leaf(1.0), leaf(2.0)
        calls = []
        register_multi_grad_hook((a, b), calls.append, mode="any")
        (a * b).sum().backward()
        (a * b).sum().backward()
        assert len(calls) == 2 and all(isinstance(c, jg.Tensor) for c in calls)

    def test_matches_pytorch(self):
        torch = pytest.importorskip("torch")
        seen = {}
        for lib in (jg, torch):
            a = lib.tensor([1.0], requires_grad=True)
            b = lib.tensor([2.0], requires_grad=True)
            calls = []
            lib.autograd.graph.register_multi_grad_hook((a, b), lambda grads: calls.append(
                [None if g is None else float(g.detach().numpy()[0]) for g in grads]))
            (a * 3).sum().backward()
            seen[lib.__name__] = calls
        assert seen["jitgrad"] == seen["torch"]

    def test_bad_mode(self):
        with pytest.raises(ValueError, match="Expects mode to be one of"):
            register_multi_grad_hook((leaf(1.0),), print, mode="some")
