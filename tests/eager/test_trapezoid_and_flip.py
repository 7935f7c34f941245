"""``trapezoid``/``trapz``/``cumulative_trapezoid`` and ``Tensor.flip``'s ways of naming dims, against
PyTorch (values, dtypes, errors) and finite differences."""
from __future__ import annotations

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg

RNG = np.random.default_rng(3)
Y = RNG.standard_normal((3, 4))
CALLS = {  # name -> (function name, y, x or None, keyword arguments)
    "default": ("trapezoid", Y, None, {}),
    "ints": ("trapezoid", np.array([[1, 2, 3], [4, 5, 7]]), None, {}),
    "dx": ("trapz", Y, None, {"dx": 0.5, "dim": 0}),
    "x-vector": ("trapezoid", Y, np.array([0.0, 0.5, 2.0, 2.5]), {}),
    "x-broadcast": ("trapezoid", Y, RNG.standard_normal((3, 1)), {"dim": 0}),
    "x-tensor": ("trapezoid", Y, np.cumsum(RNG.random((3, 4)), 1), {}),
    "one-sample": ("trapezoid", Y[:, :1], None, {}),
    "empty": ("trapezoid", Y[:, :0], None, {}),
    "cumulative": ("cumulative_trapezoid", Y, np.array([0.0, 0.5, 2.0, 2.5]), {}),
    "cumulative-ints": ("cumulative_trapezoid", np.array([[1, 2, 3], [4, 5, 7]]), None, {"dx": 2}),
}


@needs_torch
@pytest.mark.parametrize("name", CALLS)
def test_trapezoidal_rules_match_pytorch(name):
    function, y, x, options = CALLS[name]
    ours = getattr(jg, function)(jg.tensor(y), *([] if x is None else [jg.tensor(x)]), **options)
    theirs = getattr(torch, function)(torch.tensor(y), *([] if x is None else [torch.tensor(x)]), **options)
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype).replace("torch", "jitgrad")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_trapezoid_is_exact_for_a_line_and_differentiates_in_y_and_x():
    x = np.array([0.0, 0.3, 1.0, 2.0])
    assert jg.trapezoid(jg.tensor(2 * x + 1), jg.tensor(x)).item() == pytest.approx(2 * 2 + 2)
    y, xs = jg.tensor(Y, requires_grad=True), jg.tensor(np.sort(RNG.random(4)), requires_grad=True)
    assert jg.autograd.gradcheck(lambda a, b: jg.trapezoid(a ** 2, b), (y, xs))
    assert jg.autograd.gradcheck(lambda a, b: jg.cumulative_trapezoid(a, b, dim=1).sin(), (y, xs))


def test_trapezoid_refuses_what_pytorch_refuses():
    with pytest.raises(RuntimeError, match="There must be one `x` value for each sample point"):
        jg.trapezoid(jg.tensor(Y), jg.tensor([0.0, 1.0]))
    with pytest.raises(TypeError, match="either x or dx"):
        jg.trapezoid(jg.tensor(Y), jg.tensor([0.0, 1.0, 2.0, 3.0]), dx=2)
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        jg.trapezoid(jg.tensor(3.0))


def test_flip_takes_its_dims_as_pytorch_spells_them():
    x = jg.tensor(np.arange(24.0).reshape(2, 3, 4))
    both = np.flip(x.numpy(), (0, 2))
    for flipped in (x.flip(0, 2), x.flip((0, -1)), x.flip([2, 0]), jg.flip(x, (0, 2)), jg.flip(x, dims=[0, 2])):
        np.testing.assert_array_equal(flipped.numpy(), both)
    np.testing.assert_array_equal(x.flip(1).numpy(), np.flip(x.numpy(), 1))
    with pytest.raises(TypeError, match="dims once"):
        x.flip()
