"""linspace, logspace (values against PyTorch), the random factories randint, randperm, normal and their
``*_like`` forms, and the in-place draws ``normal_``/``uniform_``: seeded moments and bounds, repeatable
under ``manual_seed``, ``generator=``, dtypes, normal's gradient in mean and std, PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.random import default_generator



@pytest.mark.parametrize("start, end, steps", [(0, 1, 5), (-3.5, 2.25, 7), (2, -2, 4), (1, 1, 3), (0, 1, 1),
                                               (0, 1, 0), (0.1, 0.7, 10)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_linspace_and_logspace_match_pytorch(start, end, steps, dtype):
    torch = pytest.importorskip("torch")
    got = jg.linspace(start, end, steps, dtype=getattr(jg, dtype))
    expected = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
    assert got.dtype == getattr(jg, dtype) and tuple(got.shape) == (steps,)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6 if dtype == "float32" else 1e-12)
    if dtype != "int64":
        for base in (10.0, 2.0):
            got = jg.logspace(start, end, steps, base=base, dtype=getattr(jg, dtype))
            expected = torch.logspace(start, end, steps, base=base, dtype=getattr(torch, dtype))
            np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6 if dtype == "float32" else 1e-12)


def test_linspace_defaults_and_errors():
    x = jg.linspace(0, 1, 3, requires_grad=True)
    assert x.dtype == jg.get_default_dtype() and x.requires_grad and x.is_leaf
    assert jg.linspace(0, 9, 4)[-1].item() == 9.0   # the end is exact
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        jg.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="'steps' must be int"):
        jg.linspace(0, 1, 2.5)


def test_randint_bounds_moments_and_dtype():
    jg.manual_seed(0)
    x = jg.randint(-3, 7, (20_000,))
    assert x.dtype == jg.int64 and tuple(x.shape) == (20_000,)
    values = x.numpy()
    assert values.min() == -3 and values.max() == 6
    counts = np.bincount(values + 3, minlength=10)
    assert np.all(np.abs(counts / 20_000 - 0.1) < 0.01)   # each value ~ 1/10 (sd of a frequency ~0.002)
    assert jg.randint(5, (2, 3)).numpy().max() < 5 and jg.randint(5, size=(4,)).numpy().min() >= 0
    f = jg.randint(0, 4, (3,), dtype=jg.float32, requires_grad=True)
    assert f.dtype == jg.float32 and f.requires_grad


def test_randint_errors_as_pytorch():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        jg.randint(5, 5, (2,))
    state = default_generator.get_state().numpy().copy()
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require"):
        jg.randint(0, 3, (2,), requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require"):
        jg.randperm(3, requires_grad=True)
    np.testing.assert_array_equal(default_generator.get_state().numpy(), state)  # refused before drawing
    with pytest.raises(TypeError, match="randint"):
        jg.randint(3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        jg.randint(3, (-1,))


def test_randperm_is_a_permutation_and_uniform():
    jg.manual_seed(1)
    p = jg.randperm(10)
    assert p.dtype == jg.int64 and sorted(p.tolist()) == list(range(10))
    firsts = np.bincount([jg.randperm(4)[0].item() for _ in range(1000)], minlength=4)
    assert np.all(np.abs(firsts / 1000 - 0.25) < 0.05)   # seeded; the sd of a frequency is 0.014
    assert jg.randperm(0).shape == (0,) and jg.randperm(3, dtype=jg.float32).dtype == jg.float32
    with pytest.raises(RuntimeError, match="negative dimension"):
        jg.randperm(-1)


def test_randperm_costs_n_elements_of_the_stream_like_the_data_loader():
    from jitgrad.utils.data.sampler import permutation
    jg.manual_seed(2)
    p = jg.randperm(6).tolist()
    assert default_generator.offset == 6
    jg.manual_seed(2)
    assert permutation(6, default_generator) == p


def test_normal_numbers_moments_and_errors():
    jg.manual_seed(3)
    x = jg.normal(2.0, 3.0, (50_000,))
    assert x.dtype == jg.get_default_dtype() and not x.requires_grad
    assert abs(x.mean().item() - 2.0) < 0.05 and abs(x.std().item() - 3.0) < 0.05
    jg.manual_seed(3)
    np.testing.assert_allclose(x.numpy(), (jg.randn(50_000) * 3.0 + 2.0).numpy())
    assert jg.normal(0.0, 1.0, size=(2,), dtype=jg.float64, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        jg.normal(0.0, -1, (2,))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        jg.normal(jg.zeros(2), -jg.ones(2))
    with pytest.raises(RuntimeError, match="must match|broadcast"):
        jg.normal(jg.zeros(2), jg.ones(3))


def test_normal_with_tensors_is_differentiable_in_mean_and_std():
    mean = jg.tensor([[0.0], [10.0]], dtype=jg.float64, requires_grad=True)
    std = jg.tensor([1.0, 2.0, 0.5], dtype=jg.float64, requires_grad=True)
    jg.manual_seed(4)
    out = jg.normal(mean, std)
    assert tuple(out.shape) == (2, 3) and out.dtype == jg.float64
    jg.manual_seed(4)
    eps = jg.randn(2, 3, dtype=jg.float64)
    np.testing.assert_allclose(out.detach().numpy(), (mean.detach() + std.detach() * eps).numpy())
    weights = jg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=jg.float64)
    gm, gs = jg.autograd.grad((out * weights).sum(), (mean, std))
    np.testing.assert_allclose(gm.numpy(), weights.numpy().sum(1, keepdims=True))
    np.testing.assert_allclose(gs.numpy(), (weights * eps).numpy().sum(0))   # d out / d std = eps, as PyTorch's
    assert jg.normal(mean, 2.0).shape == (2, 1) and jg.normal(1.0, std).shape == (3,)


def test_manual_seed_and_generator_make_draws_repeatable():
    def draws(**kw):
        return [jg.randint(0, 100, (5,), **kw), jg.randperm(5, **kw), jg.normal(0.0, 1.0, (3,), **kw),
                jg.rand(2, **kw), jg.randn(2, **kw), jg.randint_like(jg.zeros(3), 9, **kw),
                jg.rand_like(jg.zeros(2), **kw), jg.randn_like(jg.zeros(2), **kw),
                jg.empty(4).normal_(**kw), jg.empty(4).uniform_(-1, 1, **kw)]
    jg.manual_seed(5)
    first = draws()
    jg.manual_seed(5)
    again = draws()
    own = draws(generator=jg.Generator().manual_seed(5))   # PyTorch's spelling
    for a, b, c in zip(first, again, own):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), c.numpy())   # the same stream, drawn from another generator


def test_like_factories_take_shape_dtype_device_and_requires_grad():
    x = jg.zeros(2, 3, dtype=jg.float64)
    for made in (jg.zeros_like(x), jg.ones_like(x), jg.full_like(x, 2.0), jg.empty_like(x), jg.rand_like(x),
                 jg.randn_like(x), jg.randint_like(x, 4)):
        assert made.shape == (2, 3) and made.dtype == jg.float64 and made.device == x.device
    for make in (jg.zeros_like, jg.ones_like, jg.empty_like, jg.rand_like, jg.randn_like):
        made = make(x, dtype=jg.float32, device="cpu", requires_grad=True)
        assert made.dtype == jg.float32 and made.requires_grad
    ints = jg.randint_like(jg.zeros(1000, dtype=jg.int32), 2, 5)
    assert ints.dtype == jg.int32 and ints.numpy().min() == 2 and ints.numpy().max() == 4
    with pytest.raises(TypeError, match="randint_like"):
        jg.randint_like(x)


def test_normal_and_uniform_in_place_on_a_parameter_under_no_grad():
    w = jg.zeros(200, 50, requires_grad=True)
    with jg.no_grad():
        assert w.normal_(1.0, 0.5) is w
    assert w.requires_grad and w.is_leaf and w._version == 1
    assert abs(w.mean().item() - 1.0) < 0.02 and abs(w.std().item() - 0.5) < 0.02
    with jg.no_grad():
        w.uniform_(-2.0, 3.0)
    values = w.detach().numpy()
    assert values.min() >= -2.0 and values.max() < 3.0 and abs(values.mean() - 0.5) < 0.05
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.normal_()
    with pytest.raises(RuntimeError, match="uniform_ expects to return a \\[from, to\\) range"):
        jg.zeros(2).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        jg.zeros(2).normal_(0, -1)
    with pytest.raises(NotImplementedError, match="normal_"):
        jg.zeros(2, dtype=jg.int64).normal_()
    assert jg.ones(3).fill_(2.5).tolist() == [2.5] * 3 and jg.ones(2).zero_().tolist() == [0.0, 0.0]


def test_in_place_draws_are_rands_numbers_in_the_tensors_dtype():
    jg.manual_seed(6)
    a = jg.empty(3, dtype=jg.float64).uniform_(1.0, 3.0)
    b = jg.empty(3, dtype=jg.float32).normal_()
    jg.manual_seed(6)
    np.testing.assert_array_equal(a.numpy(), (jg.rand(3, dtype=jg.float64) * 2.0 + 1.0).numpy())
    np.testing.assert_array_equal(b.numpy(), jg.randn(3).numpy())
    assert b.dtype == jg.float32


def test_nn_init_draws_through_the_in_place_methods():
    w = jg.nn.Parameter(jg.empty(4, 3))
    jg.manual_seed(7)
    jg.nn.init.normal_(w, 0.5, 2.0)
    jg.manual_seed(7)
    np.testing.assert_array_equal(w.detach().numpy(), jg.empty(4, 3).normal_(0.5, 2.0).numpy())
