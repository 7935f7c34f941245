"""An integer constant of the graph beyond 2**53 through both CPU code generators: the kernels read
their Python numbers from one float64 array, which cannot hold it (``i + (2**60 + 1)`` was off by one,
silently), so such a constant is written into the kernel itself."""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitgrad as jg

BACKEND = ""   # conftest.compile_backend's default; the test names its backend itself


def program(i, j):
    return (i + (2**60 + 1)) * 3 - (2**62 + 7), j * (2**53 + 1), i + 2.0**60


@pytest.mark.parametrize("backend", ["llvm_cpu", "numba_cpu"])
def test_an_integer_constant_beyond_2_to_the_53_is_exact_in_a_kernel(backend, monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", backend)
    compiled = jg.compile(program, cache=False)
    i, j = jg.tensor([1, -2, 3]), jg.tensor([5, 6, -7], dtype=jg.int32).long()
    for got, want in zip(compiled(i, j), program(i, j)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.dtype == want.dtype
    assert compiled.backend.name == backend and os.environ["JITGRAD_COMPILE_BACKEND"] == backend
