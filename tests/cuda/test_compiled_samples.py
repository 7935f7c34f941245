"""Every op sample (tests/op_samples.py) COMPILED on CUDA (the simulator in CI) against the CPU: the
sample and, when it is differentiable, its backward traced into one program, run through the pass
pipeline and lowered by the CUDA backend, then run on device arrays. Every output and gradient must be
what the same program computes eagerly on the CPU (eager, not the numba CPU backend: compiling 200
CPU programs costs minutes, and the CPU backend is checked against eager in tests/backends).

test_every_op.py runs the same samples eagerly on CUDA tensors and test_compiled_workloads.py runs
W1-W4 compiled; with this file every registry op runs compiled and eagerly on CUDA. The graph is
traced on CPU leaves: the IR is device-neutral, so the program ``jitgrad.compile`` would lower for
CUDA tensors is this one (tests/cuda_programs.optimized_graph). The last test goes through the
public API (``@jitgrad.compile`` on CUDA tensors, ``loss.backward()``) for a few samples.
"""
from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import jitgrad as jg
from jitgrad.backends.numba_cuda import lower

from cuda_programs import optimized_graph
from helpers import assert_close, leaves
from op_samples import SAMPLES

# Samples the tracer cannot trace, and why (test_sample_compiled_on_cuda checks that each one listed
# still fails to trace, and every other one traces). Empty: the random ops take their generator state
# as an input and no sample branches on a tensor's values, so every sample traces.
UNTRACEABLE: dict[str, str] = {}

BY_ID = {sample.id: sample for sample in SAMPLES}


def _outputs(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _seeds(outs) -> list[np.ndarray]:
    """The incoming gradient of each differentiable output: the same numbers for every run."""
    rng = np.random.default_rng(1)
    return [rng.uniform(0.5, 1.5, o.shape).astype(o.dtype.numpy) for o in outs]


def sample_program(sample):
    """The sample's outputs and, when it is differentiable, the gradients of a seeded sum of its
    floating outputs with respect to its floating inputs (None where an input is unused)."""
    def program(*inputs):
        outs = _outputs(sample.fn(*inputs))
        wanted = [t for t in inputs if t.requires_grad]
        differentiable = [o for o in outs if o.requires_grad]
        if not (sample.differentiable and wanted and differentiable):
            return tuple(outs)
        terms = [(o * jg.tensor(seed)).sum() for o, seed in zip(differentiable, _seeds(differentiable))]
        loss = sum(terms[1:], terms[0])
        return (*outs, *jg.autograd.grad(loss, wanted, allow_unused=True))
    return program


def _eager_on_cpu(sample, arrays) -> list[np.ndarray]:
    """The program run eagerly on the CPU, flattened as the backend returns it (no Nones)."""
    values = sample_program(sample)(*leaves(arrays, requires_grad=sample.differentiable))
    return [v.detach().numpy() for v in values if v is not None]


def _host(value) -> np.ndarray:
    return value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_sample_compiled_on_cuda(sample):
    arrays = sample.arrays()
    program = sample_program(sample)
    if sample.id in UNTRACEABLE:
        with pytest.raises(Exception):
            optimized_graph(program, arrays)
        return
    graph = optimized_graph(program, arrays)
    got = lower(graph)(*(cuda.to_device(a) for a in arrays))
    expected = _eager_on_cpu(sample, arrays)
    assert len(got) == len(expected), f"{sample.id}: {len(got)} outputs on CUDA, {len(expected)} on the CPU"
    for i, (value, want) in enumerate(zip(got, expected)):
        assert_close(_host(value), want, f"{sample.id} output {i}", relative_to_largest=True)


def test_every_untraceable_sample_exists():
    assert set(UNTRACEABLE) <= set(BY_ID)


# A matmul, a softmax, an index and a reduction, through the public API. (Not getitem-repeated-rows: its
# index is a jg.tensor made inside the function, which jitgrad.compile refuses to trace, on the CPU as
# on CUDA, and runs eagerly with a CompileWarning; the assertion on ``loss.programs`` would catch that.)
PUBLIC = ["mm-operator", "softmax-dim1", "getitem-list-none-int", "sum-dim"]


@pytest.mark.parametrize("sample_id", PUBLIC)
def test_compiled_loss_backward_on_cuda_tensors(sample_id):
    sample = BY_ID[sample_id]
    arrays = sample.arrays()

    @jg.compile
    def loss(seed, *inputs):
        return (sample.fn(*inputs) * seed).sum()

    grads = {}
    for device in ("cpu", "cuda"):
        inputs = [jg.tensor(a, requires_grad=a.dtype.kind == "f", device=device) for a in arrays]
        shape = sample.fn(*leaves(arrays, requires_grad=False)).shape
        seed = jg.tensor(_seeds([jg.zeros(*shape, dtype=jg.float64)])[0], device=device)
        value = loss(seed, *inputs) if device == "cuda" else (sample.fn(*inputs) * seed).sum()
        value.backward()
        assert value.device.type == device
        assert all(t.grad.device.type == device for t in inputs if t.requires_grad)
        grads[device] = [value.detach().cpu().numpy(), *(t.grad.cpu().numpy() for t in inputs if t.requires_grad)]
    assert [p.backend.name for p in loss.programs] == ["numba_cuda"]
    assert_close(grads["cuda"], grads["cpu"], f"{sample_id} loss and gradients", relative_to_largest=True)
