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
    if isinstance(v, (list, tuple)):
        return type(v)(_value(item) for item in v)
    return np.array(v._data) if hasattr(v, "_data") else v


def elementwise_and_reduction_calls():
    """(id, op, args, attrs, output) for each distinct elementwise or reduction call of the samples
    (arrays as numpy; the output is what the CPU computed), forward and backward."""
    return op_calls(("elementwise", "reduction"))


def op_calls(kinds=None):
    """(id, op, args, attrs, output) for each distinct call of the samples of an op of ``kinds`` (every
    kind: None), forward and backward (arrays as numpy; the output is what the CPU computed)."""
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
            if kinds is not None and op.kind not in kinds:
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


def kept_unit_dimension(x):
    """A reduction over an outer dimension that keeps a dimension of size 1 (a convolution's weight
    gradient over the batch, one group): the output is read at index 0 there."""
    return (jg.tanh(x) * 2.0).sum(dim=0)


def fused_programs():
    """(name, program, arrays) of the small fused programs."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 37))
    return [("w1_like", w1_like, [np.linspace(-1.5, 1.5, 40)]),
            ("w1_like_float32", w1_like, [np.linspace(-1.5, 1.5, 40).astype(np.float32)]),
            ("broadcast_rows", broadcast_rows, [x.astype(np.float32), rng.uniform(-1, 1, 37).astype(np.float32),
                                                rng.uniform(-1, 1, (3, 1)).astype(np.float32)]),
            ("two_pass", two_pass, [x]),
            ("kept_unit_dimension", kept_unit_dimension, [rng.uniform(-1, 1, (3, 1, 2, 5))])]


def optimized_graph(program, arrays):
    """The traced graph of ``program`` after the default pass pipeline (as ``jitgrad.compile`` lowers)."""
    tensors = leaves(arrays)
    return passes.PassManager().run(fx.trace(program, *tensors).graph)


def workload_graphs():
    """(label, graph) of every graph ``@jitgrad.compile`` hands its backend for W1-W4 (quick sizes) in each
    form benchmarks/compiled_workloads.py compiles: the whole training step, the loss with
    ``backward()`` outside (the fused forward and gradients, and the split forward and backward it falls
    back to), the loss reading its parameters from a closure. The graphs are device-neutral, so tracing
    CPU tensors gives the CUDA backend's: a recording backend takes each graph as it reaches
    ``backend.lower`` (after the passes) and runs it with the interpreter."""
    import importlib
    import os
    import tempfile

    decorator = importlib.import_module("jitgrad.compile.decorator")
    backend = importlib.import_module("jitgrad.compile.backend")
    losses = importlib.import_module("jitgrad.compile.loss_program")  # the decorator imports it at a trace
    import compiled_workloads

    found, label = [], [""]

    def recording(graph, **options):
        found.append((label[0], graph))
        return backend.INTERPRETER.lower(graph, **options)

    def every_variant(*args, **kwargs):  # the split forward and the whole backward, lowered too
        program = original_loss_program(*args, **kwargs)
        program.lower_all()
        return program

    original_get_backend, original_loss_program = decorator.get_backend, losses.loss_program
    original_cache = os.environ.get("JITGRAD_CACHE_DIR")
    decorator.get_backend = lambda device="cpu": backend.Backend("recording", recording, (backend.LoweringError,),
                                                                 None)
    losses.loss_program = every_variant
    try:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["JITGRAD_CACHE_DIR"] = cache  # nothing is read back from disk instead of lowered
            for workload in compiled_workloads.WORKLOADS:
                inputs = workload.make_inputs(True)
                for form in compiled_workloads.JITGRAD_FORMS:
                    label[0] = f"{workload.key}-{form}"
                    workload.builders[form](inputs)()
    finally:
        decorator.get_backend, losses.loss_program = original_get_backend, original_loss_program
        if original_cache is None:
            os.environ.pop("JITGRAD_CACHE_DIR", None)
        else:
            os.environ["JITGRAD_CACHE_DIR"] = original_cache
    return found
