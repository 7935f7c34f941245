"""Silently stale results: what a trace read that neither its in-process key nor the warm-start index's
key held, so that a later call (or a later process) ran a program traced for something else. Each test
changes one thing between two calls and compares with the same code run eagerly.

The cross-process probes, and the ones that found nothing, are listed in docs/compile.md ("The
warm-start index"); these run in one process, where the index is consulted by every new
``jitgrad.compile`` object, as in a new process.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg


@pytest.mark.parametrize("reads", ["x.is_contiguous()", "x.stride()[0] == 2", "x.storage_offset() == 0",
                                   "x.data_ptr() == base.data_ptr()"])
def test_a_branch_on_a_tensors_layout_runs_eagerly(reads, tmp_path, monkeypatch):
    """A tensor's key holds its shape, not its strides, offset or address: a branch on them took the
    first call's branch for a transposed or sliced input, in the process and from the index."""
    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path))
    namespace = {}
    exec(f"def step(x, base):\n    return x * 2.0 if {reads} else x * 3.0", namespace)
    step = namespace["step"]
    base = jg.tensor(np.arange(8, dtype=np.float32))
    calls = [(base[:4].reshape(2, 2), base), (base[4:].reshape(2, 2).t(), base)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "running step eagerly": what this asks for
        first = jg.compile(step)
        for x, b in calls:
            want = step(x, b).numpy()
            np.testing.assert_array_equal(first(x, b).numpy(), want)
            np.testing.assert_array_equal(jg.compile(step)(x, b).numpy(), want)
