"""The factories of issue 15, the in-place draws and einsum on CUDA tensors: a draw on the device has
the CPU's numbers for the same seed, ``normal_``/``uniform_`` fill a CUDA parameter under ``no_grad``
(as ``nn.init`` does), and ``normal``'s and ``einsum``'s gradients come back on the device."""
import numpy as np
import pytest

import jitgrad as jg


@pytest.mark.parametrize("make", [
    lambda d: jg.linspace(-1, 2, 5, device=d), lambda d: jg.logspace(0, 2, 3, base=2.0, device=d),
    lambda d: jg.randint(-2, 9, (2, 3), device=d), lambda d: jg.randperm(6, device=d),
    lambda d: jg.normal(1.0, 2.0, (3,), device=d), lambda d: jg.randint_like(jg.zeros(4), 5, device=d),
    lambda d: jg.empty_like(jg.zeros(2), device=d), lambda d: jg.zeros(2, 2, device=d).normal_(0.5, 2.0),
    lambda d: jg.zeros(3, device=d).uniform_(-1.0, 1.0),
], ids=["linspace", "logspace", "randint", "randperm", "normal", "randint_like", "empty_like", "normal_",
        "uniform_"])
def test_a_factory_on_cuda_has_the_cpu_numbers(make):
    jg.manual_seed(0)
    cpu = make("cpu")
    jg.manual_seed(0)
    cuda = make("cuda")
    assert cuda.is_cuda and cuda.dtype == cpu.dtype and cuda.shape == cpu.shape
    np.testing.assert_array_equal(cuda.cpu().numpy(), cpu.numpy())


def test_nn_init_fills_a_cuda_parameter_in_place():
    w = jg.nn.Parameter(jg.zeros(4, 3, device="cuda"))
    jg.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    assert w.is_cuda and w.is_leaf and w.requires_grad and w._version == 1
    bound = 1 / 3 ** 0.5
    values = w.detach().cpu().numpy()
    assert np.all(np.abs(values) <= bound) and np.unique(values).size == 12


def test_normal_and_einsum_gradients_on_cuda():
    mean = jg.zeros(3, device="cuda", requires_grad=True)
    std = jg.ones(3, device="cuda", requires_grad=True)
    jg.manual_seed(1)
    out = jg.normal(mean, std)
    gm, gs = jg.autograd.grad(out.sum(), (mean, std))
    assert gm.is_cuda and gs.is_cuda
    np.testing.assert_allclose(gs.cpu().numpy(), out.detach().cpu().numpy())   # d out / d std = eps
    a = jg.ones(2, 3, device="cuda", requires_grad=True)
    b = jg.ones(3, 2, device="cuda", requires_grad=True)
    (ga,) = jg.autograd.grad(jg.einsum("ij,jk->ik", a, b).sum(), (a,))
    assert ga.is_cuda and ga.cpu().tolist() == [[2.0] * 3] * 2


def test_compiled_draws_on_cuda_follow_eager_and_change_every_call():
    """A draw made for a CUDA tensor reaches the device through the ``to_device`` op, so a compiled
    function copies each call's numbers rather than the traced ones (a constant would be refused)."""
    def noisy(x):
        return (x + jg.randn(3, device=x.device) + jg.zeros(3, device=x.device).normal_()
                + jg.randint(0, 5, (3,), device=x.device) + jg.randperm(8, device=x.device)[:3])
    x = jg.zeros(3, device="cuda")
    compiled = jg.compile(noisy, fullgraph=True, cache=False)
    jg.manual_seed(0)
    eager = [noisy(x).cpu().numpy() for _ in range(2)]
    jg.manual_seed(0)
    calls = [compiled(x).cpu().numpy() for _ in range(2)]
    for got, expected in zip(calls, eager):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert not np.array_equal(calls[0], calls[1])
