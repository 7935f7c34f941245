"""Random elementwise-and-reduction programs: compiled values and gradients equal eager."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitgrad as jg
from compile_helpers import assert_close
from plain_python_kernels import plain_python_kernels

UNARY = {"sin": jg.sin, "tanh": jg.tanh, "exp_small": lambda v: jg.exp(v * 0.1), "neg": jg.neg,
         "sigmoid": jg.sigmoid}
BINARY = {"add": jg.add, "mul": jg.mul, "sub": jg.sub}


def program(steps):
    def run(x, w):
        values = [x, w]
        for kind, name, i, j in steps:
            a, b = values[i % len(values)], values[j % len(values)]
            values.append(UNARY[name](a) if kind == "unary" else BINARY[name](a, b))
        return values[-1].sum() + values[-2].mean()
    return run


step = st.one_of(st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), st.integers(0, 9), st.integers(0, 9)),
                 st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), st.integers(0, 9), st.integers(0, 9)))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_random_program_matches_eager(steps, seed):
    check_random_program(steps, seed, "interpreter")


@pytest.fixture
def numba_code_as_python(monkeypatch):
    """The numba backend's generated code, run as plain Python: every random program exercises the
    code generator without a numba compile each."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    with plain_python_kernels():
        yield


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_random_program_matches_eager_through_the_numba_code_generator(numba_code_as_python, steps, seed):
    check_random_program(steps, seed, "numba_cpu")


def check_random_program(steps, seed, backend):
    rng = np.random.default_rng(seed)
    xs, ws = rng.standard_normal((3, 4)), rng.standard_normal(4)
    fn = program(steps)
    x, w = jg.tensor(xs, requires_grad=True), jg.tensor(ws, requires_grad=True)
    xe, we = jg.tensor(xs, requires_grad=True), jg.tensor(ws, requires_grad=True)
    compiled = jg.compile(fn, cache=False, fullgraph=True)
    assert compiled.backend.name == backend
    out, expected = compiled(x, w), fn(xe, we)
    assert_close(out, expected)
    out.backward()
    expected.backward()
    for a, e in ((x, xe), (w, we)):
        assert (a.grad is None) == (e.grad is None)
        if e.grad is not None:
            assert_close(a.grad, e.grad)
