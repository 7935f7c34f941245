"""What the CUDA backend is tested on, shared by the simulator tests (tests/cuda/) and the PTX test
(tests/backends/test_cuda_ptx.py): every elementwise and reduction call the op samples make, forward
and backward, as one-node graphs; and small fused programs (a W1-like chain with its backward,
broadcasting, reductions over inner and outer dimensions, two-pass reductions)."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
from jitgrad import fx
from jitgrad.fx import passes
from jitgrad.ops.registry import observing

from helpers import leaves
from op_samples import SAMPLES


def _value(v):
    """A copy of a tensor's array, taken when the op ran (an in-place op writes over it later)."""
    return np.array(v._data) if hasattr(v, "_data") else v


def elementwise_and_reduction_calls():
    """(id, op, args, attrs, output) for each distinct elementwise or reduction call of the samples
    (arrays as numpy; the output is what the CPU computed), forward and backward."""
    calls, seen = [], set()
    for sample in SAMPLES:
        found = []
        inputs = [jg.tensor(a, requires_grad=sample.differentiable and a.dtype.kind == "f") for a in sample.arrays()]
        with observing(lambda op, args, attrs, output: found.append(
                (op, tuple(_value(a) for a in args), attrs, _value(output)))):
            out = sample.fn(*inputs)
            if sample.differentiable:
                (out * jg.ones_like(out)).sum().backward()
        for op, args, attrs, output in found:
            if op.kind not in ("elementwise", "reduction"):
                continue
            key = (op.name, repr([(a.dtype, a.shape) if isinstance(a, np.ndarray) else a for a in args]), repr(attrs))
            if key not in seen:
                seen.add(key)
                calls.append((f"{sample.id}-{op.name}-{len(calls)}", op, args, attrs, output))
    return calls


def w1_like(x, iterations=3):
    """W1's chain (benchmarks/workloads.py: sin, scale and shift, tanh times itself, then the sum) with
    fewer steps, and its backward: what W1 lowers to, small enough for the simulator."""
    y = x
    for _ in range(iterations):
        y = jg.sin(y) * 1.01 + 0.1
        y = jg.tanh(y) * y
    loss = jg.sum(y)
    loss.backward()
    return loss, x.grad


def broadcast_rows(x, w, b):
    """Broadcasting in a fused chain, a row reduction and an outer one, and a mean."""
    h = jg.tanh(x * w + b)
    return h.sum(dim=1), (h * h).mean(dim=0), jg.amax(h, dim=1)


def two_pass(x):
    """Reductions whose fold reads a first pass (variance), over a dimension and over everything."""
    return x.var(dim=1), x.std(), jg.exp(x - 1.0).sum(dim=0, keepdim=True)


def fused_programs():
    """(name, program, arrays) of the small fused programs."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 37))
    return [("w1_like", w1_like, [np.linspace(-1.5, 1.5, 40)]),
            ("w1_like_float32", w1_like, [np.linspace(-1.5, 1.5, 40).astype(np.float32)]),
            ("broadcast_rows", broadcast_rows, [x.astype(np.float32), rng.uniform(-1, 1, 37).astype(np.float32),
                                                rng.uniform(-1, 1, (3, 1)).astype(np.float32)]),
            ("two_pass", two_pass, [x])]


def optimized_graph(program, arrays):
    """The traced graph of ``program`` after the default pass pipeline (as ``jitgrad.compile`` lowers)."""
    tensors = leaves(arrays)
    return passes.PassManager().run(fx.trace(program, *tensors).graph)
