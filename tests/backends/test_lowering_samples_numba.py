"""One sample of every op, compiled by numba for real, in float32: the plain-Python run of
test_lowering_samples.py cannot vouch for numba's typing (a float64 constant meeting a float32, an
``np`` function numba lacks). Forward only and a dozen ops to a kernel: a kernel's compile time grows
faster than its size, and the backward of each op is made of ops compiled here too. The float64
backward of the ops that are not loops is compiled in test_numba_kernels.py."""
from __future__ import annotations

import numpy as np
import pytest

from jitgrad.ops.registry import REGISTRY
from helpers import assert_close
from lowering_helpers import arrays_of, batch_program, interpreted, lowered
from op_samples import SAMPLES


def first_sample_of_each_op():
    firsts = {}
    for sample in SAMPLES:
        firsts.setdefault(sample.op, sample)
    return list(firsts.values())


FIRST_OF_EACH_OP = first_sample_of_each_op()
OPS_PER_KERNEL = 12
CHUNKS = [FIRST_OF_EACH_OP[i:i + OPS_PER_KERNEL] for i in range(0, len(FIRST_OF_EACH_OP), OPS_PER_KERNEL)]


def test_the_chunks_cover_every_op():
    assert sorted(s.op for chunk in CHUNKS for s in chunk) == sorted(REGISTRY)


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda chunk: f"{chunk[0].op}..{chunk[-1].op}")
def test_every_op_compiles_under_numba_in_float32(chunk):
    arrays = arrays_of(chunk, np.float32)
    graph, kernel = lowered(batch_program(chunk, backward=False), arrays)
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=np.float32)
