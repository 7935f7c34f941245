"""Tracing op samples (forward and backward) into graphs the numba backend lowers, several at a time."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.numba_cpu import lower
from jitgrad.fx import passes
from jitgrad.fx.node import iter_leaves

from helpers import leaves


def sample_program(sample):
    """The sample's op and, when differentiable, a backward of a weighted sum of its output."""
    def program(*inputs):
        out = sample.fn(*inputs)
        if sample.differentiable:
            weights = jg.tensor(np.linspace(-1.0, 1.0, out.numel()).reshape(out.shape)).to(out.dtype)
            (out * weights).sum().backward()
        return out
    return program


def batch_program(samples, backward=True):
    """One program running every sample (and its backward, unless ``backward=False``) on its own
    slice of the arguments."""
    counts = [len(s.shapes) for s in samples]

    def program(*inputs):
        outs, start = [], 0
        for sample, count in zip(samples, counts):
            run = sample_program(sample) if backward else sample.fn
            outs.append(run(*inputs[start:start + count]))
            start += count
        return tuple(outs)
    return program


def arrays_of(samples, dtype=None, seed=1):
    arrays = [a for s in samples for a in s.arrays(seed=seed)]
    if dtype is not None:
        arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
    return arrays


def optimized_graph(program, arrays):
    """The traced graph of ``program`` after the default pass pipeline."""
    return passes.PassManager().run(fx.trace(program, *leaves(arrays)).graph)


def lowered(program, arrays, **options):
    """The optimized graph of ``program`` traced on ``arrays``, and that graph lowered."""
    graph = optimized_graph(program, arrays)
    return graph, lower(graph, **options)


def interpreted(graph, arrays):
    """What the fx Interpreter computes, flattened as the backend returns it."""
    out = fx.Interpreter(graph).run(*(jg.tensor(a) for a in arrays))
    return [v.detach().numpy() for v in iter_leaves(out) if v is not None]
