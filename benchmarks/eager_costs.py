"""What one eager op and one backward node cost on small tensors, beside numpy's own call and PyTorch.

    python benchmarks/eager_costs.py            # ~1 min on 2 cores
    python benchmarks/eager_costs.py --quick    # fewer rounds

Per op, on 16-element float64 vectors (a 32x32 matrix for matmul): numpy's call alone, then jitgrad
and PyTorch without grad (dispatch: type promotion, broadcasting checks, wrapping) and with an input
that requires grad (dispatch plus recording the backward node). Per node: a backward through a chain
of 100 nodes of one op, divided by 100; for jitgrad both on the fast path and on the full engine (the
fast path turned off). Then the garbage collections a W1 and a W4 step make: every object a recorded
op allocates is one more for Python's collector to scan while the graph lives, and PyTorch's nodes are
C++ objects it never sees.

Times are process CPU time (less sensitive than wall time to other jobs on the machine), each the
fastest of interleaved rounds; the columns that matter are the ratios. The script uses only the public
API, so it runs against an older checkout too (PYTHONPATH=<checkout>): that is how docs/benchmarks.md
compares before and after.
"""
from __future__ import annotations

import argparse
import gc
import time
from typing import Callable

import numpy as np

CHAIN = 100  # nodes per backward in the per-node measurement


def fastest(fn: Callable[[], object], number: int, rounds: int) -> float:
    """Seconds per call of ``fn``: the fastest of ``rounds`` batches of ``number`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


def op_cases(lib, grad: bool) -> dict[str, Callable[[], object]]:
    """One call of each op, on inputs of ``lib`` (jitgrad or torch); the first input requires grad
    when ``grad``."""
    rng = np.random.default_rng(0)
    def vector(n):  # an input that requires grad is a non-leaf: what an op inside a model sees
        values = lib.tensor(rng.standard_normal(n), requires_grad=grad)
        return values * 1.0 if grad else values
    x = vector(16)
    y = lib.tensor(rng.standard_normal(16))
    m = lib.tensor(rng.standard_normal((32, 32)))
    v = vector(32)
    r = vector(16).reshape(4, 4)
    return {
        "add": lambda: x + y, "mul": lambda: x * y, "mul by a number": lambda: x * 1.5,
        "sin": lambda: lib.sin(x), "tanh": lambda: lib.tanh(x), "exp": lambda: lib.exp(x),
        "sum": lambda: x.sum(), "matmul (32x32 @ 32)": lambda: m @ v,
        "reshape": lambda: x.reshape(4, 4), "unsqueeze": lambda: x.unsqueeze(0),
        "transpose": lambda: r.transpose(0, 1), "slice": lambda: x[2:10], "expand": lambda: x.expand(3, 16),
    }


NUMPY_CASES: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], object]] = {
    "add": lambda x, y, m, v: np.add(x, y), "mul": lambda x, y, m, v: np.multiply(x, y),
    "mul by a number": lambda x, y, m, v: np.multiply(x, 1.5), "sin": lambda x, y, m, v: np.sin(x),
    "tanh": lambda x, y, m, v: np.tanh(x), "exp": lambda x, y, m, v: np.exp(x),
    "sum": lambda x, y, m, v: x.sum(), "matmul (32x32 @ 32)": lambda x, y, m, v: m @ v,
    "reshape": lambda x, y, m, v: x.reshape(4, 4), "unsqueeze": lambda x, y, m, v: x.reshape(1, 16),
    "transpose": lambda x, y, m, v: x.reshape(4, 4).swapaxes(0, 1), "slice": lambda x, y, m, v: x[2:10],
    "expand": lambda x, y, m, v: np.broadcast_to(x, (3, 16)),
}

CHAINS: dict[str, Callable] = {
    "add a number": lambda y: y + 0.5, "mul": lambda y: y * y, "sin": lambda y: y.sin(),
    "tanh": lambda y: y.tanh(), "exp then log": lambda y: y.exp().log(),
}


def per_op(libs: dict, number: int, rounds: int) -> list[tuple[str, list[float]]]:
    rng = np.random.default_rng(0)
    arrays = (rng.standard_normal(16), rng.standard_normal(16), rng.standard_normal((32, 32)),
              rng.standard_normal(32))
    cases = {(name, grad): op_cases(lib, grad) for name, lib in libs.items() for grad in (False, True)}
    rows = []
    for op, numpy_fn in NUMPY_CASES.items():
        times = [fastest(lambda: numpy_fn(*arrays), number, rounds)]
        for name in libs:
            for grad in (False, True):
                times.append(fastest(cases[name, grad][op], number, rounds))
        rows.append((op, times))
    return rows


def backward_per_node(lib, step: Callable, number: int, rounds: int, engine_only: bool = False) -> float:
    """Seconds per node of a backward through CHAIN nodes made by ``step``."""
    x = lib.tensor(np.linspace(-1.0, 1.0, 16), requires_grad=True)

    def graph():
        y = x
        for _ in range(CHAIN // (2 if step is CHAINS["exp then log"] else 1)):
            y = step(y)
        return y.sum()
    restore = _engine_only(lib) if engine_only else None
    try:
        best = float("inf")
        for _ in range(rounds):
            spent = 0.0
            for _ in range(number):  # one graph alive at a time: many would time the garbage collector
                loss = graph()
                start = time.process_time()
                loss.backward()
                spent += time.process_time() - start
                x.grad = None
            best = min(best, spent / number)
    finally:
        if restore:
            restore()
    return best / (CHAIN + 1)


def _has_fast_path() -> bool:
    try:
        from jitgrad.autograd import fast_backward  # noqa: F401 - only whether it exists
    except ImportError:
        return False
    return True


def _engine_only(lib):
    """Turns jitgrad's fast path off (where this jitgrad has one); returns what turns it back on."""
    try:
        from jitgrad.autograd import fast_backward
    except ImportError:
        return None
    run = fast_backward.run
    fast_backward.run = lambda *args: None

    def restore():
        fast_backward.run = run
    return restore


def collections_per_step(step: Callable[[], object], steps: int) -> float:
    for _ in range(20):
        step()
    counts = [0]
    callback = (lambda phase, info: counts.__setitem__(0, counts[0] + (phase == "stop")))
    gc.callbacks.append(callback)
    try:
        for _ in range(steps):
            step()
    finally:
        gc.callbacks.remove(callback)
    return counts[0] / steps


def w1_w4_steps(jg) -> dict[str, Callable[[], object]]:
    rng = np.random.default_rng(1)
    x = jg.tensor(rng.standard_normal(16), requires_grad=True)

    def w1():
        x.grad = None
        y = x
        for _ in range(25):
            y = jg.tanh(jg.sin(y) * 1.01 + 0.1) * (jg.sin(y) * 1.01 + 0.1)
        y.sum().backward()
    wh = jg.tensor(rng.standard_normal((32, 32)) * 0.3, requires_grad=True)
    wx = jg.tensor(rng.standard_normal((32, 32)) * 0.3, requires_grad=True)
    xs = [jg.tensor(row) for row in rng.standard_normal((50, 32))]

    def w4():
        h = jg.tensor(np.zeros(32))
        for x_t in xs:
            h = jg.tanh(wh @ h + wx @ x_t)
        jg.autograd.grad((h * h).sum(), [wh, wx])
    return {"W1 step": w1, "W4 step": w4}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    number, rounds = (300, 3) if args.quick else (2000, 7)
    libs = {}
    try:  # PyTorch first: JAX-free run, but keep the peers' import order of benchmarks/ (torch first)
        import torch
        torch.set_num_threads(1)
        libs["torch"] = torch
    except ImportError:
        print("PyTorch not installed (pip install torch==2.13.0): its columns are left out")
    import jitgrad
    libs = {"jitgrad": jitgrad, **libs}
    print(f"jitgrad from {jitgrad.__file__}")
    header = ["numpy"] + [f"{name} {'grad' if grad else 'no grad'}" for name in libs for grad in (False, True)]
    print("\nper op, us (16 float64; matmul 32x32 @ 32); recording = with grad - without")
    print(f"{'op':22}" + "".join(f"{h:>18}" for h in header) + "".join(f"{'record ' + n:>16}" for n in libs))
    for op, times in per_op(libs, number, rounds):
        record = [times[2 + 2 * i] - times[1 + 2 * i] for i in range(len(libs))]
        print(f"{op:22}" + "".join(f"{t * 1e6:18.2f}" for t in times) + "".join(f"{r * 1e6:16.2f}" for r in record))
    print(f"\nbackward per node, us (a chain of {CHAIN}, 16 float64)")
    columns = ["jitgrad"] + (["jitgrad engine only"] if _has_fast_path() else []) + \
        [n for n in libs if n != "jitgrad"]
    print(f"{'chain of':22}" + "".join(f"{c:>22}" for c in columns))
    for name, step in CHAINS.items():
        row = [backward_per_node(jitgrad, step, number // 20, rounds)]
        if "jitgrad engine only" in columns:
            row.append(backward_per_node(jitgrad, step, number // 20, rounds, engine_only=True))
        row += [backward_per_node(libs[n], step, number // 20, rounds) for n in libs if n != "jitgrad"]
        print(f"{name:22}" + "".join(f"{t * 1e6:22.2f}" for t in row))
    print("\ngarbage collections per step")
    for name in libs:
        steps = w1_w4_steps(libs[name])
        print(f"  {name:10}" + "".join(f"{label}: {collections_per_step(fn, 200):.2f}   "
                                       for label, fn in steps.items()))


if __name__ == "__main__":
    main()
