"""Every op sample (tests/op_samples.py), forward and backward, through the numba backend's generated
code, against the fx Interpreter, in float64 and float32.

The generated code runs as plain Python here (numba's DISABLE_JIT, read when a function is decorated):
compiling ~300 kernels would take minutes, and what this checks is the code generator — indexing,
broadcasting, reductions, buffers, dtypes. test_numba_kernels.py and the compile tests compile real
kernels. Every op has a lowering, so every sample must lower.
"""
from __future__ import annotations

import numpy as np
import pytest

from jitgrad.backends.numba_cpu import lower
from lowering_helpers import arrays_of, assert_close, interpreted, optimized_graph, sample_program
from op_samples import SAMPLES
from plain_python_kernels import plain_python_kernels


@pytest.fixture(scope="module")
def plain_python():
    with plain_python_kernels():
        yield


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.op}-{s.label}" for s in SAMPLES])
def test_sample_through_the_generated_code(sample, dtype, plain_python):
    arrays = arrays_of([sample], dtype)
    graph = optimized_graph(sample_program(sample), arrays)
    kernel = lower(graph)
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype)
