"""PyTorch's extra arguments of the arithmetic functions and reductions against PyTorch's: ``alpha=`` of
``add``/``sub`` (function, method, in place), ``rounding_mode=`` of ``div``, tensor limits of ``clamp``,
``where(condition)`` and ``nonzero``, ``dtype=`` of the reductions and softmaxes, and the casting
methods: values, gradients, dtypes and errors; and the composites inside ``jitgrad.compile``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg
from jitgrad.compile import CompileWarning

RNG = np.random.default_rng(11)
A, B = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
B[0, 0] = A[0, 0]  # a tie, for clamp's limits
INTS, DIVISORS = np.array([7, -7, 6, -6, 0, 5]), np.array([2, 2, -2, -2, 3, -3])
SPECIAL = (np.array([np.inf, 1.0, 0.0, -0.5, 1.0, -np.inf, np.nan]), np.array([1.0, 0.0, 0.0, 2.0, 0.1, -3.0, 1.0]))


def _both(fn, *arrays, grad=True):
    """``fn(lib, *tensors)`` in both libraries: the outputs (a tuple) and the float inputs' gradients of
    a weighted sum of the float outputs."""
    results = []
    for lib in (jg, torch):
        inputs = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        out = fn(lib, *inputs)
        outs = out if isinstance(out, tuple) else (out,)
        floats = [o for o in outs if o.dtype.is_floating_point and o.requires_grad]
        if floats:
            sum((o * lib.tensor(np.linspace(-1, 2, o.numel()).reshape(tuple(o.shape)))).sum() for o in floats).backward()
        results.append((outs, [i.grad for i in inputs if i.requires_grad]))
    return results


def _assert_same(fn, *arrays, grad=True):
    (ours, our_grads), (theirs, their_grads) = _both(fn, *arrays, grad=grad)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] and tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), **_tolerance(o))
    for o, t in zip(our_grads, their_grads):
        assert (o is None) == (t is None)
        if o is not None:
            np.testing.assert_allclose(o.numpy(), t.numpy(), **_tolerance(o))


def _tolerance(tensor) -> dict:
    exact = tensor.dtype in (jg.float64, jg.int64, jg.int32, jg.int16, jg.int8, jg.uint8, jg.bool)
    return {"rtol": 1e-12, "atol": 1e-12} if exact else {"rtol": 1e-6, "atol": 1e-6}


ALPHA = {
    "add": lambda lib, x, y: lib.add(x, y, alpha=2.5),
    "sub": lambda lib, x, y: lib.sub(x, y, alpha=-0.5),
    "subtract": lambda lib, x, y: lib.subtract(x, y[0], alpha=3),
    "method-add": lambda lib, x, y: x.add(y, alpha=0),
    "method-sub": lambda lib, x, y: x.sub(y[:, :1], alpha=2),
    "add-number": lambda lib, x, y: x.add(1.5, alpha=2),
    "add_": lambda lib, x, y: (x * 1.0).add_(y, alpha=-2),
    "sub_": lambda lib, x, y: (x * 1.0).sub_(y, alpha=0.25),
}


@needs_torch
@pytest.mark.parametrize("name", ALPHA)
def test_alpha_scales_the_other_operand_as_pytorchs(name):
    _assert_same(ALPHA[name], A, B)


@needs_torch
def test_alpha_of_integers_and_its_errors_are_pytorchs():
    _assert_same(lambda lib, x, y: (lib.add(x, y, alpha=3), lib.sub(x, y, alpha=-2), x.clone().add_(y, alpha=2)),
                 INTS, DIVISORS)
    assert jg.add(jg.tensor(A, requires_grad=True), jg.tensor(B), alpha=2).grad_fn.name() == "AddBackward0"
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating point"):
        jg.add(jg.tensor(INTS), jg.tensor(DIVISORS), alpha=2.0)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating point"):
        jg.tensor(INTS).sub_(1, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        jg.add(jg.tensor(A), jg.tensor(B), alpha=True)


ROUNDING = {
    "trunc": lambda lib, x, y: lib.div(x, y, rounding_mode="trunc"),
    "floor": lambda lib, x, y: lib.divide(x, y, rounding_mode="floor"),
    "method-trunc-broadcast": lambda lib, x, y: (x * 10).div(y[0], rounding_mode="trunc"),
    "floor-number": lambda lib, x, y: x.div(0.3, rounding_mode="floor"),
    "div_-floor": lambda lib, x, y: (x * 1.0).div_(y, rounding_mode="floor"),
    "none": lambda lib, x, y: lib.div(x, y, rounding_mode=None),
}


@needs_torch
@pytest.mark.parametrize("name", ROUNDING)
def test_rounding_mode_rounds_the_quotient_with_a_zero_gradient(name):
    _assert_same(ROUNDING[name], A * 5, B)
    if name != "none":  # infinities, zeros, NaN, and 1 // 0.1 == 9 (floor_divide's, not floor(1 / 0.1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _assert_same(ROUNDING[name], *SPECIAL)


@needs_torch
@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounding_mode_of_integers_stays_integral(mode):
    _assert_same(lambda lib, x, y: (lib.div(x, y, rounding_mode=mode), lib.div(x, -3, rounding_mode=mode),
                                    x.clone().div_(y, rounding_mode=mode), lib.div(x, 2.5, rounding_mode=mode)),
                 INTS, DIVISORS)
    # a narrower integer keeps its dtype (until 2026-11-28 "trunc" gave int64: its correction was a long)
    _assert_same(lambda lib, x, y: (lib.div(x, y, rounding_mode=mode), lib.div(x, -3, rounding_mode=mode)),
                 INTS.astype(np.int8), DIVISORS.astype(np.int16))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        jg.div(jg.tensor(INTS), 0, rounding_mode=mode)
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor'"):
        jg.div(jg.tensor(INTS), 2, rounding_mode="round")


@needs_torch
def test_an_integer_dtype_argument_of_a_sum_is_the_results_dtype():
    """Until 2026-11-28 ``sum``, ``nansum`` and ``cumsum`` with ``dtype=int32`` (or int8...) gave int64 (the
    integer accumulation's), PyTorch's wraps into the dtype asked for."""
    _assert_same(lambda lib, x: (x.sum(dtype=lib.int32), lib.nansum(x, 1, dtype=lib.int8), x.sum(0, dtype=lib.int16),
                                 x.cumsum(1, dtype=lib.int8), lib.cumsum(x, 0, dtype=lib.float64)),
                 np.array([[100, 100, 7], [-3, 90, 2**20]]))


@needs_torch
def test_median_of_integers_keeps_their_dtype():
    """Until 2026-11-28 ``median()`` of integers was a float32: 2**40 + 1 became 2**40."""
    _assert_same(lambda lib, x: (x.median(), x.to(lib.int8).median(), x.nanmedian()),
                 np.array([2**40 + 1, 5, 2**40 + 3]))


CLAMPS = {
    "min": lambda lib, x, low, high: lib.clamp(x, min=low),
    "max": lambda lib, x, low, high: x.clamp(max=high),
    "both": lambda lib, x, low, high: lib.clamp(x, low, high),
    "crossed": lambda lib, x, low, high: lib.clip(x, high, low),   # min > max gives max
    "broadcast": lambda lib, x, low, high: x[0].clamp(low, high[:, :1]),
    "clamp_": lambda lib, x, low, high: (x * 1.0).clamp_(low[0], high),
}


@needs_torch
@pytest.mark.parametrize("name", CLAMPS)
def test_clamp_takes_tensor_limits_as_pytorch(name):
    low = RNG.standard_normal((3, 4)) - 0.5
    low[0, 0] = A[0, 0]
    x = A.copy()
    if name != "crossed":  # PyTorch gives max the gradient of a NaN there; jitgrad gives no limit any
        x[1, 1] = np.nan
    _assert_same(CLAMPS[name], x, low, low + 1.0)


def test_clamp_refuses_a_number_with_a_tensor_and_growing_in_place():
    with pytest.raises(TypeError, match="must both be tensors"):
        jg.clamp(jg.tensor(A), min=0.0, max=jg.tensor(B))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        jg.tensor(A[0]).clamp_(min=jg.tensor(B))


def test_clamp_refuses_an_integer_limit_out_of_an_integer_tensors_range_eagerly_and_compiled():
    """Until 2026-11-28 ``clamp(-2, 3)`` of uint8 gave [3, 0, 1] eagerly (numpy clipped with -2) and [3, 3, 3]
    compiled (the kernel cast -2 to uint8's 254, as PyTorch does): it raises now, as ``x + 200`` of int8 does."""
    x = jg.tensor(np.array([200, 0, 1], dtype=np.uint8))
    for clamp in (lambda x: x.clamp(-2, 3), jg.compile(lambda x: x.clamp(0, 300), cache=False)):
        with pytest.raises(OverflowError, match=r"clamp\(uint8\[3\], (min=-2|max=300)\): the limit is out of bounds"):
            clamp(x)
    assert x.clamp(1, 3).tolist() == [3, 1, 1] and x.clamp(-2.5, 3).tolist() == [3.0, 0.0, 1.0]


@needs_torch
@pytest.mark.parametrize("array", [np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]), np.array([1, 0, 2]), np.array(3.0),
                                   np.array(0.0), np.zeros((2, 0))], ids=["2d", "ints", "0d", "0d-zero", "empty"])
def test_where_of_a_condition_alone_is_nonzero_as_a_tuple(array):
    _assert_same(lambda lib, x: (*lib.where(x > 0), *lib.nonzero(x, as_tuple=True), x.nonzero(), lib.argwhere(x)),
                 array, grad=False)


@needs_torch
@pytest.mark.parametrize("name", ["sum", "mean", "cumsum", "softmax", "log_softmax"])
def test_dtype_casts_the_input_first(name):
    """float32 summed as float64 keeps what a float32 sum rounds away (sum used to cast its float32 result)."""
    x = np.array([[16777216.0, 1.0, 1.0, 1.0], [0.5, 0.25, -0.125, 1.0]], np.float32)  # 2**24 + 3 in float64
    args = (1,) if name in ("cumsum", "softmax", "log_softmax") else ()
    _assert_same(lambda lib, t: (getattr(lib, name)(t, *args, dtype=lib.float64), getattr(t, name)(*args, dtype=lib.float64)), x)
    if name in ("sum", "cumsum"):
        _assert_same(lambda lib, t: getattr(lib, name)(t, 0, dtype=lib.float32), INTS)
    if name == "mean":
        with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Optional dtype must be"):
            jg.tensor(x).mean(dtype=jg.int64)


@needs_torch
@pytest.mark.parametrize("call", [lambda lib, t: t.sum(dtype=lib.int64), lambda lib, t: lib.sum(t, 0, dtype=lib.int16),
                                  lambda lib, t: t.cumsum(0, dtype=lib.int64), lambda lib, t: t.cumprod(0, dtype=lib.int64),
                                  lambda lib, t: t.nansum(dtype=lib.int32)], ids=["sum", "sum-dim", "cumsum", "cumprod",
                                                                                 "nansum"])
def test_an_integer_dtype_of_a_sum_that_requires_grad_is_pytorchs_error(call):
    """PyTorch's autograd has no integer results: it refuses them where jitgrad returned integers that
    silently dropped the gradient. Without grad (no_grad, or an input not requiring it) they are sums."""
    messages = []
    for lib in (jg, torch):
        x = lib.tensor([[1.5, 2.0], [-3.0, 0.0]], requires_grad=True)
        with pytest.raises(RuntimeError, match="Autograd not support dtype: ") as error:
            call(lib, x)
        messages.append(str(error.value).split(" (")[0])
        with lib.no_grad():
            assert call(lib, x).tolist() == call(lib, x.detach()).tolist()
    assert messages[0] == messages[1]
    assert call(jg, jg.tensor([[1.5, 2.0], [-3.0, 0.0]])).tolist() == call(torch, torch.tensor([[1.5, 2.0], [-3.0, 0.0]])).tolist()


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "bool"])
def test_sums_and_products_of_integers_are_int64_as_pytorchs(dtype):
    """Until 2026-11-28 a uint8 tensor's sum and product were numpy's uint64, a dtype jitgrad has not
    (reading its ``dtype`` raised), and a compiled uint8 ``cumsum`` did not compile (its rule said uint64)."""
    values = np.array([[1, 2, 3], [4, 5, 200]]).astype(dtype)
    x = jg.tensor(values)
    for result, expected in ((x.sum(), values.astype(np.int64).sum()), (x.sum(1), values.astype(np.int64).sum(1)),
                             (x.prod(1), values.astype(np.int64).prod(1)), (x.cumsum(1), values.astype(np.int64).cumsum(1)),
                             (x.cumprod(0), values.astype(np.int64).cumprod(0))):
        assert result.dtype == jg.int64
        np.testing.assert_array_equal(result.numpy(), expected)
    if torch is not None:
        theirs = torch.tensor(values)
        assert [str(t.dtype) for t in (theirs.sum(), theirs.prod(1), theirs.cumsum(1))] == ["torch.int64"] * 3


@needs_torch
def test_casting_methods_are_pytorchs():
    values = np.array([1.5, -2.5, 300.7])
    names = ("half", "float", "double", "char", "byte", "short", "int", "long", "bool")
    _assert_same(lambda lib, t: tuple(getattr(t, name)() for name in names), values)
    same = jg.tensor(values)
    assert same.double() is same and same.float() is not same


def test_the_composites_compile_and_match_eager_call_after_call(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")

    def loss(x, y, low, labels):
        return (jg.add(x, y, alpha=2.5) * x.sub(y, alpha=-1) + jg.div(x, y, rounding_mode="floor")
                + x.div(y, rounding_mode="trunc") + jg.clamp(x, low, low + 1.0) + x.cumsum(1, dtype=jg.float64)
                + x.mean(dtype=jg.float64) + jg.div(labels, 3, rounding_mode="trunc")).sum()

    compiled = jg.compile(loss, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(3):  # new values at each call, one program
            args = [jg.tensor(RNG.standard_normal((2, 3)).astype(np.float32), requires_grad=True) for _ in range(3)]
            args.append(jg.tensor(RNG.integers(-9, 9, (2, 3))))
            expected = loss(*args)
            expected.backward()
            grads = [a.grad.numpy().copy() for a in args[:3]]
            for a in args[:3]:
                a.grad = None
            got = compiled(*args)
            got.backward()
            np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-6)
            for a, g in zip(args[:3], grads):
                np.testing.assert_allclose(a.grad.numpy(), g, rtol=1e-6, atol=1e-6)
    assert len(compiled.programs) == 1
