"""Memory over many steps: jitgrad's resident memory must stay flat over a long eager run and a long
compiled run (issue 12: 100,000 eager steps, 20,000 compiled ones). A leak of one graph node, saved
array or cached kernel per step would show as steady growth.

    python benchmarks/memory.py                 # 100,000 eager and 20,000 compiled steps (a few minutes)
    python benchmarks/memory.py --quick         # 10,000 and 2,000

The workload is W1's loss and a small MLP step (``loss = f(x); loss.backward()``, then an SGD update
of the parameters under ``no_grad``), eager and compiled. Resident memory (``/proc/self/statm``, or
the peak from ``getrusage`` elsewhere) is sampled after a warm-up of a tenth of the steps and then at
every tenth; the table gives the samples and the growth from the first to the last. Growth under
5 % is "flat". It exits 1 when a run is not flat; it is a measurement, not a test.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jitgrad as jg  # noqa: E402
import workloads  # noqa: E402

FLAT = 0.05


def resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as file:
            return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the peak, which grows with any growth of the current size
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def mlp_training(compiled: bool):
    """One SGD step of a 32-64-10 MLP on a fixed batch, as a closure over its parameters."""
    rng = np.random.default_rng(0)
    x = jg.tensor(rng.standard_normal((16, 32)))
    y = jg.tensor(rng.integers(0, 10, 16))
    params = [jg.tensor(rng.standard_normal(shape) * 0.1, requires_grad=True)
              for shape in ((32, 64), (64,), (64, 10), (10,))]

    def loss_fn(x, y):
        w1, b1, w2, b2 = params
        return jg.nn.functional.cross_entropy((x @ w1 + b1).tanh() @ w2 + b2, y)
    loss_of = jg.compile(loss_fn) if compiled else loss_fn

    def step() -> None:
        loss_of(x, y).backward()
        with jg.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad = None
    return step


def w1_loss(compiled: bool):
    inputs = workloads.WORKLOADS[0].make_inputs(False)
    x = jg.tensor(inputs["x"], requires_grad=True)
    loss_of = jg.compile(workloads.w1_loss(jg)) if compiled else workloads.w1_loss(jg)

    def step() -> None:
        x.grad = None
        loss_of(x).backward()
    return step


def measure(step, steps: int) -> list[int]:
    warm_up = steps // 10
    for _ in range(warm_up):
        step()
    samples = [resident_bytes()]
    for chunk in range(10):
        for _ in range((steps - warm_up) // 10):
            step()
        samples.append(resident_bytes())
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the steps")
    args = parser.parse_args(argv)
    eager_steps, compiled_steps = (10_000, 2_000) if args.quick else (100_000, 20_000)
    runs = [("W1 loss, eager", w1_loss(False), eager_steps), ("MLP step, eager", mlp_training(False), eager_steps),
            ("W1 loss, compiled", w1_loss(True), compiled_steps),
            ("MLP step, compiled", mlp_training(True), compiled_steps)]
    print(f"{'run':<20} {'steps':>7}  {'after warm-up':>13}  {'at the end':>10}  {'growth':>7}  flat")
    all_flat = True
    for name, step, steps in runs:
        samples = measure(step, steps)
        growth = samples[-1] / samples[0] - 1.0
        flat = growth < FLAT
        all_flat &= flat
        print(f"{name:<20} {steps:>7}  {samples[0] / 2**20:>10.1f} MiB  {samples[-1] / 2**20:>6.1f} MiB  "
              f"{growth:>+7.1%}  {'yes' if flat else 'NO'}")
    return 0 if all_flat else 1


if __name__ == "__main__":
    sys.exit(main())
