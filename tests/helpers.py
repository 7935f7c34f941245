"""What every test folder shares: finite differences, one ``assert_close``, fresh leaves, and a runner
for scripts in a fresh Python process.

The finite differences work on numpy arrays, so that the reference a test compares with never goes
through jitgrad's autograd.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

import jitgrad as jg

ROOT = Path(__file__).resolve().parents[1]
EPS = 1e-6

# (rtol, atol) when a test names no tolerance: what float32 and float64 arithmetic can promise for one op
# or a reordered sum; every other dtype (integers, booleans) compares exactly.
TOLERANCES = {np.dtype(np.float64): (1e-10, 1e-12), np.dtype(np.float32): (1e-5, 1e-6)}


def numerical_gradient(scalar_fn: Callable[[list[np.ndarray]], float], arrays: Sequence[np.ndarray],
                       wrt: Sequence[int], eps: float = EPS) -> list[np.ndarray]:
    """The gradient of ``scalar_fn(arrays)`` with respect to ``arrays[i]`` for each ``i`` in ``wrt``, by
    central differences: (f(a + eps) - f(a - eps)) / 2 eps, one element at a time."""
    arrays = [np.array(a, copy=True) for a in arrays]
    grads = []
    for i in wrt:
        base = arrays[i]
        grad = np.zeros(base.shape, dtype=np.float64)
        for k in range(base.size):
            original = base.flat[k]
            base.flat[k] = original + eps
            plus = float(scalar_fn(arrays))
            base.flat[k] = original - eps
            minus = float(scalar_fn(arrays))
            base.flat[k] = original
            grad.flat[k] = (plus - minus) / (2.0 * eps)
        grads.append(grad)
    return grads


def tolerances(dtype) -> tuple[float, float]:
    """``(rtol, atol)`` for values of ``dtype``: :data:`TOLERANCES`, exact for dtypes not in it."""
    return TOLERANCES.get(np.dtype(dtype), (0.0, 0.0))


def _numpy(value):
    return value.detach().numpy() if isinstance(value, jg.Tensor) else np.asarray(value)


def assert_close(actual, expected, what: str = "", *, rtol: float | None = None, atol: float | None = None,
                 dtype=None, relative_to_largest: bool = False, check_dtype: bool | None = None) -> None:
    """Same shape, same dtype and close values.

    ``actual`` and ``expected`` are tensors, arrays or anything ``np.asarray`` takes; ``None`` for
    ``actual`` stands for a gradient of zeros of ``expected``'s shape; two lists or tuples of outputs
    are compared pair by pair. Tolerances are given both (``rtol=..., atol=...``) or come from a dtype
    (``dtype=``, else ``expected``'s own): see :func:`tolerances`. ``relative_to_largest`` makes the
    absolute tolerance ``rtol * max(1, largest |expected|)``: compiled code may sum in another order,
    so an element's error scales with the largest term rather than with the element itself.
    Dtypes are compared unless ``check_dtype=False``, or tolerances are given and ``check_dtype`` is not:
    a gradient test compares with float64 finite differences whatever its input's dtype.
    """
    if (rtol is None) != (atol is None):
        raise TypeError("assert_close takes both rtol and atol, or neither (then from the dtype)")
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), f"{what}: {len(actual)} outputs != expected {len(expected)}"
        for i, (got, want) in enumerate(zip(actual, expected)):
            assert_close(got, want, f"{what} [{i}]", rtol=rtol, atol=atol, dtype=dtype,
                         relative_to_largest=relative_to_largest, check_dtype=check_dtype)
        return
    e = _numpy(expected)
    a = np.zeros_like(e) if actual is None else _numpy(actual)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
    if check_dtype or (check_dtype is None and rtol is None):
        assert a.dtype == e.dtype, f"{what}: dtype {a.dtype} != expected {e.dtype}"
    if rtol is None:
        rtol, atol = tolerances(e.dtype if dtype is None else dtype)
    if relative_to_largest:
        atol = rtol * max(1.0, float(np.abs(e).max(initial=0.0)))
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


def values_off_kinks(shape=(2, 3), low=-2.0, high=2.0, avoid=(0.0,), seed=0) -> np.ndarray:
    """float64 values in [low, high], at least 0.05 from each point of ``avoid`` (an op's kinks, where
    its gradient and a finite difference part)."""
    rng = np.random.default_rng(seed)
    out = rng.uniform(low, high, size=shape)
    for point in avoid:
        near = np.abs(out - point) < 0.05
        out[near] = point + np.where(out[near] < point, -0.05, 0.05)
    return out


def leaves(arrays, requires_grad: bool = True) -> list[jg.Tensor]:
    """Fresh leaf tensors of numpy arrays; the floating ones require grad (unless ``requires_grad=False``)."""
    return [jg.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in arrays]


def assert_compiled_eager_and_torch_agree(fn: Callable, x_values: np.ndarray, y_values: np.ndarray, torch) -> None:
    """``fn(x, y)``'s value (of jitgrad or torch tensors alike) and the gradients of its ``sum()`` in ``x``
    and ``y``: compiled once (the
    default backend, without the warm-start cache) against eager, and eager against PyTorch (``torch``, the
    module); a compiled graph that fell back to eager would warn, which fails the test."""
    import warnings

    from jitgrad.compile import CompileWarning
    compiled = jg.compile(fn, cache=False)
    results = []
    for call, m in ((compiled, jg), (fn, jg), (fn, torch)):
        x, y = m.tensor(x_values, requires_grad=True), m.tensor(y_values, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            out = call(x, y)
            out.sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy(), y.grad.numpy()])
    for compiled_value, eager_value, torch_value in zip(*results):
        np.testing.assert_allclose(compiled_value, eager_value, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(eager_value, torch_value, rtol=1e-9, atol=1e-12)


def _outputs(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _array(t):
    """A tensor's values; ``force``: PyTorch's gradient of ``sgn`` is a ZeroTensor, refused otherwise."""
    return t.numpy() if isinstance(t, jg.Tensor) else t.numpy(force=True)


def run_in(m, fn: Callable, arrays: Sequence[np.ndarray], differentiable: bool):
    """``fn`` of ``m`` (``jitgrad`` or ``torch``) tensors made from ``arrays``, then a backward of every
    float output times a fixed incoming gradient: the outputs, their dtypes' names and the inputs'
    gradients, as numpy arrays."""
    inputs = [m.tensor(a, requires_grad=differentiable and a.dtype.kind == "f") for a in arrays]
    outs = _outputs(fn(m, *inputs))
    results = [o.detach().numpy() for o in outs]
    dtypes = [str(o.dtype).split(".")[-1] for o in outs]
    grads = []
    if differentiable:
        rng = np.random.default_rng(7)
        total = sum((o * m.tensor(rng.uniform(0.5, 1.5, size=tuple(o.shape)))).sum()
                    for o in outs if o.requires_grad)
        total.backward()
        grads = [None if t.grad is None else _array(t.grad) for t in inputs]
    return results, dtypes, grads


def check_ops_against(torch, fn: Callable, arrays: Sequence[np.ndarray], differentiable: bool = True, *,
                      rtol: float, atol: float, grad_rtol: float) -> None:
    """``fn`` run on jitgrad and on ``torch`` (``run_in``): the same dtypes and shapes, values within
    ``rtol`` (1e-6 for float32: an ulp apart) and ``atol``, gradients within ``grad_rtol`` and ``atol``."""
    ours, our_dtypes, our_grads = run_in(jg, fn, arrays, differentiable)
    theirs, their_dtypes, their_grads = run_in(torch, fn, arrays, differentiable)
    assert our_dtypes == their_dtypes
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol if a.dtype != np.float32 else 1e-6, atol=atol, equal_nan=True)
    for a, b in zip(our_grads, their_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=grad_rtol, atol=atol, equal_nan=True)


def libraries() -> list:
    """The libraries a test of PyTorch's documented behaviour runs on: jitgrad, and torch where it is
    installed (imported on first use: most test files never need it)."""
    if not _LIBRARIES:
        try:
            import torch
        except ImportError:  # comparisons with PyTorch are skipped; written-out expectations still run
            torch = None
        _LIBRARIES.extend([jg] if torch is None else [jg, torch])
    return _LIBRARIES


_LIBRARIES: list = []


def each_library(test: Callable) -> Callable:
    """Runs ``test(lib)`` on jitgrad, and on torch where it is installed, so a test that drifts from
    PyTorch fails."""
    import pytest
    return pytest.mark.parametrize("lib", libraries(), ids=lambda lib: lib.__name__)(test)


def leaf(lib, *values: float):
    """A float64 leaf of ``lib`` (``jitgrad`` or ``torch``) that requires grad."""
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def values(tensor) -> list | None:
    """A tensor's values as (nested) lists, None for None: what tests of both libraries compare."""
    return None if tensor is None else tensor.detach().numpy().tolist()


def run_python(script: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs ``script`` in a fresh Python process, from the repository root (so it imports this checkout's
    jitgrad), with ``env`` added to this process's environment. Fails the test, with the child's stderr,
    if the script fails."""
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, **(env or {})}, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


def last_json_line(done: subprocess.CompletedProcess):
    """What a script run by :func:`run_python` printed last, as JSON: how such scripts report."""
    return json.loads(done.stdout.strip().splitlines()[-1])
