"""Top-level functions PyTorch users call that jitgrad lacked until 2026-11-28: ``concat``/``concatenate``,
``broadcast_shapes``/``broadcast_tensors``, ``tril_indices``/``triu_indices``, ``bincount``, ``isin``,
``result_type``/``promote_types``/``can_cast``, ``numel``, ``is_floating_point``; each against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="compares with PyTorch: pip install torch==2.13.0")

CALLS = {
    "concat": lambda m: m.concat([m.ones(2), m.zeros(1)]),
    "concatenate": lambda m: m.concatenate([m.ones(1, 2), m.zeros(1, 2)], 1),
    "broadcast_tensors": lambda m: m.stack(m.broadcast_tensors(m.arange(3.0), m.ones(2, 1))),
    "tril_indices": lambda m: m.tril_indices(3, 4, 1),
    "triu_indices": lambda m: m.triu_indices(4, 3, -1),
    "bincount": lambda m: m.bincount(m.tensor([0, 1, 1, 4])),
    "bincount-weights": lambda m: m.bincount(m.tensor([0, 1, 1]), m.tensor([0.5, 1.0, 2.0]), minlength=5),
    "bincount-int-weights": lambda m: m.tensor([2, 2]).bincount(m.tensor([1, 3])),
    "isin": lambda m: m.isin(m.tensor([1, 2, 3]), m.tensor([2, 5])),
    "isin-number-invert": lambda m: m.isin(m.tensor([[1, 2], [3, 2]]), 2, invert=True),
}


@pytest.mark.parametrize("name", CALLS)
def test_matches_pytorch(name):
    ours, theirs = CALLS[name](jg), CALLS[name](torch)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_broadcast_tensors_are_views_whose_gradients_sum_back():
    x = jg.arange(3.0, requires_grad=True)
    a, b = jg.broadcast_tensors(x, jg.ones(2, 1))
    a.sum().backward()
    assert tuple(a.shape) == (2, 3) and x.grad.tolist() == [2.0, 2.0, 2.0]
    assert tuple(jg.broadcast_shapes((2, 1), (3,), 1)) == tuple(torch.broadcast_shapes((2, 1), (3,), 1))


def test_dtype_questions_match_pytorch():
    pairs = [(jg.int32, torch.int32), (jg.float16, torch.float16), (jg.bool, torch.bool), (jg.uint8, torch.uint8),
             (jg.float64, torch.float64), (jg.int64, torch.int64)]
    for a, ta in pairs:
        for b, tb in pairs:
            assert str(jg.promote_types(a, b)).split(".")[1] == str(torch.promote_types(ta, tb)).split(".")[1]
            assert jg.can_cast(a, b) == torch.can_cast(ta, tb)
    assert jg.result_type(jg.tensor([1]), 1.0) == jg.float32 and jg.result_type(jg.tensor([1], dtype=jg.int8), 1) == jg.int8
    assert jg.numel(jg.ones(2, 3)) == 6 and jg.is_floating_point(jg.ones(1)) and not jg.is_floating_point(jg.tensor([1]))


def test_bincount_refuses_what_pytorch_refuses():
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        jg.bincount(jg.tensor([-1, 2]))
