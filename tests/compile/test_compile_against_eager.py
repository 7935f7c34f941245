"""Compiled calls against eager at the points where they were found to differ (the third hunt), on
the default CPU generator (llvm_cpu), since the defects were in what it was handed: tiny graphs, one
compile each."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

BACKEND = "llvm_cpu"  # read by conftest.compile_backend


@pytest.mark.parametrize("join", ["cat", "stack"])
def test_join_of_pieces_of_several_dtypes(join):
    # the kernel copied the int64 piece's bits into the float result (4.9e-324 for 1)
    x, y = jg.tensor([[1, 2]]), jg.tensor([[0.5, 1.5]], requires_grad=True)
    step = jg.compile(lambda x, y: getattr(jg, join)([x, y * 2]))
    expected = getattr(jg, join)([x, y * 2]).detach().numpy()
    for _ in range(2):
        got = step(x, y)
        assert got.dtype == jg.float32
        np.testing.assert_array_equal(got.detach().numpy(), expected)


@pytest.mark.parametrize("case", [lambda b, i: b * 2, lambda b, i: b + 3, lambda b, i: jg.maximum(b, i),
                                  lambda b, i: (b * 2).sum()],
                         ids=["bool*2", "bool+3", "maximum(bool,int)", "sum(bool*2)"])
def test_an_integer_result_of_bool_inputs_computes_in_integers(case):
    # the kernel computed in bool, the inputs' dtype: 2 became True, and True * 2 was 1
    b, i = jg.tensor([True, False, True]), jg.tensor([3, -2, 0])
    expected = case(b, i)
    got = jg.compile(case)(b, i)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_sigmoid_far_below_zero_is_the_subnormal_eager_gives():
    # 1 / (1 + exp(-x)) overflowed to 0 below about -88 in float32, where eager (and PyTorch) give a
    # subnormal number: binary_cross_entropy's target gradient log(x) was then -inf instead of -100
    x = jg.tensor([-100.0, -90.0, -10.0, 0.0, 10.0, 100.0])
    np.testing.assert_allclose(jg.compile(jg.sigmoid)(x).numpy(), x.sigmoid().numpy(), rtol=1e-6, atol=0)



def test_var_and_std_with_no_degrees_of_freedom_left_are_nan():
    # the kernel divided by n - correction where eager (numpy's ddof) and PyTorch divide by
    # max(0, n - correction): an empty dimension, or correction 2 of one element, gave -0.0, not NaN
    torch = pytest.importorskip("torch")

    def moments(x):
        return x.var(0), x.std(0, correction=2), x.var(1, correction=0.5)
    step = jg.compile(moments)
    for rows in (np.zeros((0, 3)), np.arange(3.0).reshape(1, 3), np.arange(6.0).reshape(2, 3)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's "degrees of freedom is <= 0"
            expected = [v.numpy() for v in moments(torch.tensor(rows))]
            for got, eager, want in zip(step(jg.tensor(rows)), moments(jg.tensor(rows)), expected):
                np.testing.assert_allclose(eager.numpy(), want, rtol=1e-12)
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_var_with_no_degrees_of_freedom_warns_as_pytorch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.isnan(jg.zeros(1, 3, dtype=jg.float64).std(0).numpy()).all()
    assert [(w.category, str(w.message)) for w in caught] == [
        (UserWarning, "std(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).")]
