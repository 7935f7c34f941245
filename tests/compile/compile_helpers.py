"""Helpers for the compile tests: eager is the reference, at the issue's tolerances."""
from __future__ import annotations

import numpy as np

import jitgrad as jg


def tolerance(dtype) -> float:
    return 1e-5 if np.dtype(dtype) == np.float32 else 1e-10


def assert_close(actual, expected, what: str = "value") -> None:
    a = actual.detach().numpy() if isinstance(actual, jg.Tensor) else np.asarray(actual)
    e = expected.detach().numpy() if isinstance(expected, jg.Tensor) else np.asarray(expected)
    assert a.shape == e.shape and a.dtype == e.dtype, f"{what}: {a.dtype}{a.shape} vs {e.dtype}{e.shape}"
    rtol = tolerance(e.dtype) if e.dtype.kind == "f" else 0.0
    np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * max(1.0, float(np.abs(e).max(initial=0.0))),
                               err_msg=what)


def leaves(tensors, requires_grad=True):
    """Fresh leaf copies of numpy arrays (float ones require grad)."""
    return [jg.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in tensors]


def w1_step(x):
    """The benchmarks' W1 as a training step (backward inside): the compile tests' small real workload."""
    import workloads

    x.grad = None
    loss = workloads.w1_loss(jg)(x)
    loss.backward()
    return loss, (x.grad,)
