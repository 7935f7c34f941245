"""The CUDA backend's kernels compute what the CPU computes: small fused programs lowered whole, compared
with the numba CPU backend on the same graph. (Every op's one-node graphs, the eager path, are run by
test_every_op.py through the op samples, forward and backward.) Sizes are tiny: the simulator runs a
Python thread per CUDA thread."""
from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from jitgrad.backends.numba_cpu import lower as lower_cpu
from jitgrad.backends.numba_cuda import lower as lower_cuda

from cuda_programs import fused_programs, optimized_graph
from helpers import assert_close


@pytest.mark.parametrize("name, program, arrays", fused_programs(), ids=[p[0] for p in fused_programs()])
def test_fused_programs_match_the_cpu_backend(name, program, arrays):
    graph = optimized_graph(program, arrays)
    expected = lower_cpu(graph)(*arrays)
    cuda_program = lower_cuda(graph)
    got = [a.copy_to_host() for a in cuda_program(*(cuda.to_device(a) for a in arrays))]
    assert_close(got, list(expected), name, relative_to_largest=True)
    assert {name for name, _, _ in cuda_program.launches} <= {name for name, _, _ in cuda_program.kernels}
