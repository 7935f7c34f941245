"""The factories of issue 15 and einsum inside compiled functions: randint, randperm, normal (both forms),
``normal_``/``uniform_`` draw afresh at every call, eager's numbers in eager's order, and leave the
generator where eager would; linspace, logspace and einsum (with its gradient) give eager's values. On
the interpreter backend: the numba and CUDA lowerings of the ops they are made of (``randperm`` among
them) are tested from tests/op_samples.py."""
from __future__ import annotations

import numpy as np
import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.random import default_generator


def draw_everything(x, mean):
    ints = jg.randint(0, 5, (3, 4)).to(jg.float32) + jg.randint_like(x, -2, 2)
    order = jg.randperm(4).to(jg.float32)
    noise = jg.normal(1.0, 2.0, (4,)) + jg.normal(mean, 0.5)
    filled = jg.empty(3, 4).normal_(0.0, 3.0) + jg.zeros(4).uniform_(-1.0, 1.0)
    return x * ints + order + noise + filled + jg.linspace(0, 1, 4) * jg.logspace(0, 1, 4)


def einsum_loss(a, b):
    return (jg.einsum("bij,bjk->bik", a, b) * jg.einsum("bij->bi", a).unsqueeze(-1)).sum()


def run_calls(fn, calls, *args):
    jg.manual_seed(0)
    results = []
    for _ in range(calls):
        results.append(fn(*args))
        results.append(jg.rand(2))   # an eager draw between calls
    return results, default_generator.offset


def arguments():
    rng = np.random.default_rng(0)
    return (jg.tensor(rng.standard_normal((3, 4)).astype(np.float32)),
            jg.tensor(rng.standard_normal((4,)).astype(np.float32)))


def test_draws_follow_eager_and_change_every_call():
    x, mean = arguments()
    expected = run_calls(draw_everything, 2, x, mean)
    f = jg.compile(draw_everything, fullgraph=True, cache=False)
    got = run_calls(f, 2, x, mean)
    assert len(f.programs) == 1
    for a, b in zip(got[0], expected[0]):
        assert_close(a, b)
    assert got[1] == expected[1] == 2 * (12 + 12 + 4 + 4 + 4 + 12 + 4 + 2)
    assert not np.array_equal(got[0][0].numpy(), got[0][2].numpy())   # not frozen at the traced draw


def test_normal_with_tensor_arguments_compiles_with_its_gradient():
    mean = jg.zeros(3, requires_grad=True)
    std = jg.ones(3, requires_grad=True)

    def loss(mean, std):
        return (jg.normal(mean, std) ** 2).sum()
    f = jg.compile(loss, fullgraph=True, cache=False)
    for fn in (loss, f):
        jg.manual_seed(1)
        value = fn(mean, std)
        grads = jg.autograd.grad(value, (mean, std))
        if fn is loss:
            expected = value, grads
    assert_close(value, expected[0])
    for a, b in zip(grads, expected[1]):
        assert_close(a, b)


def test_einsum_compiles_with_its_gradient():
    rng = np.random.default_rng(2)
    a = jg.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    b = jg.tensor(rng.standard_normal((2, 4, 5)), requires_grad=True)
    f = jg.compile(einsum_loss, fullgraph=True, cache=False)
    assert_close(f(a, b), einsum_loss(a, b))
    for got, expected in zip(jg.autograd.grad(f(a, b), (a, b)), jg.autograd.grad(einsum_loss(a, b), (a, b))):
        assert_close(got, expected)
