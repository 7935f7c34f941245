"""Every op sample (tests/op_samples.py), forward and backward, through the numba backend's generated
code, against the fx Interpreter, in float64 and (for samples with floating inputs) float32.

The generated code runs as plain Python here (numba's DISABLE_JIT, read when a function is decorated):
compiling ~300 kernels would take minutes, and what this checks is the code generator — indexing,
broadcasting, reductions, buffers, dtypes. test_lowering_samples_numba.py compiles one sample of every
op under numba. Every op has a lowering, so every sample must lower.
"""
from __future__ import annotations

import io
import tokenize

import numpy as np
import pytest

from jitgrad.backends.numba_cpu import lower
from jitgrad.backends.numba_cpu.codegen import generate
from helpers import assert_close
from lowering_helpers import arrays_of, interpreted, optimized_graph, sample_program
from op_samples import SAMPLES


def _floating(sample) -> bool:
    return any(a.dtype.kind == "f" for a in sample.arrays())


CASES = [pytest.param(sample, dtype, id=f"{sample.id}-{np.dtype(dtype).name}")
         for sample in SAMPLES for dtype in (np.float64, np.float32) if dtype == np.float64 or _floating(sample)]


@pytest.mark.parametrize("sample, dtype", CASES)
def test_sample_through_the_generated_code(sample, dtype, plain_python):
    arrays = arrays_of([sample], dtype)
    graph = optimized_graph(sample_program(sample), arrays)
    kernel = lower(graph)
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=dtype)  # dtypes too: no upcast


def uncast_floats(source: str) -> list[str]:
    """What in the code (not the comments) would compute in float64: the name float64, and float
    literals not cast with ``np.float32(...)``."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
    found = []
    for i, t in enumerate(tokens):
        if t.type == tokenize.NAME and t.string == "float64":
            found.append(t.line.strip())
        elif t.type == tokenize.NUMBER and any(c in t.string for c in ".e") and \
                [tokens[i - 2].string, tokens[i - 1].string] != ["float32", "("]:
            found.append(t.line.strip())
    return found


def value_dtypes(graph) -> set[np.dtype]:
    found = set()
    for node in graph.nodes:
        dtype = node.meta.get("dtype")
        found.update(np.dtype(d) for d in (dtype if isinstance(dtype, tuple) else (dtype,)) if d is not None)
    return found


FLOAT32_SAMPLES = [case for case in CASES if case.values[1] == np.float32]


@pytest.mark.parametrize("sample, dtype", FLOAT32_SAMPLES)
def test_a_float32_kernel_computes_in_float32(sample, dtype):
    """No upcast hides inside: a constant is cast to float32 before it meets a float32 value."""
    graph = optimized_graph(sample_program(sample), arrays_of([sample], dtype))
    if np.dtype(np.float64) in value_dtypes(graph):
        pytest.skip("the program itself has float64 values")
    assert uncast_floats(generate(graph).source) == []
