"""The augmented assignments (``//=``, ``%=``, ``&=``, ``|=``, ``^=``, ``<<=``, ``>>=``) write into the tensor,
as PyTorch's: another reference to it sees the new values and its version counter moves. Until
2026-11-28 Python rebound the name to a new tensor instead, silently leaving the original unchanged.
And the shifts, against PyTorch (values, dtypes, out-of-range amounts)."""
from __future__ import annotations

import operator

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg

AUGMENTED = {"//=": (operator.ifloordiv, [7, -7, 9], 2), "%=": (operator.imod, [7, -7, 9], 4),
             "&=": (operator.iand, [5, 6, 12], 4), "|=": (operator.ior, [5, 6, 12], 3),
             "^=": (operator.ixor, [5, 6, 12], 1), "<<=": (operator.ilshift, [5, -6, 1], 2),
             ">>=": (operator.irshift, [5, -6, 1], 1)}


@pytest.mark.parametrize("symbol", AUGMENTED)
def test_augmented_assignment_writes_in_place(symbol):
    update, values, other = AUGMENTED[symbol]
    original = jg.tensor(values)
    held = [original]
    version = original._version
    result = update(held[0], other)
    assert result is original and original._version > version
    expected = {"//=": np.floor_divide, "%=": np.remainder, "&=": np.bitwise_and, "|=": np.bitwise_or,
                "^=": np.bitwise_xor, "<<=": np.left_shift, ">>=": np.right_shift}[symbol](values, other)
    np.testing.assert_array_equal(original.numpy(), expected)


def test_augmented_logical_assignment_of_bools_writes_in_place():
    mask = jg.tensor([True, False, False])
    alias = mask
    alias |= jg.tensor([False, True, False])
    alias &= jg.tensor([True, True, True])
    assert mask.tolist() == [True, True, False]


@needs_torch
@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "int32"])
def test_shifts_match_pytorch(dtype):
    values = np.array([1, -8, 5, 3, 127, -128] if dtype != "uint8" else [1, 8, 5, 3, 127, 200], dtype=dtype)
    amounts = np.array([1, 2, 7, 8, 64, 70], dtype=dtype)
    for ours, theirs in ((lambda a, b: a << b, lambda a, b: a << b), (lambda a, b: a >> b, lambda a, b: a >> b),
                         (lambda a, b: a << 3, lambda a, b: a << 3), (lambda a, b: 2 >> a, lambda a, b: 2 >> a),
                         (lambda a, b: jg.bitwise_left_shift(a, b), lambda a, b: torch.bitwise_left_shift(a, b))):
        mine = ours(jg.tensor(values), jg.tensor(amounts))
        reference = theirs(torch.tensor(values), torch.tensor(amounts))
        assert str(mine.dtype).split(".")[1] == str(reference.dtype).split(".")[1]
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())


def test_shifts_of_floats_are_refused():
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        jg.tensor([1.5]) << 1
