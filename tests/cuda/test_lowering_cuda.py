"""The CUDA backend's kernels compute what the CPU computes: every elementwise and reduction call of the
op samples as a one-node graph (the eager path), and small fused programs lowered whole, compared with
the numba CPU backend on the same graph. Sizes are tiny: the simulator runs a Python thread per CUDA
thread."""
from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from jitgrad.backends.numba_cpu import lower as lower_cpu
from jitgrad.backends.numba_cuda import lower as lower_cuda
from jitgrad.backends.numba_cuda.eager import run_op

from cuda_programs import elementwise_and_reduction_calls, fused_programs, optimized_graph
from helpers import assert_close

CALLS = elementwise_and_reduction_calls()


def _device(value):
    return cuda.to_device(np.array(value, order="C")) if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize("call", CALLS, ids=[c[0] for c in CALLS])
def test_each_elementwise_and_reduction_call_matches_the_cpu(call):
    _, op, args, attrs, expected = call
    got = run_op(op, tuple(_device(a) for a in args), attrs)
    assert_close(got.copy_to_host(), expected, op.name, relative_to_largest=True)


@pytest.mark.parametrize("name, program, arrays", fused_programs(), ids=[p[0] for p in fused_programs()])
def test_fused_programs_match_the_cpu_backend(name, program, arrays):
    graph = optimized_graph(program, arrays)
    expected = lower_cpu(graph)(*arrays)
    cuda_program = lower_cuda(graph)
    got = [a.copy_to_host() for a in cuda_program(*(cuda.to_device(a) for a in arrays))]
    assert_close(got, list(expected), name, relative_to_largest=True)
    assert {name for name, _, _ in cuda_program.launches} <= {name for name, _, _ in cuda_program.kernels}
