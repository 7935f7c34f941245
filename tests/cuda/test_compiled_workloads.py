"""The benchmarks' W1-W4, compiled on CUDA (the simulator here) and on the CPU backend: the same loss
and gradients, forward and backward, in the two compiled forms users write.

The workloads' maths is the benchmarks' (benchmarks/workloads.py, compiled_workloads.py) at sizes the
simulator runs in seconds: it runs one Python thread per CUDA thread. One compiled function serves
both devices, so each test also checks that a CUDA call does not reuse the CPU program.

- *loss*: the compiled loss, then ``loss.backward()`` outside (the fused forward-and-gradients kernel,
  then ``CompiledFunctionBackward`` handing the gradients over), for every workload;
- *step*: ``autograd.grad`` inside the compiled function (one program for the whole step), for W4.

A call costs seconds on the simulator (tracing runs every op as a kernel, twice), so the step form,
whose device code is the loss form's, runs on the cheapest workload only: CI's whole run has to fit in
10 minutes on 2 cores.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest

import jitgrad as jg
from compiled_workloads import w2_loss, w3_loss
from helpers import assert_close
from workloads import w1_loss


def w4_loss(hidden: int, steps: int) -> Callable:
    """W4's recurrent loss, with its initial state made on the weights' device."""
    def loss(wh, wx, xs):
        h = jg.zeros(hidden, dtype=wh.dtype, device=wh.device)
        for t in range(steps):
            h = jg.tanh(wh @ h + wx @ xs[t])
        return (h * h).sum()
    return loss


def _w2_arrays(rng: np.random.Generator) -> list[np.ndarray]:
    sizes, batch = (8, 6, 5, 3), 4
    arrays = [rng.standard_normal((batch, sizes[0])).astype(np.float32),
              np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]]
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        arrays += [(rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)).astype(np.float32),
                   (0.1 * rng.standard_normal(fan_out)).astype(np.float32)]
    return arrays


def _w4_arrays(rng: np.random.Generator) -> list[np.ndarray]:
    hidden, inputs, steps = 4, 3, 3
    return [0.9 / math.sqrt(hidden) * rng.standard_normal((hidden, hidden)),
            0.9 / math.sqrt(hidden) * rng.standard_normal((hidden, inputs)),
            rng.standard_normal((steps, inputs))]


# name -> (loss, the inputs from a generator, the inputs that want gradients)
WORKLOADS = {
    "W1": (w1_loss(jg), lambda rng: [rng.standard_normal(16)], [0]),
    "W2": (w2_loss(jg.nn.functional), _w2_arrays, [2, 3, 4, 5, 6, 7]),
    "W3": (w3_loss(lambda v: jg.gelu(v, approximate="tanh")),
           lambda rng: [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3)], [0]),
    "W4": (w4_loss(4, 3), _w4_arrays, [0, 1]),
}


def _loss_form(loss: Callable, wanted: list[int]) -> Callable:
    compiled = jg.compile(loss)

    def run(tensors: list[jg.Tensor]) -> list[jg.Tensor]:
        value = compiled(*tensors)
        value.backward()
        return [value, *(tensors[i].grad for i in wanted)]
    run.compiled = compiled
    return run


def _step_form(loss: Callable, wanted: list[int]) -> Callable:
    @jg.compile
    def step(*tensors):
        value = loss(*tensors)
        return value, jg.autograd.grad(value, [tensors[i] for i in wanted])

    def run(tensors: list[jg.Tensor]) -> list[jg.Tensor]:
        value, grads = step(*tensors)
        return [value, *grads]
    run.compiled = step
    return run


@pytest.mark.parametrize("name,form", [*((name, _loss_form) for name in sorted(WORKLOADS)), ("W4", _step_form)],
                         ids=[*(f"{name}-loss" for name in sorted(WORKLOADS)), "W4-step"])
def test_compiled_on_cuda_equals_the_cpu_backend(name, form):
    loss, make_arrays, wanted = WORKLOADS[name]
    arrays = make_arrays(np.random.default_rng(14))
    run = form(loss, wanted)
    results = {}
    for device in ("cpu", "cuda"):
        tensors = [jg.tensor(a, requires_grad=i in wanted, device=device) for i, a in enumerate(arrays)]
        values = run(tensors)
        assert all(v.device.type == device for v in values), f"{name}: results left {device}"
        results[device] = [v.detach().cpu().numpy() for v in values]
    assert [p.backend.name for p in run.compiled.programs] == ["llvm_cpu+numba_cpu", "numba_cuda"]
    for i, (got, expected) in enumerate(zip(results["cuda"], results["cpu"])):
        assert_close(got, expected, f"{name} {'loss' if i == 0 else f'gradient {i}'}", relative_to_largest=True)
