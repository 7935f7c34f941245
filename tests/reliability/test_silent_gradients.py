"""Issue 12's silently wrong eager results, each as found, against PyTorch where it is installed.

Each case once gave a wrong gradient (or a wrong value) without any error. The expected behaviour
is PyTorch's: the same error (type and cause) or the same gradient, NaN and infinities included.
"""
from __future__ import annotations

import math
import warnings
from contextlib import nullcontext

import numpy as np
import pytest

import jitgrad as jg

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

from plain_python_kernels import plain_python_kernels

NAN, INF = math.nan, math.inf
MODIFIED = "modified by an inplace operation"


def _gradient(lib, fn, values):
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's and PyTorch's warnings at these points are not the subject
        fn(lib, x).backward()
    return np.asarray(x.grad.tolist(), dtype=np.float64)


def _outcome(lib, fn):
    """``fn(lib)``'s gradient, or the error it raised (its type and first words)."""
    try:
        return fn(lib)
    except RuntimeError as error:
        return ("RuntimeError", str(error).split(".")[0])


# ---- aliases share one version counter -------------------------------------------------------------------
def _detached_result_zeroed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.detach().zero_()
    y.sum().backward()
    return x.grad.tolist()


def _detached_input_scaled(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    x.detach().mul_(10)
    y.backward()
    return x.grad.tolist()


def _data_scaled(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp().sum()
    y.backward(retain_graph=True)
    x.grad = None
    z = (x * x).sum()
    x.data.mul_(10)
    z.backward()
    return x.grad.tolist()


@pytest.mark.parametrize("case", [_detached_result_zeroed, _detached_input_scaled],
                         ids=["detach-of-result-zeroed", "detach-of-input-scaled"])
def test_writing_through_detach_is_seen_by_the_graph(case):
    with pytest.raises(RuntimeError, match=MODIFIED):
        case(jg)
    if torch is not None:
        with pytest.raises(RuntimeError, match=MODIFIED):
            case(torch)


def test_writing_through_data_is_seen_by_the_graph_too():
    """Issue 12 asks every alias of the memory to share the counter, ``.data`` included; PyTorch lets
    ``.data`` writes through unnoticed (and computes with the new values), which is the silent case."""
    with pytest.raises(RuntimeError, match=MODIFIED):
        _data_scaled(jg)


def test_an_update_through_data_after_backward_is_still_allowed():
    w = jg.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(2):
        (w * w).sum().backward()
        w.data -= 0.1 * w.grad
        w.grad = None
    np.testing.assert_allclose(w.detach().numpy(), [0.64, 1.28], rtol=1e-6)


def _shared_through_numpy(lib, share):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    share(lib, x).mul_(10)
    y.backward()
    return x.grad.tolist()


SHARED_THROUGH_NUMPY = [
    ("from-numpy-of-detach-numpy", lambda lib, x: lib.from_numpy(x.detach().numpy())),
    ("from-numpy-of-a-slice", lambda lib, x: lib.from_numpy(x.detach().numpy()[1:])),
]


@pytest.mark.parametrize("share", [c[1] for c in SHARED_THROUGH_NUMPY], ids=[c[0] for c in SHARED_THROUGH_NUMPY])
def test_writing_through_memory_shared_by_numpy_is_seen_by_the_graph(share):
    """Memory that went out through ``numpy()`` and came back through ``from_numpy`` keeps its
    counter. PyTorch gives each ``from_numpy`` a counter of its own and computes with the new values
    (the silent case), so there is nothing of it to compare with."""
    with pytest.raises(RuntimeError, match=MODIFIED):
        _shared_through_numpy(jg, share)


def test_two_tensors_from_one_array_share_its_counter():
    a = np.array([1.0, 2.0, 3.0])
    first, second = jg.from_numpy(a), jg.from_numpy(a[::2])
    x = jg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * first).sum()
    second.add_(1.0)
    assert first._version == second._version == 1
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()
    unrelated = jg.from_numpy(np.array([1.0, 2.0, 3.0]))
    assert unrelated._version == 0


# ---- view never copies --------------------------------------------------------------------------------------
def test_view_of_a_non_contiguous_tensor_raises_and_points_to_reshape():
    x = jg.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match=r"view size is not compatible.*Use \.reshape\(\.\.\.\) instead"):
        x.T.view(-1)
    if torch is not None:
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            torch.arange(6.0).reshape(2, 3).T.view(-1)
    y = x.view(3, 2)
    y.add_(1.0)  # a real view: the write reaches x
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert x.T.reshape(-1).tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]


# ---- gradients at edge points ---------------------------------------------------------------------------------
EDGE_POINTS = [
    ("clamp-at-nan", lambda lib, x: x.clamp(0.0, 1.0).sum(), [NAN, 0.5, 2.0], [0.0, 1.0, 0.0]),
    ("max-over-nan", lambda lib, x: x.max(), [1.0, NAN, 3.0], [0.0, 1.0, 0.0]),
    ("min-over-nan", lambda lib, x: x.min(), [1.0, NAN, 3.0], [0.0, 1.0, 0.0]),
    ("amax-over-nan", lambda lib, x: x.amax(0), [1.0, NAN, 3.0], [NAN, NAN, NAN]),
    ("max-ties", lambda lib, x: x.max(), [3.0, 1.0, 3.0], [0.5, 0.0, 0.5]),
    ("zero-to-the-x", lambda lib, x: (0.0 ** x).sum(), [-1.0, 0.0, 1.0], [-INF, 0.0, 0.0]),
    ("negative-base-to-the-x", lambda lib, x: ((-2.0) ** x).sum(), [2.0], [NAN]),
    ("std-of-equal-values", lambda lib, x: x.std(), [2.0, 2.0, 2.0], [0.0, 0.0, 0.0]),
    ("std-of-expanded-rows", lambda lib, x: (x * 2.0).expand(2, 4).std(dim=1).sum(), [[0.3]], [[0.0]]),
    ("var-of-one-value", lambda lib, x: x[:1].var(), [1.0, 2.0], [NAN, 0.0]),
    ("prod-zero-and-nan", lambda lib, x: x.prod(), [0.0, NAN, 3.0], [NAN, 0.0, NAN]),
    ("prod-zero-and-inf", lambda lib, x: x.prod(), [0.0, INF, 3.0], [INF, 0.0, NAN]),
    ("prod-nan-without-zero", lambda lib, x: x.prod(), [NAN, 2.0, 3.0], [NAN, NAN, NAN]),
    ("prod-two-zeros-and-inf", lambda lib, x: x.prod(), [0.0, 0.0, INF], [0.0, 0.0, 0.0]),
    ("prod-rows-nan-beside-a-zero", lambda lib, x: x.prod(1).sum(), [[0.0, 2.0], [NAN, 3.0]], [[2.0, 0.0], [3.0, NAN]]),
]


@pytest.mark.parametrize("fn,values,expected", [case[1:] for case in EDGE_POINTS], ids=[c[0] for c in EDGE_POINTS])
def test_gradients_at_edge_points_are_pytorchs(fn, values, expected):
    ours = _gradient(jg, fn, values)
    np.testing.assert_array_equal(ours, np.asarray(expected))
    if torch is not None:
        np.testing.assert_array_equal(ours, _gradient(torch, fn, values))


@pytest.mark.parametrize("backend", ["interpreter", "numba_cpu"])
def test_compiled_gradients_at_edge_points_are_eagers(backend, monkeypatch):
    """The numba backend's generated code runs as plain Python here: the lowerings of max, clamp and
    pow must keep NaN and infinities as numpy does."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", backend)
    with plain_python_kernels() if backend == "numba_cpu" else nullcontext(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, fn, values, _ in EDGE_POINTS:
            compiled = jg.compile(lambda x, fn=fn: fn(jg, x), cache=False, fullgraph=True)
            x = jg.tensor(values, dtype=jg.float64, requires_grad=True)
            loss = compiled(x)
            loss.backward()
            expected = _gradient(jg, fn, values)
            np.testing.assert_array_equal(x.grad.numpy(), expected, err_msg=name)
            np.testing.assert_allclose(loss.item(), fn(jg, jg.tensor(values, dtype=jg.float64)).item(),
                                       rtol=1e-12, atol=1e-12, err_msg=name)  # summation order differs


@pytest.mark.parametrize("backend", ["eager", "interpreter", "numba_cpu"])
def test_equal_values_have_a_zero_std_gradient_whatever_the_rounding(backend, monkeypatch):
    """The std of 39 copies of 0.1 comes out 1.4e-17 in numpy and 5.6e-17 in a numba loop, not 0: a
    mask on std == 0 would give the rounding's arbitrary gradient (PyTorch gives 0.026 here, from its
    own rounding). Equal values are told by max == min, exactly, in every mode."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", backend)
    f = (lambda x: x.std()) if backend == "eager" else jg.compile(lambda x: x.std(), cache=False, fullgraph=True)
    with plain_python_kernels() if backend == "numba_cpu" else nullcontext():
        x = jg.tensor([0.1] * 39, dtype=jg.float64, requires_grad=True)
        f(x).backward()
    assert x.grad.tolist() == [0.0] * 39


@pytest.mark.parametrize("op", ["//", "%"])
def test_integer_division_by_zero_raises(op):
    def divide(lib):
        a, b = lib.tensor([5, 3]), lib.tensor([0, 1])
        return (a // b if op == "//" else a % b).tolist()
    assert _outcome(jg, divide) == ("RuntimeError", "ZeroDivisionError")
    if torch is not None:
        assert _outcome(torch, divide) == ("RuntimeError", "ZeroDivisionError")
    assert (jg.tensor([5.0]) // jg.tensor([0.0])).item() == INF  # floats divide by zero as IEEE says


def test_integers_to_negative_powers_are_pytorchs():
    """From a tensor exponent, 1 and -1 keep their powers' values and every other base gives 0; a
    negative Python number as the exponent of an integer tensor is refused."""
    def power(lib):
        return (lib.tensor([[2], [1], [-1], [0]]) ** lib.tensor([-1, -2, -3, 2])).tolist()
    assert _outcome(jg, power) == [[0, 0, 0, 4], [1, 1, 1, 1], [-1, 1, -1, 1], [0, 0, 0, 0]]
    assert (2 ** jg.tensor([-1, 1])).tolist() == [0, 2]
    assert _outcome(jg, lambda lib: (lib.tensor([2]) ** -1).tolist()) == (
        "RuntimeError", "pow(int64[1], -1): Integers to negative integer powers are not allowed")
    if torch is not None:
        assert _outcome(torch, power) == _outcome(jg, power)
        assert (2 ** torch.tensor([-1, 1])).tolist() == [0, 2]
        assert _outcome(torch, lambda lib: (lib.tensor([2]) ** -1).tolist())[0] == "RuntimeError"


@pytest.mark.parametrize("backend", ["interpreter", "numba_cpu"])
def test_compiled_integers_to_negative_powers_are_eagers(backend, monkeypatch):
    """numba's own integer power gives the smallest int64 for ``0 ** -1``, silently."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", backend)
    base, exponent = jg.tensor([[2], [1], [-1], [0]]), jg.tensor([-1, -2, -3, 2])
    power = jg.compile(lambda a, b: a ** b, cache=False, fullgraph=True)
    with plain_python_kernels() if backend == "numba_cpu" else nullcontext():
        assert power(base, exponent).tolist() == (base ** exponent).tolist()


# ---- a second backward ----------------------------------------------------------------------------------------
SECOND_BACKWARD = [
    ("times-a-number", lambda x: (x * 2).sum()),       # PyTorch saves the 2 (a wrapped tensor)
    ("exp", lambda x: x.exp().sum()),
    ("plus-a-number", lambda x: (x + 1).sum()),        # nothing saved: PyTorch accumulates again
    ("sum", lambda x: x.sum()),
]


@pytest.mark.parametrize("fn", [c[1] for c in SECOND_BACKWARD], ids=[c[0] for c in SECOND_BACKWARD])
def test_a_second_backward_fails_exactly_where_pytorchs_does(fn):
    def twice(lib):
        x = lib.ones(3, requires_grad=True)
        y = fn(x)
        y.backward()
        y.backward()
        return x.grad.tolist()
    ours = _outcome(jg, twice)
    if torch is not None:
        assert ours == _outcome(torch, twice)
    saves = fn(jg.ones(1, requires_grad=True)).grad_fn.next_functions[0][0].name() in ("MulBackward0", "ExpBackward0")
    assert (ours[0] == "RuntimeError" and ours[1].startswith("Trying to backward through the graph a second "
                                                               "time")) == saves


# ---- inference tensors ----------------------------------------------------------------------------------------
INFERENCE_MISUSE = [
    ("requires-grad", lambda lib, t, w: t.requires_grad_(), "Setting requires_grad=True on inference tensor"),
    ("saved-for-backward", lambda lib, t, w: (t * w).sum().backward(), "Inference tensors cannot be saved"),
    ("in-place", lambda lib, t, w: t.add_(1.0), "Inplace update to inference tensor outside InferenceMode"),
    ("setitem", lambda lib, t, w: t.__setitem__(0, 5.0), "Inplace update to inference tensor outside"),
    ("view-in-place", lambda lib, t, w: t[:2].mul_(2.0), "Inplace update to inference tensor outside"),
]


@pytest.mark.parametrize("misuse,message", [c[1:] for c in INFERENCE_MISUSE], ids=[c[0] for c in INFERENCE_MISUSE])
def test_an_inference_tensor_is_refused_where_pytorch_refuses_it(misuse, message):
    for lib in (jg, torch) if torch is not None else (jg,):
        with lib.inference_mode():
            t = lib.ones(3) * 2.0
        w = lib.ones(3, requires_grad=True)
        assert t.is_inference() and t[:1].is_inference() and not (t * 1.0).is_inference()
        with pytest.raises(RuntimeError, match=message):
            misuse(lib, t, w)
        assert w.grad is None
        if lib is jg:  # refused before anything is written (PyTorch may have written by then)
            assert t.tolist() == [2.0, 2.0, 2.0]
            assert (t + 1.0).tolist() == [3.0, 3.0, 3.0]  # reading it is fine
            with lib.inference_mode():
                t.add_(1.0)  # and so is changing it inside inference mode
            assert t.tolist() == [3.0, 3.0, 3.0]
