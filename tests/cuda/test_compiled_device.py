"""``@jitgrad.compile`` on CUDA tensors (on the simulator): the backend follows the inputs' device,
CPU and CUDA calls get programs of their own, results and ``.grad``s stay on the device and equal the
CPU's, a step's in-place updates land in the caller's device memory, and ``explain`` shows the kernels
and how they were launched."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from helpers import assert_close


def _loss(x, w):
    return (x @ w).tanh().pow(2).mean()


def _host(t: jg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_cpu_then_cuda_calls_get_their_own_programs():
    f = jg.compile(_loss)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    w_cpu = jg.tensor(w, requires_grad=True)
    loss_cpu = f(jg.tensor(x), w_cpu)
    loss_cpu.backward()
    w_cuda = jg.tensor(w, requires_grad=True, device="cuda")
    loss_cuda = f(jg.tensor(x, device="cuda"), w_cuda)
    loss_cuda.backward()
    assert [p.backend.name for p in f.programs] == ["llvm_cpu+numba_cpu", "numba_cuda"]
    assert any("device was cpu, now cuda:0" in line for line in f.log)
    assert loss_cuda.device == jg.device("cuda:0") and w_cuda.grad.device == jg.device("cuda:0")
    assert_close(_host(loss_cuda), _host(loss_cpu))
    assert_close(_host(w_cuda.grad), _host(w_cpu.grad))


def test_a_step_updates_the_callers_device_memory():
    @jg.compile
    def step(x, w):
        loss = (x @ w).tanh().sum()
        loss.backward()
        with jg.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
        return loss

    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    results = {}
    for device in ("cpu", "cuda"):
        weights = jg.tensor(w, requires_grad=True, device=device)
        data = weights._data
        losses = [_host(step(jg.tensor(x, device=device), weights)) for _ in range(2)]
        assert weights._data is data, "the update must be written into the tensor's own memory"
        results[device] = (losses, _host(weights))
    assert_close(results["cuda"][0], results["cpu"][0])
    assert_close(results["cuda"][1], results["cpu"][1])


def test_check_compares_a_cuda_program_with_eager():
    f = jg.compile(_loss, check=True)
    x, w = jg.randn(4, 3, device="cuda"), jg.randn(3, 2, device="cuda", requires_grad=True)
    f(x, w).backward()
    assert w.grad.device == jg.device("cuda:0")


def test_device_argument_refuses_cpu_inputs():
    f = jg.compile(_loss, device="cuda")
    with pytest.raises(RuntimeError, match=r"inputs are on cpu; move them with \.to\('cuda'\)"):
        f(jg.randn(4, 3), jg.randn(3, 2))


def test_explain_shows_the_kernels_and_their_launches():
    f = jg.compile(_loss)
    text = str(f.explain(jg.randn(4, 3, device="cuda"), jg.randn(3, 2, device="cuda", requires_grad=True)))
    assert "on numba_cuda" in text
    assert "@cuda.jit" in text
    assert "kernel launches (grid, block)" in text
    assert "block=(32," in text  # one warp per block under the simulator


def test_a_steps_grad_is_added_into_the_held_device_grad_as_eager_does():
    def step(x, w):
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss

    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    runs = []
    for fn in (step, jg.compile(step, cache=False)):
        weights = jg.tensor(w, requires_grad=True, device="cuda")
        weights.grad = jg.zeros(3, 2, device="cuda")
        held = weights.grad
        for _ in range(2):
            fn(jg.tensor(x, device="cuda"), weights)
        runs.append((weights.grad is held, _host(held)))
    assert runs[0][0] and runs[1][0]
    assert_close(runs[1][1], runs[0][1])
