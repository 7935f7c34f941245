"""Compiled calls against eager at the points where they were found to differ (the third hunt), on
the default CPU generator (llvm_cpu), since the defects were in what it was handed: tiny graphs, one
compile each."""
from __future__ import annotations

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

