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
