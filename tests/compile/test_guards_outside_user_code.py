"""What a compiled function reads outside the user's own code (a library's module attributes, the
process's environment, a library's mutable objects) is guarded: a change between two calls recompiles,
and each call matches the same code run eagerly."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
import jitgrad.nn.functional as F


def relu_of(x):
    return F.relu(x) * 2.0


def test_a_library_function_patched_between_calls_recompiles(monkeypatch):
    """``F.relu = mine`` (a test's monkeypatch, a user's replacement) between calls: the program traced
    with the old function ran, silently, until 2026-11-29."""
    x = jg.tensor([-1.0, 0.5, 2.0])
    compiled = jg.compile(relu_of, cache=False)
    np.testing.assert_array_equal(compiled(x).numpy(), relu_of(x).numpy())
    monkeypatch.setattr(F, "relu", jg.sigmoid)
    np.testing.assert_array_equal(compiled(x).numpy(), relu_of(x).numpy())
    assert "global 'F.relu'" in compiled.log[-1]
