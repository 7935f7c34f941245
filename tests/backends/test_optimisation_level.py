"""LLVM's optimisation level per kernel (issue 18): large kernels compile at -O1, the rest at numba's
setting, and a NUMBA_OPT the user set is left alone. (Its compile times: docs/benchmarks.md.)"""
from __future__ import annotations

import numba

from jitgrad.backends.numba_cpu.numba_options import LARGE_KERNEL_LINES, optimisation_level, optimised_at


def test_large_kernels_are_optimised_at_o1_unless_numba_opt_is_set(monkeypatch):
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    large = "x = 1\n\n" * LARGE_KERNEL_LINES   # blank lines do not count
    assert optimisation_level(large) == 1
    assert optimisation_level("x = 1\n" * (LARGE_KERNEL_LINES - 1)) is None
    monkeypatch.setenv("NUMBA_OPT", "3")
    assert optimisation_level(large) is None


def test_the_level_holds_inside_and_numbas_own_is_put_back():
    saved = numba.config.OPT
    with optimised_at(1):
        assert numba.config.OPT == 1 and type(numba.config.OPT) is type(saved)
    assert numba.config.OPT is saved
    with optimised_at(None):
        assert numba.config.OPT is saved
