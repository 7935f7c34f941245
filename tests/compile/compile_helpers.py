"""Helpers for the compile tests: eager is the reference, at the issue's tolerances."""
from __future__ import annotations

from functools import partial

import jitgrad as jg
import helpers

# Compiled against eager: the dtype's rtol (float32 1e-5, float64 1e-10, exact otherwise), and an atol
# of rtol times the largest magnitude, since a compiled kernel may sum in another order.
assert_close = partial(helpers.assert_close, relative_to_largest=True)


def w1_step(x):
    """The benchmarks' W1 as a training step (backward inside): the compile tests' small real workload."""
    import workloads

    x.grad = None
    loss = workloads.w1_loss(jg)(x)
    loss.backward()
    return loss, (x.grad,)


# The head of a script run in a fresh process (tests of warm starts and of what a process imports): a
# small MLP's data and parameters, the same in every process.
MLP_SCRIPT = """
import json, sys
import numpy as np
import jitgrad as jg

F = jg.nn.functional
rng = np.random.default_rng(0)
def tensor(*shape, grad=False):
    return jg.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=grad)
x, onehot = tensor(4, 6), jg.tensor(np.eye(3, dtype=np.float32)[[0, 2, 1, 2]])
params = [tensor(6, 5, grad=True), tensor(5, grad=True), tensor(5, 5, grad=True), tensor(5, grad=True),
          tensor(5, 3, grad=True), tensor(3, grad=True)]
"""
