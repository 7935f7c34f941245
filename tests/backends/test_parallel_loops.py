"""Which loops run in parallel: ``parallel=None`` gives a prange loop to the fusion groups of at least
``PARALLEL_ELEMENTS`` elements, ``parallel=True`` to every group that can have one (not a two-pass
reduction over everything), ``parallel=False`` to none; the results stay the interpreter's.

The generated code runs as plain Python (prange is range there); test_numba_kernels.py checks that
numba compiles a kernel with prange loops in parallel mode."""
from __future__ import annotations

import numpy as np
import pytest

from jitgrad.backends.numba_cpu import PARALLEL_ELEMENTS
from helpers import assert_close
from lowering_helpers import interpreted, lowered

COLUMNS = 64


def program(large, smaller, vector):
    return ((large.sin() * 2.0).sum(dim=1),    # PARALLEL_ELEMENTS elements
            (smaller.cos() * 3.0).amax(dim=1),  # one row short of it
            vector.exp() + 1.0,                 # a few elements
            large.var(),                        # two passes over everything: never parallel
            smaller.sum())                      # one pass over everything: per-row partial sums


GROUPS = {"sin, mul, sum": "large", "cos, mul_1, amax": "smaller", "exp, add": "vector", "var": "variance",
          "sum_1": "total"}


def group_loops(source: str) -> dict[str, str]:
    """Each fusion group's code in the kernel, by the names of its members (its comment line)."""
    blocks: dict[str, str] = {}
    current = None
    for line in source.split("def kernel(")[1].splitlines():
        if line.startswith("    # fused_"):
            current = GROUPS[line.split(": ", 1)[1].split(" (loop")[0]]
            blocks[current] = ""
        elif line.startswith("    # %") or line.startswith("    return"):
            current = None
        elif current is not None:
            blocks[current] += line + "\n"
    return blocks


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(7)
    rows = PARALLEL_ELEMENTS // COLUMNS
    return [rng.standard_normal((rows, COLUMNS)), rng.standard_normal((rows - 1, COLUMNS)), rng.standard_normal(5)]


@pytest.mark.parametrize("parallel, expected", [
    (None, {"large"}),
    (True, {"large", "smaller", "vector", "total"}),
    (False, set()),
])
def test_prange_where_the_mode_says_and_the_same_results(parallel, expected, arrays, plain_python):
    graph, kernel = lowered(program, arrays, parallel=parallel)
    loops = group_loops(kernel.source)
    assert set(loops) == set(GROUPS.values())
    assert {name for name, code in loops.items() if "prange(" in code} == expected
    assert kernel.parallel == bool(expected)  # what numba is told
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=np.float64)
