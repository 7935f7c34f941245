"""``jitgrad.linalg`` where a formula would give a plausible number PyTorch does not: empty reductions
without an identity, singular matrices, options PyTorch documents as ignored. Each case is one that
gave a silently wrong (finite, or differently infinite) result before; tiny sizes, no kernels."""
from __future__ import annotations

import math

import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("ord", [-1, -0.5, -math.inf, math.inf])
@pytest.mark.parametrize("shape, dim", [((2, 0), -1), ((2, 0), None), ((0, 3), (0, 1))])
def test_vector_norm_without_identity_over_an_empty_dimension_raises(ord, shape, dim):
    """A negative ``ord`` summed ``|x|^p`` over nothing (0) and gave ``0 ** (1/p) = inf``."""
    with pytest.raises(RuntimeError, match="cannot compute the"):
        torch.linalg.vector_norm(torch.zeros(shape), ord, dim=dim)
    with pytest.raises(RuntimeError, match=f"cannot compute the {ord:g} norm on .*does not have an identity"):
        jg.linalg.vector_norm(jg.zeros(shape), ord, dim=dim)


def test_vector_norm_over_a_nonempty_dimension_of_an_empty_tensor_is_empty():
    assert tuple(jg.linalg.vector_norm(jg.zeros(0, 3), -1, dim=1).shape) == (0,)
