"""The CUDA statements of the maths intrinsics (``backends/numba_cuda/statements``): the host line each
writes, run as the generated host function would run it, gives numpy's values. The context is a stand-in
with the ``OpContext`` contract's names (``context.py``): input and output variables, attributes, the
stream variable and ``library``, which here names the kernel module as the generated module imports it."""
from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
from numba import cuda

STATEMENTS = "jitgrad.backends.numba_cuda.statements"


class Context(SimpleNamespace):
    """``ctx.self``, ``ctx.out``, ``ctx.attrs``, ``ctx.stream`` and ``ctx.library`` as the backend's
    OpContext gives them; ``imported`` records the modules the statement asked for."""

    def __init__(self, inputs: dict, attrs: dict) -> None:
        super().__init__(**inputs, inputs=inputs, out="out", attrs=attrs, stream="stream", imported={})

    def library(self, module: str, function: str) -> str:
        name = module.replace(".", "_")
        self.imported[name] = importlib.import_module(f"jitgrad.backends.numba_cuda.{module}")
        return f"{name}.{function}"


def _run(module: str, intrinsic: str, arrays: dict, out, attrs: dict, **params):
    """Runs the statement's lines with device copies of ``arrays`` bound to their names; returns the
    variable ``out`` afterwards (the filled array, or what the statement bound)."""
    ctx = Context({name: name for name in arrays}, attrs)
    lines = importlib.import_module(f"{STATEMENTS}.{module}").STATEMENTS[intrinsic](ctx, **params)
    namespace = {name: cuda.to_device(value) for name, value in arrays.items()}
    namespace.update(ctx.imported, out=out, stream=0)
    exec("\n".join([lines] if isinstance(lines, str) else lines), namespace)
    return namespace["out"]


def _random(*shape):
    return np.random.default_rng(len(shape)).standard_normal(shape)


@pytest.mark.parametrize("intrinsic, a, b", [("dot", _random(5), _random(5)), ("gemv", _random(3, 5), _random(5)),
                                              ("gemm", _random(3, 5), _random(5, 2)),
                                              ("batched_gemm", _random(2, 1, 3, 5), _random(2, 5, 2))])
def test_products(intrinsic, a, b):
    expected = np.matmul(a, b)
    out = _run("linalg", intrinsic, {"self": a, "other": b}, cuda.device_array(expected.shape or (1,)), {})
    np.testing.assert_allclose(out.copy_to_host(), np.reshape(expected, out.shape), rtol=1e-12)


@pytest.mark.parametrize("intrinsic", ["softmax", "log_softmax"])
def test_softmax(intrinsic):
    x = _random(3, 4)
    out = _run("activations", intrinsic, {"self": x}, cuda.device_array(x.shape), {"dim": 0})
    e = np.exp(x - x.max(0))
    expected = e / e.sum(0)
    np.testing.assert_allclose(out.copy_to_host(), expected if intrinsic == "softmax" else np.log(expected))


def test_argmax_fills_the_planned_output():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    out = _run("reductions", "argmin", {"self": x}, cuda.device_array((2,), np.int64), {"dim": 1, "keepdim": False})
    assert out.copy_to_host().tolist() == [0, 1]


@pytest.mark.parametrize("keepdim", [False, True])
def test_max_dim_binds_the_values_and_indices(keepdim):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    values, indices = _run("reductions", "argmax", {"self": x}, None, {"dim": (1,), "keepdim": keepdim},
                           values=True)
    assert values.copy_to_host().tolist() == x.max(1, keepdims=keepdim).tolist()
    assert indices.copy_to_host().tolist() == x.argmax(1, keepdims=keepdim).tolist()


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_nll_loss_and_backward(reduction):
    log_probs, target = _random(4, 3), np.array([2, 0, 1, 2])
    n = len(target)
    loss = _run("losses", "nll_loss", {"self": log_probs, "target": target},
                cuda.device_array((n,) if reduction == "none" else (1,)), {"reduction": reduction})
    picked = -log_probs[np.arange(n), target]
    np.testing.assert_allclose(loss.copy_to_host(), picked if reduction == "none" else [picked.mean()])
    grad = np.ones(n if reduction == "none" else 1)
    gradient = _run("losses", "nll_loss_backward", {"grad": grad, "target": target}, cuda.device_array((n, 3)),
                    {"reduction": reduction, "shape": (n, 3)})
    expected = np.zeros((n, 3))
    expected[np.arange(n), target] = -1.0 / (n if reduction == "mean" else 1)
    np.testing.assert_allclose(gradient.copy_to_host(), expected)
