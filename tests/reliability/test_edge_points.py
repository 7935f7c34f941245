"""Every differentiable op at edge points: each sample of ``tests/op_samples.py`` with its first input
element set to 0, NaN, +inf, -inf, 1 or -1 and its second tied to its third. The gradients must be
PyTorch's (compared with PyTorch where it is installed, NaN equal to NaN), and a compiled function
(the numba backend's generated code, run as plain Python) must give eager's.

The samples keep inputs where ops are smooth; these variants put them exactly where they are not,
which is where issue 12 found silently wrong gradients (clamp and max at NaN, std of equal values).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

from op_samples import SAMPLES
from plain_python_kernels import plain_python_kernels

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

EDGES = [0.0, float("nan"), float("inf"), -float("inf"), 1.0, -1.0]
# Ops whose choice among equal elements PyTorch leaves unspecified: topk (and sort without stable=True)
# may return either of two tied elements, so a tie would compare two valid answers. jitgrad's order is
# stable; tests/eager/test_indexing_ops.py checks its ties.
UNSPECIFIED_TIES = {"topk"}
CASES = [s for s in SAMPLES if s.differentiable and s.torch_callable is not None]


def edge_arrays(sample, edge: float) -> list[np.ndarray]:
    arrays = []
    for array in sample.arrays(0):
        array = np.array(array, copy=True)
        if array.dtype.kind == "f" and array.size:
            flat = array.reshape(-1)
            flat[0] = edge
            if flat.size > 2 and sample.op not in UNSPECIFIED_TIES:
                flat[1] = flat[2]
        arrays.append(array)
    return arrays


def gradients(lib, fn, arrays) -> list[np.ndarray | None]:
    tensors = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*tensors)
        out = out[0] if isinstance(out, tuple) else out
        (out * 1.0).sum().backward()
    return [None if t.grad is None else np.asarray(t.grad.tolist(), dtype=np.float64) for t in tensors]


def assert_same(ours, theirs, what: str) -> None:
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None), what
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True, err_msg=what)


@pytest.mark.skipif(torch is None, reason="compares with PyTorch, which is not installed: pip install torch==2.13.0")
@pytest.mark.parametrize("sample", CASES, ids=[s.id for s in CASES])
def test_gradients_at_edge_points_are_pytorchs(sample):
    for edge in EDGES:
        arrays = edge_arrays(sample, edge)
        assert_same(gradients(jg, sample.fn, arrays), gradients(torch, sample.torch_callable, arrays),
                    f"{sample.id} with {edge} first")


def test_compiled_gradients_at_edge_points_are_eagers(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    with plain_python_kernels():
        for sample in CASES:
            for edge in EDGES:
                arrays = edge_arrays(sample, edge)
                compiled = jg.compile(sample.fn, cache=False)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a sample that runs eagerly is compared all the same
                    assert_same(gradients(jg, compiled, arrays), gradients(jg, sample.fn, arrays),
                                f"{sample.id} with {edge} first, compiled")


def empty_arrays(sample) -> list[np.ndarray]:
    """The sample's inputs with their first dimension made 0 (0-d inputs kept)."""
    return [np.zeros((0,) + a.shape[1:], a.dtype) if a.ndim else a for a in sample.arrays(0)]


def outcome(lib, fn, arrays):
    """The result's shape and the gradients' shapes, or the type of the exception raised."""
    tensors = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*tensors)
            out = out[0] if isinstance(out, tuple) else out
            if out.dtype.is_floating_point and any(t.requires_grad for t in tensors):
                (out * 1.0).sum().backward()
    except Exception as error:  # noqa: BLE001 - the exception's type is what is compared
        return type(error).__name__
    return tuple(out.shape), [None if t.grad is None else tuple(t.grad.shape) for t in tensors]


EMPTY_CASES = [s for s in SAMPLES if s.torch_callable is not None]


@pytest.mark.skipif(torch is None, reason="compares with PyTorch, which is not installed: pip install torch==2.13.0")
@pytest.mark.parametrize("sample", EMPTY_CASES, ids=[s.id for s in EMPTY_CASES])
def test_empty_inputs_give_what_pytorch_gives(sample):
    """An empty tensor: the same result and gradient shapes, or the same exception (a max over
    nothing is an IndexError, a softmax over nothing is empty, a logsumexp over nothing -inf)."""
    arrays = empty_arrays(sample)
    assert outcome(jg, sample.fn, arrays) == outcome(torch, sample.torch_callable, arrays)
