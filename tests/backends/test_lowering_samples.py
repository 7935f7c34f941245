"""Every op sample (tests/op_samples.py), forward and backward, through the numba backend's generated
code, against the fx Interpreter, in float64 and float32.

The generated code runs as plain Python here (numba's DISABLE_JIT, read when a function is decorated):
compiling ~300 kernels would take minutes, and what this checks is the code generator — indexing,
broadcasting, reductions, buffers, dtypes. test_numba_kernels.py and the compile tests compile real
kernels. Ops the backend cannot lower yet must say so with a LoweringError naming the op; the list of
them is explicit, so a new gap fails here and a closed one must be taken off the list.
"""
from __future__ import annotations

import numpy as np
import pytest

from jitgrad.backends.numba_cpu import LoweringError, lower
from lowering_helpers import arrays_of, assert_close, interpreted, optimized_graph, sample_program
from op_samples import SAMPLES
from plain_python_kernels import plain_python_kernels

# Ops with no lowering (their index arrays would have to travel into the kernel as constants): the
# compile layer runs a function using them eagerly (or, with fullgraph=True, names them in its
# error). Samples whose graph holds one of them must raise LoweringError.
UNLOWERED_OPS = {"copy_slices", "index_put"}


def _advanced_index(graph) -> bool:
    """Indexing with integer or boolean arrays (getitem and its scatter): not lowered, for the same
    reason (class-index cross-entropy is one)."""
    return any(isinstance(item, np.ndarray) for n in graph.nodes for item in n.kwargs.get("index", ()))


@pytest.fixture(scope="module")
def plain_python():
    with plain_python_kernels():
        yield


def _graph_ops(graph) -> set[str]:
    return {n.target_name for n in graph.nodes if n.op.value == "call_function"}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.op}-{s.label}" for s in SAMPLES])
def test_sample_through_the_generated_code(sample, dtype, plain_python):
    arrays = arrays_of([sample], dtype)
    graph = optimized_graph(sample_program(sample), arrays)
    expected_gap = bool(_graph_ops(graph) & UNLOWERED_OPS) or _advanced_index(graph)
    try:
        kernel = lower(graph)
    except LoweringError as error:
        assert expected_gap, f"not lowered: {error}"
        return
    assert not expected_gap, "this sample lowers now: take it off the lists of gaps"
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype)
