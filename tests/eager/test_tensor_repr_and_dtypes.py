"""How tensors print (repr, format) and which dtype an expression gives (type promotion, integer
division), against numpy and (where it is installed) PyTorch.

Torch-dependent tests call ``pytest.importorskip("torch")`` themselves, so the rest runs without it.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad
from tensor_api_helpers import both, dtype_name, torch_or_skip


# ---- repr ------------------------------------------------------------------------------------------

REPRS = [
    "M.tensor([1.0, 2.0, 3.0])", "M.tensor(3.5)", "M.tensor(-0.0)", "M.tensor([1, 2, 3])", "M.tensor(7)",
    "M.tensor(True)", "M.tensor([True, False])", "M.tensor([[True], [False]])",
    "M.tensor([[1.5, 2.0], [3.0, 4.0]])", "M.tensor([1.0, 2.0], dtype=M.float64)",
    "M.tensor(2.5, dtype=M.float64)", "M.tensor([1, 2], dtype=M.int32)",
    "M.tensor([1.0, 2.0], requires_grad=True)", "M.tensor(2.0, requires_grad=True)",
    "M.tensor([1.0, 2.0], requires_grad=True) * 2",
    "M.tensor([1.0, 2.0], dtype=M.float64, requires_grad=True) * 2",
    "M.tensor(2.0, requires_grad=True) * 3", "M.tensor([0.1, 2.25, -3.0])", "M.tensor([1e-5, 1.0, 100.0])",
    "M.tensor([1e10, 1.0])", "M.tensor([1.0, 2000.0])", "M.tensor([0.0, 0.001, 10.0])",
    "M.tensor([100000000.0])", "M.tensor([float('nan'), 1.0, float('inf')])",
    "M.tensor([float('inf'), -float('inf')])", "M.tensor([[1, 2], [3, 40]])", "M.tensor([[-5, 0]])",
    "M.tensor([])", "M.zeros(2, 0)", "M.tensor([], dtype=M.int64)", "M.tensor([], dtype=M.float64)",
    "M.arange(12.0).reshape(3, 4)", "M.arange(40.0) * 1.5", "M.arange(2000.0)", "M.arange(1500)",
    "M.ones(40, 40)", "M.ones(3, 400) * 0.5",
    "M.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])",
    "M.tensor([123456.7, 1.0])", "M.full((3,), 123456.5, requires_grad=True) * 2",
    "M.tensor([1.0, 2.0], dtype=M.float16)",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_matches_torch(expr):
    ours, theirs = both(expr)
    assert repr(ours) == repr(theirs).replace("torch.", "jitgrad.")


def test_repr_matches_torch_on_random_tensors():
    """Random shapes, magnitudes, dtypes and special values; line breaks before a ``dtype=``/``grad_fn=``
    suffix depend on the length of the module name, so they are joined before comparing."""
    torch = torch_or_skip()
    rng = np.random.default_rng(0)
    suffix_break = re.compile(r",\s*\n\s*(dtype=|grad_fn=|requires_grad=|size=)")
    join_suffix = lambda text: suffix_break.sub(r", \1", text)  # noqa: E731
    shapes = [(), (1,), (5,), (13,), (3, 4), (2, 3, 4), (7, 7), (1001,), (40, 40), (0,), (0, 3)]
    for trial in range(120):
        shape = shapes[trial % len(shapes)]
        kind = trial % 6
        if kind == 0:
            array = rng.standard_normal(shape).astype(np.float32)
        elif kind == 1:
            array = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 10)
        elif kind == 2:
            array = rng.integers(-1000, 1000, shape)
        elif kind == 3:
            array = rng.random(shape) > 0.5
        elif kind == 4:
            array = np.round(rng.standard_normal(shape) * 100).astype(np.float32)
        else:
            array = rng.standard_normal(shape).astype(np.float32)
            if array.size:
                array.ravel()[rng.integers(0, array.size, 3)] = rng.choice([np.nan, np.inf, -np.inf, 0.0], 3)
        grad = array.dtype.kind == "f" and trial % 2 == 0
        ours, theirs = jitgrad.tensor(array, requires_grad=grad), torch.tensor(array, requires_grad=grad)
        if grad:
            ours, theirs = ours * 1, theirs * 1
        assert join_suffix(repr(ours)) == join_suffix(repr(theirs).replace("torch.", "jitgrad.")), array


def test_repr_without_torch():
    assert repr(jitgrad.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(jitgrad.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(jitgrad.tensor([True, False])) == "tensor([ True, False])"
    assert repr(jitgrad.tensor(2.0, dtype=jitgrad.float64)) == "tensor(2., dtype=jitgrad.float64)"
    assert repr(jitgrad.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(jitgrad.tensor([1.0], requires_grad=True) * 2) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(jitgrad.tensor([], dtype=jitgrad.int64)) == "tensor([], dtype=jitgrad.int64)"
    assert str(jitgrad.tensor([3])) == repr(jitgrad.tensor([3]))


# ---- type promotion --------------------------------------------------------------------------------

PROMOTIONS = [  # (expression, PyTorch's result dtype)
    ("M.tensor([1.0, 2.0]) * 2.5", "float32"), ("2.5 * M.tensor([1.0])", "float32"),
    ("M.tensor([1, 2]) / M.tensor([2, 4])", "float32"), ("M.tensor([1, 2]) / 2", "float32"),
    ("M.tensor([1, 2]) * 2.5", "float32"), ("M.tensor([1, 2]) * 2", "int64"),
    ("M.tensor([1.0]) + M.tensor([1.0], dtype=M.float64)", "float64"),
    ("M.tensor([1.0]) + M.tensor(1.0, dtype=M.float64)", "float32"),
    ("M.tensor([1]) + M.tensor(1.0, dtype=M.float64)", "float64"),
    ("M.tensor([1, 2]) + M.tensor([1.0, 2.0])", "float32"),
    ("M.tensor([1.0], dtype=M.float16) + M.tensor([1])", "float16"),
    ("M.tensor([1.0], dtype=M.float16) + 1.5", "float16"),
    ("M.tensor([1.0], dtype=M.float16) + M.tensor([1.0])", "float32"),
    ("M.tensor([1], dtype=M.int32) + M.tensor(1)", "int32"), ("M.tensor([1], dtype=M.int32) + 5", "int32"),
    ("M.tensor([1], dtype=M.int32) + M.tensor([1])", "int64"),
    ("M.tensor([1], dtype=M.uint8) + M.tensor([1], dtype=M.int8)", "int16"),
    ("M.tensor([True]) + 1", "int64"), ("M.tensor([True]) * 1.5", "float32"),
    ("M.tensor([True]) + M.tensor([1], dtype=M.uint8)", "uint8"),
    ("M.tensor([1.0], dtype=M.float64) * 2.5", "float64"), ("M.tensor([1, 2]) ** 2", "int64"),
    ("M.tensor([4, 2]) - 1.5", "float32"),
]


@pytest.mark.parametrize("expr, expected", PROMOTIONS, ids=[e for e, _ in PROMOTIONS])
def test_type_promotion(expr, expected):
    result = eval(expr, {"M": jitgrad})
    assert dtype_name(result.dtype) == expected
    operands = [eval(part, {"M": jitgrad}) for part in re.split(r" [-+*/]+ ", expr)]
    arrays = [o.numpy().astype(np.float64) if isinstance(o, jitgrad.Tensor) else o for o in operands]
    op = re.search(r" ([-+*/]+) ", expr).group(1)
    expected_values = eval(f"a {op} b", {"a": arrays[0], "b": arrays[1]})
    np.testing.assert_allclose(result.numpy().astype(np.float64), expected_values, rtol=1e-3)


@pytest.mark.parametrize("expr, expected", PROMOTIONS, ids=[e for e, _ in PROMOTIONS])
def test_type_promotion_matches_torch(expr, expected):
    ours, theirs = both(expr)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype) == expected
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.double().numpy(), rtol=1e-3)



def test_zero_dim_tensor_formats_as_its_value():
    t = jitgrad.tensor(2.5)
    assert f"{t:.2f}" == "2.50" and f"{t}" == "2.5"
    assert f"{jitgrad.tensor([1.0, 2.0])}" == repr(jitgrad.tensor([1.0, 2.0]))


def test_floor_divide_remainder_all_any_match_numpy():
    a = np.array([7, -3, 4])
    t = jitgrad.tensor(a)
    assert np.array_equal((t // 2).numpy(), a // 2) and np.array_equal((t % 3).numpy(), a % 3)
    assert np.array_equal((9 // t).numpy(), 9 // a) and np.array_equal((9 % t).numpy(), 9 % a)
    b = jitgrad.tensor([[True, False], [True, True]])
    assert not b.all().item() and b.any().item()
    assert np.array_equal(b.all(1).numpy(), [False, True])
    assert jitgrad.is_inference_mode_enabled() is False
