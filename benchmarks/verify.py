"""Check that every library computes the same loss and gradients before any of them is timed.

A benchmark of a wrong result is worthless, and a fast wrong gradient is exactly the kind of bug a
speed-up can introduce, so a mismatch is reported loudly and the library is left out of the timing.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass

import numpy as np

from workloads import Inputs, Step, Workload, to_numpy

REFERENCE = "numpy"   # the hand-written forward and backward pass


@dataclass
class Problem:
    library: str
    message: str


def _outputs(lib: str, step: Step) -> list[np.ndarray]:
    loss, grads = step()
    return [to_numpy(lib, loss)] + [to_numpy(lib, g) for g in grads]


def _compare(workload: Workload, got: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    """None when ``got`` matches ``want``, else which output differs and by how much."""
    if len(got) != len(want):
        return f"returned {len(got) - 1} gradients, expected {len(want) - 1}"
    for i, (a, b) in enumerate(zip(got, want)):
        name = "loss" if i == 0 else f"gradient {i}"
        if a.shape != b.shape:
            return f"{name} has shape {a.shape}, expected {b.shape}"
        atol = max(workload.atol * float(np.max(np.abs(b), initial=0.0)), workload.atol_floor)
        if not np.allclose(a, b, rtol=workload.rtol, atol=atol):
            err = float(np.max(np.abs(a - b)))
            return (f"{name} differs: max |difference| {err:.3g} "
                    f"(rtol {workload.rtol:g}, atol {atol:.3g}, max |reference| {np.max(np.abs(b)):.3g})")
    return None


def check(workload: Workload, timed_steps: dict[str, Step], timed_inputs: Inputs,
          reference: str = REFERENCE) -> list[Problem]:
    """Compare each library with the ``reference`` column (the numpy pass unless the workload set has
    another, as the suite's float64 PyTorch one) on the timed inputs (reusing ``timed_steps``, the
    steps about to be timed, so JAX compiles once) and on the workload's extra check inputs.
    Returns one problem per library that raised or disagreed (at most one each)."""
    problems: dict[str, Problem] = {}
    for inputs in [timed_inputs, *workload.check_inputs()]:
        def step_for(lib: str) -> Step:
            return timed_steps[lib] if inputs is timed_inputs else workload.builders[lib](inputs)
        want = _outputs(reference, step_for(reference))
        for lib in timed_steps:
            if lib == reference or lib in problems:
                continue
            try:
                message = _compare(workload, _outputs(lib, step_for(lib)), want)
            except Exception as exc:
                message = f"raised {type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=-3)
            if message is not None:
                shape = ", ".join(f"{k} {v.shape} {v.dtype}" for k, v in inputs.items())
                problems[lib] = Problem(lib, f"{message}\n    inputs: {shape}")
    return list(problems.values())
