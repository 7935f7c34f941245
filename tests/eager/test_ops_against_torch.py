"""Ops at the points where they were found to differ from PyTorch 2.13 (the third hunt): dtype promotion
with Python numbers and mixed tensors, edge values of pow's gradient, and ops joining pieces of several
dtypes. Each case runs in both libraries and compares the values, the dtype, the shape and the gradients
with respect to every floating input (for a random incoming gradient)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def run(module, case, arrays):
    """``case(module, *tensors)`` and the gradients of its output with respect to its float inputs."""
    tensors = [module.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = case(module, *tensors)
    inputs = [t for t in tensors if t.requires_grad]
    if not out.requires_grad:
        return out, []
    seed = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(str(out.dtype).split(".")[-1])
    return out, module.autograd.grad([out], inputs, [module.tensor(seed)], allow_unused=True)


def check_against_torch(case, *arrays, rtol: float = 1e-6) -> None:
    expected, expected_grads = run(torch, case, arrays)
    got, got_grads = run(jg, case, arrays)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=rtol)
    assert len(got_grads) == len(expected_grads)
    for g, e in zip(got_grads, expected_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=rtol)


F32 = np.array([-2.5, -1.0, -0.0, 0.0, 1.5, 3.0], np.float32)
I64 = np.array([-3, -1, 0, 1, 2, 7])


@pytest.mark.parametrize("low,high", [(0.5, 1.5), (0.5, None), (None, 1.5), (0, 1)])
def test_clamp_of_an_integer_tensor_promotes_with_its_limits(low, high):
    # was an int64 result [0 1 1] for clamp(tensor([0, 1, 2]), 0.5, 1.5), PyTorch's is float32
    check_against_torch(lambda m, x: m.clamp(x, low, high), I64)


def test_clamp_of_a_float_tensor_keeps_its_dtype():
    check_against_torch(lambda m, x: m.clamp(x, -1, 2.0), F32.astype(np.float64))


@pytest.mark.parametrize("exponent", [np.array([1, 2, -3, 4, -2, -6], np.float32), np.array([0.0] * 6, np.float32)])
def test_pow_gradient_in_the_exponent_at_a_zero_base(exponent):
    # d/dy x**y at x = 0 is 0 for y >= 0 (PyTorch's convention), x**y log(0) (an infinity) for y < 0: was 0
    check_against_torch(lambda m, x, y: m.pow(x, y), F32, exponent)
    check_against_torch(lambda m, y: m.pow(m.tensor([0.0, -0.0, 0.0, -0.0, 0.0, 2.0]), y), exponent)


@pytest.mark.parametrize("join", ["cat", "stack"])
@pytest.mark.parametrize("other", [I64.reshape(2, 3), F32.astype(np.float64).reshape(2, 3)])
def test_joining_pieces_of_several_dtypes_promotes_as_pytorch(join, other):
    # int64 with float32 gave float64 (numpy's promotion); PyTorch's is float32
    check_against_torch(lambda m, x, y: getattr(m, join)([x * 2, y]), F32.reshape(2, 3), other)



@pytest.mark.parametrize("case", [lambda m, x: x * 1e5, lambda m, x: x / 1e5, lambda m, x: 70000 * x,
                                  lambda m, x: 1e5 / x, lambda m, x: x + 1e-8],
                         ids=["x*1e5", "x/1e5", "70000*x", "1e5/x", "x+1e-8"])
def test_float16_with_a_python_number_computes_at_full_precision(case):
    # numpy casts the number to float16 first: 1e-3 * 1e5 was inf (PyTorch: 100.06), 2 / 1e5 was 0
    # (within float16's rounding: PyTorch's 1e5 / x multiplies by x's float16 reciprocal)
    check_against_torch(case, np.array([1e-3, 2.0, 300.0], np.float16), rtol=2e-3)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_of_two_tensors_are_maximum_and_minimum(name):
    # the tensor was taken for dim: "Boolean value of Tensor with more than one value is ambiguous"
    check_against_torch(lambda m, x, y: getattr(m, name)(x, y), F32, F32[::-1].copy())
    check_against_torch(lambda m, x, y: getattr(x, name)(y), F32, F32[::-1].copy())


INDEXED = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("index", [
    lambda m: [[0, 1], [1, 2]],               # a list of lists is a tuple of indices (was one 3-d index)
    lambda m: [m.tensor([0, 1]), m.tensor([1, 2])],
    lambda m: [1, slice(None)],
    lambda m: [],                             # selects nothing (was an IndexError: float64)
    lambda m: [True, False, True],
], ids=["list-of-lists", "list-of-tensors", "list-with-slice", "empty-list", "list-of-bools"])
def test_a_list_index_reads_as_pytorch_reads_it(index):
    check_against_torch(lambda m, x: x[index(m)] * 2, INDEXED)


def test_a_uint8_index_tensor_is_a_mask():
    # numpy took the values 1, 0, 1 as row numbers: rows [1, 0, 1] instead of rows [0, 2]
    with pytest.warns(UserWarning, match="uint8"):
        check_against_torch(lambda m, x: x[m.tensor([1, 0, 1], dtype=m.uint8)] * 2, INDEXED)


def test_mT_of_a_vector_is_pytorch_error():
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        jg.ones(3).mT


def test_and_or_invert_of_bool_tensors_are_logical():
    for case in (lambda m, x: (x > 0) & (x < 2), lambda m, x: (x > 0) | True, lambda m, x: ~(x > 0)):
        check_against_torch(case, F32)


@pytest.mark.parametrize("case", [lambda x: ~x, lambda x: x | x, lambda x: x & 1],
                         ids=["invert", "or", "and"])
def test_bitwise_operators_of_integer_tensors_are_pytorchs(case):
    # they were the logical ops (~tensor([1, 0]) gave [False, True], PyTorch's bitwise_not [-2, -1]),
    # then refused; since 2026-11-28 they are ops/bitwise.py's
    assert case(jg.tensor([1, 0])).tolist() == case(torch.tensor([1, 0])).tolist()


@pytest.mark.parametrize("bounds", [(0.5, 3.7, 1), (0, 5, 1.5), (0.9, 5, 2.9), (-0.5, 3, 1), (5, 0, -1.5)])
def test_arange_of_an_integer_dtype_truncates_its_bounds_and_step_first(bounds):
    # numpy stepped in floats and cast: (0, 5, 1.5) gave [0, 1, 2, 3], PyTorch [0, 1, 2, 3, 4]
    assert jg.arange(*bounds, dtype=jg.int64).tolist() == torch.arange(*bounds, dtype=torch.int64).tolist()


def test_arange_of_an_integer_dtype_with_a_step_below_one_is_refused():
    with pytest.raises(RuntimeError, match="step must be nonzero"):   # it gave [0, 0, 0, 0, 0]
        jg.arange(0, 2.5, 0.5, dtype=jg.int64)


@pytest.mark.parametrize("case", [lambda m, x: x.cumsum(0), lambda m, x: x.var(), lambda m, x: x.std(0)],
                         ids=["cumsum", "var", "std"])
def test_float16_running_sums_and_variances_accumulate_in_float32(case):
    # in float16 a running sum stalls (of 0.1s at 256, PyTorch: 300), and var of 0..99 was inf
    values = np.arange(3000, dtype=np.float16) % 100
    got, expected = case(jg, jg.tensor(values)), case(torch, torch.tensor(values))
    assert str(got.dtype) == "jitgrad.float16"
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=2e-3)


@pytest.mark.parametrize("case", [lambda m, x: m.nn.functional.gelu(x),
                                  lambda m, x: m.nn.functional.gelu(x, approximate="tanh"),
                                  lambda m, x: m.nn.functional.layer_norm(x.reshape(6, 10), (10,)),
                                  lambda m, x: m.nn.functional.group_norm(x.reshape(3, 4, 5), 2)],
                         ids=["gelu", "gelu tanh", "layer_norm", "group_norm"])
def test_float16_composites_compute_in_float32_and_round_once(case):
    # each numpy step rounded to float16: gelu at -3.5 was 5 % off (1 + erf cancels), layer_norm lost
    # about 8 bits; PyTorch's kernels compute float16 in float32
    values = np.linspace(-6, 6, 60).astype(np.float16)
    got, expected = case(jg, jg.tensor(values)), case(torch, torch.tensor(values))
    assert str(got.dtype) == "jitgrad.float16"
    np.testing.assert_allclose(got.numpy().astype(np.float64), expected.numpy().astype(np.float64),
                               rtol=1e-3, atol=1e-6)


def test_all_and_any_of_uint8_are_uint8():
    """PyTorch documents uint8 as the one dtype whose ``all``/``any`` is not bool; until 2026-11-28
    jitgrad's was a bool, so ``u.all(0) + 255`` was an int64 256 where PyTorch's is a uint8 0."""
    u8 = np.array([[3, 0, 2], [1, 5, 0]], np.uint8)
    check_against_torch(lambda m, u: u.all(0) + 255, u8)
    check_against_torch(lambda m, u: m.any(u, 1) + u.all(), u8)
    check_against_torch(lambda m, u: u.to(m.int8).any(), u8)


def test_floor_division_and_remainder_of_two_bools_raise_as_pytorch():
    """Until 2026-11-28 ``a // b`` of bools was numpy's int8 where the op's dtype rule says bool (each
    compile of it refused); PyTorch does not implement it."""
    a, b = jg.tensor([True, False]), jg.tensor([True, True])
    for divide in (lambda: a // b, lambda: a % True, lambda: jg.div(a, b, rounding_mode="trunc")):
        with pytest.raises(NotImplementedError, match=r"of two bools \(bool\[2\] and bool\[2?\]\)"):
            divide()
    assert (a // 1).tolist() == [1, 0] and (a.long() % b).tolist() == [0, 0]


def test_norm_and_round_of_float16_compute_in_float32():
    """Until 2026-11-28 both computed in float16: the norm of [650.0] squared it to inf, and
    ``round(65000.0, decimals=1)`` scaled it to inf; PyTorch computes both in float32."""
    f16 = np.array([6.5, -1.1, 650.0, 0.01], np.float16)
    # p=3's gradient is compared no further: PyTorch's is NaN at 650 (computed in float16)
    check_against_torch(lambda m, x: m.stack([x.norm(), x.detach().norm(p=3)]), f16, rtol=1e-3)
    check_against_torch(lambda m, x: (x * 100).round(decimals=1), f16)


def test_fills_refuse_a_number_out_of_an_integer_dtypes_range():
    """Until 2026-11-28 300 (or 300.5) filled int8 with 44 and NaN with 0 (numpy's casts); PyTorch raises."""
    x = jg.tensor(np.array([1, -5, 100], np.int8))
    fills = [("masked_fill", lambda: x.masked_fill(x > 0, 300)),
             ("masked_fill", lambda: x.index_fill(0, x[:1].long(), -129)),
             ("fill_", lambda: x.clone().fill_(float("nan"))), ("full_like", lambda: jg.full_like(x, 300.5)),
             ("full", lambda: jg.full((2,), 127.5, dtype=jg.int8))]
    for name, fill in fills:
        with pytest.raises(OverflowError, match=rf"{name}.*: the value .* is out of bounds for int8"):
            fill()
    assert x.masked_fill(x > 0, -128).tolist() == [-128, -5, -128] and x.clone().fill_(2.7).tolist() == [2, 2, 2]
