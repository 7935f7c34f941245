"""Every op sample (tests/op_samples.py) that the LLVM generator covers, forward and backward, compiled
by llvm_cpu for real and compared with the fx Interpreter, in float64 and float32; the samples it does
not cover must say which op sends them to numba.

Covered samples are found by generating their IR in float64 (no compile), then compiled a batch to a
kernel: all of them in float64, every fourth in float32 (what float32 changes, the approximated
``exp`` and ``tanh`` and the constants' casts, is the same code in every sample), to keep the file's
time to about ten seconds on 2 cores."""
from __future__ import annotations

import numpy as np
import pytest

from jitgrad.backends.llvm_cpu import NotCovered, lower
from jitgrad.backends.llvm_cpu.codegen import generate
from helpers import assert_close
from lowering_helpers import arrays_of, batch_program, interpreted, optimized_graph, sample_program
from op_samples import SAMPLES

SAMPLES_PER_KERNEL = 40


def _covered(sample, dtype) -> str | None:
    """None where the generator covers the sample's program, else why not."""
    try:
        generate(optimized_graph(sample_program(sample), arrays_of([sample], dtype)))
    except NotCovered as why:
        return str(why)
    return None


def _floating(sample) -> bool:
    return any(a.dtype.kind == "f" for a in sample.arrays())


REASONS = {sample.id: _covered(sample, np.float64) for sample in SAMPLES}
COVERED = [s for s in SAMPLES if REASONS[s.id] is None]


def _batches(samples):
    return [samples[i:i + SAMPLES_PER_KERNEL] for i in range(0, len(samples), SAMPLES_PER_KERNEL)]


COVERAGE = {np.float64: _batches(COVERED), np.float32: _batches([s for s in COVERED[::4] if _floating(s)])}
CASES = [pytest.param(batch, dtype, id=f"{np.dtype(dtype).name}-{batch[0].id}..{batch[-1].id}")
         for dtype, batches in COVERAGE.items() for batch in batches]


def test_the_generator_covers_the_common_ops():
    """What W1, W2 and W4 and the common programs use is covered (a regression here sends them to numba)."""
    covered = {s.op for batch in COVERAGE[np.float64] for s in batch}
    wanted = {"add", "sub", "mul", "div", "neg", "exp", "log", "tanh", "sin", "cos", "sigmoid", "relu", "sum",
              "mean", "amax", "mm", "mv", "reshape", "permute", "transpose", "stack", "cat",
              "log_softmax", "softmax", "getitem", "expand", "where", "pow", "sqrt", "abs", "clamp", "var", "std",
              "logsumexp", "nll_loss"}
    assert wanted - covered == set()


def test_what_is_not_covered_names_its_op():
    missing = [r for r in REASONS.values() if r is not None]
    assert missing, "every sample is covered: this test should then check something else"
    assert all("op '" in r or "IR node" in r or "parallel" in r for r in missing), missing


@pytest.mark.parametrize("batch, dtype", CASES)
def test_covered_samples_through_llvm(batch, dtype):
    arrays = arrays_of(batch, dtype)
    graph = optimized_graph(batch_program(batch), arrays)
    kernel = lower(graph)
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=dtype)


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_copies_of_another_dtype_are_converted_not_reinterpreted(op):
    """``cat``/``stack`` copy each input into the output: an input of another dtype (the public ops
    cast first, but a graph may hold one) is converted element by element as numpy converts it, never
    its bits copied (before 2026-11-28, int64 ones read as float64 denormals and NaN)."""
    import jitgrad as jg
    from jitgrad import fx

    def f(a, b):
        return getattr(jg, op)([a.to(jg.float64), b]) * 1.0
    a, b = np.array([1, -2, 3], dtype=np.int64), np.array([0.5, 1.5, -4.0])
    graph = fx.trace(f, jg.tensor(a), jg.tensor(b)).graph
    cast = next(n for n in graph.nodes if n.name == "to_dtype")
    next(n for n in graph.nodes if n.name == op).replace_input_with(cast, cast.args[0])
    graph.erase_node(cast)
    expected = getattr(np, "concatenate" if op == "cat" else "stack")([a.astype(np.float64), b])
    from jitgrad.fx import passes
    np.testing.assert_array_equal(lower(passes.PassManager().run(graph))(a, b)[0], expected)
