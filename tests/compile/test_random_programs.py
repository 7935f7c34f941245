"""Random programs (``random_programs.py``) run eagerly in jitgrad and in PyTorch and compiled in four
forms (``differential.py``): PyTorch in float64 is the reference for eager, eager for the compiled.

A CI run draws a few hundred programs: most for eager against PyTorch alone (no compiling, cheap), a
few hundred compiled on the interpreter backend and through the numba backend's code generator run
as plain Python, a few dozen through the LLVM generator (the default CPU lowering) and two through
real numba compiles (fewer since 2026-11-28, to keep the suite within its ten minutes). Two tests draw
programs with odd inputs (a dimension of size 0, a layout other than C-contiguous): eighty against
PyTorch and six compiled. ``--many`` (10,000, or ``--many=N``) draws that many per test instead, a
twentieth of it for the odd compiled ones and a hundredth for numba:

    python -m pytest tests/compile/test_random_programs.py --many

Without PyTorch the comparison with it is skipped, and the compiled forms are still compared with
eager.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings

import numpy as np

import jitgrad as jg
from differential import Disagreement, check_against_torch, check_program, run_eager
from plain_python_kernels import plain_python_kernels
from random_programs import programs

try:  # PyTorch is the reference where it is installed
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

# programs with odd inputs (size 0, not C-contiguous) per CI run: eager against PyTorch (about 0.015 s each),
# and compiled on two backends (about 0.25 s each, once the code generator test earlier in this file has made
# the plain-Python numba helpers; 5 s more when run alone): 2.5 s in all. Hunt with --many (2026-11-28: 6,000 eager
# and 400 compiled, and 120 through the LLVM generator, ran clean after the fixes they led to).
ODD_EAGER, ODD_COMPILED = 80, 6
TORCH_MISSING = "compares jitgrad with PyTorch, which is not installed: pip install torch==2.13.0"


def run_programs(request, count: int, check, share_of_many: float = 1.0, max_steps: int = 6,
                 odd_inputs: bool = False) -> None:
    """``check`` on ``count`` random programs, or with ``--many`` on that number times ``share_of_many``;
    with ``odd_inputs``, programs whose inputs may be of size 0 or not C-contiguous.
    Hypothesis's explain phase is left out: the lines it would list are numpy's printing."""
    many = request.config.getoption("--many")
    if many is not None:
        count = max(count, int(many * share_of_many))

    @settings(max_examples=count, deadline=None, suppress_health_check=[HealthCheck.too_slow],
              phases=[phase for phase in Phase if phase is not Phase.explain])
    @given(program=programs(max_steps, odd_inputs))
    def run(program):
        check(program)
    run()


def test_eager_fast_path_matches_the_engine(request, monkeypatch):
    """The engine's fast path over staged formulas (``autograd/fast_backward.py``) against the engine
    itself, bit for bit, on programs drawn three times: the first run writes a replay program
    (``autograd/backward_replay.py``) and the second stages, the others replay both."""
    from jitgrad.autograd import backward_replay, fast_backward
    run = fast_backward.run
    monkeypatch.setattr(backward_replay, "traces", lambda root, seed: True)

    def check(program):
        calls = program.draw_arrays(3)
        backward_replay.cache.clear()
        monkeypatch.setattr(fast_backward, "run", run)
        fast = [run_eager(program, jg, arrays) for arrays in calls]
        monkeypatch.setattr(fast_backward, "run", lambda *args: None)
        for arrays, got in zip(calls, fast):
            expected = run_eager(program, jg, arrays)
            for what, a, e in [("loss", got.loss, expected.loss)] + [
                    (f"grad of {n}", got.grads[n], expected.grads[n]) for n in expected.grads]:
                assert (a is None) == (e is None) and (a is None or a.dtype == e.dtype and
                                                        np.array_equal(a, e, equal_nan=True)), \
                    f"{what} differs between the fast path and the engine:\n{a!r}\n{e!r}\n\n{program!r}"
    run_programs(request, 300, check)
    backward_replay.cache.clear()


@pytest.mark.skipif(torch is None, reason=TORCH_MISSING)
def test_eager_matches_pytorch(request):
    run_programs(request, 500, lambda program: check_against_torch(program, torch, program.draw_arrays(1)[0]))


def test_compiled_on_the_interpreter_matches_eager(request):
    run_programs(request, 150, lambda program: check_program(program, "interpreter", torch))


def test_compiled_through_the_numba_code_generator_matches_eager(request, monkeypatch):
    """The numba backend's generated code, run as plain Python: every program exercises the code
    generator without a numba compile each."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    with plain_python_kernels():
        run_programs(request, 100, lambda program: check_program(program, "numba_cpu", torch))


def test_compiled_by_the_llvm_generator_matches_eager(request, monkeypatch):
    """The LLVM generator, the default CPU lowering, alone: its compiles take a tenth of numba's, so more
    programs than numba's test. A program with an op it does not cover is drawn again (in the default
    lowering numba compiles it, and the test above covers numba)."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")

    def check(program):
        try:
            check_program(program, "llvm_cpu", torch)
        except Disagreement as error:
            assume("no lowering" not in str(error))
            raise
    run_programs(request, 25, check, share_of_many=0.1, max_steps=4)


def test_compiled_by_numba_matches_eager(request, monkeypatch):
    """Few and short programs: each form of each is a numba compile or two."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    run_programs(request, 2, lambda program: check_program(program, "numba_cpu", torch), share_of_many=0.01,
                 max_steps=4)


@pytest.mark.skipif(torch is None, reason=TORCH_MISSING)
def test_eager_matches_pytorch_on_odd_inputs(request):
    """Inputs of size 0, transposed, strided, reversed, sliced or expanded (stride 0): each eager kernel
    must read them by their strides."""
    run_programs(request, ODD_EAGER, lambda program: check_against_torch(program, torch, program.draw_arrays(1)[0]),
                 odd_inputs=True)


def test_compiled_on_odd_inputs_matches_eager(request, monkeypatch):
    """The same inputs compiled on the interpreter, and through the numba code generator run as plain
    Python: a graph traced for one layout runs on it, and the guard retraces for another. A program
    whose kernel takes ``math.log(0)`` (a log_softmax of no elements) is left out of the plain-Python
    run: Python's math raises where numba's gives -inf, for a row no element is written from."""
    def check(program):
        monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
        check_program(program, "interpreter", torch)
        monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
        try:
            check_program(program, "numba_cpu", torch)
        except Disagreement as error:
            assume("math domain error" not in str(error))
            raise
    with plain_python_kernels():
        run_programs(request, ODD_COMPILED, check, share_of_many=0.05, odd_inputs=True)
