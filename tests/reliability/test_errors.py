"""Issue 12's errors that named the wrong cause, against PyTorch's messages where it is installed."""
from __future__ import annotations

import pytest

import jitgrad as jg

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

CASES = [
    ("cat-sizes", lambda lib: lib.cat([lib.ones(2, 3), lib.ones(2, 4)]),
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1"),
    ("cat-sizes-dim-1", lambda lib: lib.cat([lib.ones(2, 3), lib.ones(3, 4)], dim=1),
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1"),
    ("cat-ranks", lambda lib: lib.cat([lib.ones(2, 3), lib.ones(2)]),
     "Tensors must have same number of dimensions: got 2 and 1"),
    ("stack-sizes", lambda lib: lib.stack([lib.ones(2), lib.ones(3), lib.ones(2)]),
     "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1"),
    ("t-of-3d", lambda lib: lib.ones(2, 2, 2).t(), "t() expects a tensor with <= 2 dimensions, but self is 3D"),
]


@pytest.mark.parametrize("make,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_error_names_the_cause_as_pytorch_does(make, message):
    with pytest.raises(RuntimeError) as ours:
        make(jg)
    assert message in str(ours.value)
    if torch is not None:
        with pytest.raises(RuntimeError) as theirs:
            make(torch)
        assert message in str(theirs.value)


def test_t_transposes_a_matrix_and_keeps_a_vector():
    x = jg.arange(6.0).reshape(2, 3)
    assert x.t().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert x.t().detach().numpy().base is not None  # a view, as in PyTorch
    assert jg.arange(3.0).t().tolist() == [0.0, 1.0, 2.0]
    w = jg.ones(2, 3, requires_grad=True)
    (w.t() * jg.arange(6.0).reshape(3, 2)).sum().backward()
    assert w.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
