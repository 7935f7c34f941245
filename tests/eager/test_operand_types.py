"""What an elementwise op or operator does with an operand that is neither a tensor nor a number, as
PyTorch: arithmetic and ordering raise ``TypeError``; ``==``/``!=`` fall back to Python's identity
comparison. Until 2026-11-28 numpy read ``None`` as NaN, so ``x + None`` was NaN everywhere and
``x < None`` all False, silently."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

OPERANDS = [None, "a", [1, 2], (1, 2), object()]


@pytest.mark.parametrize("operand", OPERANDS, ids=lambda o: type(o).__name__)
def test_arithmetic_and_ordering_with_a_non_number_raise_type_error(operand):
    x = jg.tensor([1.0, 2.0])
    for call in (lambda: x + operand, lambda: x * operand, lambda: x < operand, lambda: jg.maximum(x, operand),
                 lambda: jg.where(x > 1, x, operand), lambda: jg.add(x, operand)):
        with pytest.raises(TypeError):
            call()


@pytest.mark.parametrize("operand", OPERANDS, ids=lambda o: type(o).__name__)
def test_equality_with_a_non_number_is_identity(operand):
    x = jg.tensor([1.0, 2.0])
    assert (x == operand) is False and (x != operand) is True


def test_numbers_of_every_kind_are_still_operands():
    x = jg.tensor([1, 2])
    assert (x + True).tolist() == [2, 3] and (x + np.int8(1)).tolist() == [2, 3]
    assert (x * 0.5).tolist() == [0.5, 1.0] and (x == np.float32(2.0)).tolist() == [False, True]
