"""W1-W4 for the compiled benchmark: the builders of the eager benchmark (workloads.py) plus jitgrad's
``@jitgrad.compile``, ``torch.compile`` and, for W1, a hand-fused numba kernel.

Each builder has the contract of workloads.py: it takes the workload's numpy inputs and returns a
``step()`` doing forward, loss and gradients, returning ``(loss, grads)``. jitgrad's compiled step is
the form the docs recommend for small workloads: the whole step (``autograd.grad`` inside) as one
compiled function, one kernel call. ``torch.compile`` compiles the loss; its backward comes from
AOTAutograd's compiled backward graph.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

import numpy as np

import workloads as eager
from workloads import STD_EPS, W1_ITERS, W2_PARAMS, W4_HIDDEN, W4_STEPS, Inputs, Step, w1_loss


# ---- the losses, written once per library ----------------------------------------------------------------
def w2_loss(F: Any) -> Callable:
    def loss(x, onehot, w1, b1, w2, b2, w3, b3):
        h = (x @ w1 + b1).tanh()
        h = (h @ w2 + b2).tanh()
        return F.cross_entropy(h @ w3 + b3, onehot)
    return loss


def w3_loss(gelu: Callable) -> Callable:
    def loss(x, y, r=None):
        z = gelu(x) * y
        out = (z - z.mean(1, keepdim=True)) / (z.std(1, keepdim=True) + STD_EPS)
        return (out if r is None else out * r).sum()
    return loss


def w4_loss(lib: Any) -> Callable:
    def loss(wh, wx, xs):
        h = lib.zeros(W4_HIDDEN, dtype=wh.dtype)
        for t in range(W4_STEPS):
            h = lib.tanh(wh @ h + wx @ xs[t])
        return (h * h).sum()
    return loss


# ---- jitgrad compiled: the whole step, one kernel call ---------------------------------------------------
def _jitgrad_step(loss: Callable, tensors: list, wanted: list[int]) -> Step:
    import jitgrad as jg

    @jg.compile   # disk cache on ($JITGRAD_CACHE_DIR): the second-process measurement reads it
    def step_fn(*args):
        value = loss(*args)
        return value, jg.autograd.grad(value, [args[i] for i in wanted])

    def step():
        value, grads = step_fn(*tensors)
        return value, tuple(grads)
    return step


def w1_jitgrad_compiled(inp: Inputs) -> Step:
    import jitgrad as jg
    return _jitgrad_step(w1_loss(jg), [jg.tensor(inp["x"], requires_grad=True)], [0])


def w2_jitgrad_compiled(inp: Inputs) -> Step:
    import jitgrad as jg
    tensors = [jg.tensor(inp["x"]), jg.tensor(inp["onehot"])]
    tensors += [jg.tensor(inp[name], requires_grad=True) for name in W2_PARAMS]
    return _jitgrad_step(w2_loss(jg.nn.functional), tensors, list(range(2, 8)))


def w3_jitgrad_compiled(inp: Inputs) -> Step:
    import jitgrad as jg
    tensors = [jg.tensor(inp["x"], requires_grad=True), jg.tensor(inp["y"])]
    if "r" in inp:
        tensors.append(jg.tensor(inp["r"]))
    return _jitgrad_step(w3_loss(lambda v: jg.gelu(v, approximate="tanh")), tensors, [0])


def w4_jitgrad_compiled(inp: Inputs) -> Step:
    import jitgrad as jg
    tensors = [jg.tensor(inp["wh"], requires_grad=True), jg.tensor(inp["wx"], requires_grad=True),
               jg.tensor(inp["xs"])]
    return _jitgrad_step(w4_loss(jg), tensors, [0, 1])


# ---- torch.compile ---------------------------------------------------------------------------------------
def _torch_step(loss: Callable, tensors: list, wanted: list[int]) -> Step:
    import torch
    compiled = torch.compile(loss)

    def step():
        value = compiled(*tensors)
        return value, torch.autograd.grad(value, [tensors[i] for i in wanted])
    return step


def _torch_tensor(array: np.ndarray, requires_grad: bool = False):
    import torch
    return torch.from_numpy(array.copy()).requires_grad_(requires_grad)


def w1_torch_compile(inp: Inputs) -> Step:
    import torch
    return _torch_step(w1_loss(torch), [_torch_tensor(inp["x"], True)], [0])


def w2_torch_compile(inp: Inputs) -> Step:
    import torch
    tensors = [_torch_tensor(inp["x"]), _torch_tensor(inp["onehot"])]
    tensors += [_torch_tensor(inp[name], True) for name in W2_PARAMS]
    return _torch_step(w2_loss(torch.nn.functional), tensors, list(range(2, 8)))


def w3_torch_compile(inp: Inputs) -> Step:
    import torch
    tensors = [_torch_tensor(inp["x"], True), _torch_tensor(inp["y"])]
    if "r" in inp:
        tensors.append(_torch_tensor(inp["r"]))
    gelu = torch.nn.functional.gelu
    return _torch_step(w3_loss(lambda v: gelu(v, approximate="tanh")), tensors, [0])


def w4_torch_compile(inp: Inputs) -> Step:
    import torch
    tensors = [_torch_tensor(inp["wh"], True), _torch_tensor(inp["wx"], True), _torch_tensor(inp["xs"])]
    return _torch_step(w4_loss(torch), tensors, [0, 1])


# ---- W1's floor: the same maths fused by hand into one numba kernel ----------------------------------------
def w1_numba(inp: Inputs) -> Step:
    """Forward keeping each element's 50 intermediate values, then the chain rule backwards, element by
    element: what a perfect compiler of W1 would emit."""
    import numba

    @numba.njit(nogil=True)
    def fused(x, grad, trail):
        total = 0.0
        for i in range(x.shape[0]):
            y = x[i]
            for k in range(W1_ITERS):
                trail[2 * k] = y
                y = math.sin(y) * 1.01 + 0.1
                trail[2 * k + 1] = y
                y = math.tanh(y) * y
            total += y
            d = 1.0
            for k in range(W1_ITERS - 1, -1, -1):
                a = trail[2 * k + 1]
                t = math.tanh(a)
                d *= (1.0 - t * t) * a + t
                d *= math.cos(trail[2 * k]) * 1.01
            grad[i] = d
        return total

    x = inp["x"]
    trail = np.empty(2 * W1_ITERS)

    def step():
        grad = np.empty_like(x)
        return np.float64(fused(x, grad, trail)), (grad,)
    return step


# ---- the workloads -----------------------------------------------------------------------------------------
COMPILED_BUILDERS = {
    "W1": {"jitgrad_compiled": w1_jitgrad_compiled, "torch_compile": w1_torch_compile, "numba": w1_numba},
    "W2": {"jitgrad_compiled": w2_jitgrad_compiled, "torch_compile": w2_torch_compile},
    "W3": {"jitgrad_compiled": w3_jitgrad_compiled, "torch_compile": w3_torch_compile},
    "W4": {"jitgrad_compiled": w4_jitgrad_compiled, "torch_compile": w4_torch_compile},
}

WORKLOADS = tuple(replace(w, builders={**w.builders, **COMPILED_BUILDERS[w.key]}, goal=None)
                  for w in eager.WORKLOADS)
BY_KEY = {w.key: w for w in WORKLOADS}

# The goals: (workload, library, baseline, at most this ratio of the baseline's time per step).
GOALS = (
    ("W1", "jitgrad_compiled", "jax", 0.8),
    ("W1", "jitgrad_compiled", "numba", 1.5),
    ("W2", "jitgrad_compiled", "numpy", 1.1),
    ("W2", "jitgrad_compiled", "torch", 0.7),
    ("W3", "jitgrad_compiled", "torch_compile", 1.0),
    ("W4", "jitgrad_compiled", "jax", 0.3),
)

# First call (trace and compile included): jitgrad compiled at most this ratio of JAX's first call.
FIRST_CALL_GOALS = {"W1": 2.0, "W2": 1.0, "W4": 2.0}
SECOND_PROCESS_GOAL_SECONDS = 0.3
BATCHES = (64, 100, 37)   # W2 at these batch sizes should compile its kernels once

__all__ = ["BATCHES", "BY_KEY", "COMPILED_BUILDERS", "FIRST_CALL_GOALS", "GOALS", "SECOND_PROCESS_GOAL_SECONDS",
           "WORKLOADS"]
