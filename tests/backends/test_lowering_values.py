"""Values the op samples do not draw, through the generated code (as plain Python) against the fx
Interpreter: integer and boolean tensors, whose max and min start from their dtype's extremes, and
NaN, which max, min, maximum, minimum and argmax propagate as numpy does."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from helpers import assert_close
from lowering_helpers import interpreted, lowered

INTEGERS = np.arange(-9, 3).reshape(3, 4) * np.array([1, -1, 1, 1])  # all below zero somewhere
FLAGS = INTEGERS > -2

INTEGER_PROGRAMS = {
    "amax": lambda x: x.amax(dim=1),
    "amin": lambda x: x.amin(),
    "max": lambda x: x.max(),
    "max(dim)": lambda x: x.max(dim=0),
    "min(dim)": lambda x: x.min(dim=1, keepdim=True),
    "prod": lambda x: x.prod(dim=1),
    "sum": lambda x: x.sum(dim=0),
    "argmax": lambda x: x.argmax(dim=1),
    "maximum": lambda x: jg.maximum(x, x * -2),
    "floor_divide": lambda x: (x // 2, x % 3),
}

FLAG_PROGRAMS = {
    "amax": lambda b: b.amax(dim=1),
    "amin": lambda b: b.amin(),
    "any": lambda b: b.any(dim=0),
    "all": lambda b: b.all(dim=1),
    "sum": lambda b: b.sum(),
}


@pytest.mark.parametrize("name", INTEGER_PROGRAMS)
def test_integer_tensors(name, plain_python):
    graph, kernel = lowered(INTEGER_PROGRAMS[name], [INTEGERS])
    assert_close(list(kernel(INTEGERS)), interpreted(graph, [INTEGERS]), dtype=np.float64)


@pytest.mark.parametrize("name", FLAG_PROGRAMS)
def test_boolean_tensors(name, plain_python):
    graph, kernel = lowered(FLAG_PROGRAMS[name], [FLAGS])
    assert_close(list(kernel(FLAGS)), interpreted(graph, [FLAGS]), dtype=np.float64)


WITH_NAN = np.array([[0.5, np.nan, 2.0, -1.0], [1.0, 3.0, -2.0, np.nan], [-0.5, 0.25, 4.0, 1.5]])

NAN_PROGRAMS = {
    "amax rows": lambda x: x.amax(dim=1),
    "amin columns": lambda x: x.amin(dim=0),
    "max": lambda x: x.max(),
    "max(dim)": lambda x: x.max(dim=1),
    "min(dim)": lambda x: x.min(dim=0),
    "argmax": lambda x: x.argmax(dim=1),
    "argmin": lambda x: x.argmin(dim=0),
    "maximum": lambda x: (jg.maximum(x, x[::-1] * 1.0), jg.maximum(x[::-1] * 1.0, x)),
    "minimum": lambda x: (jg.minimum(x, x[::-1] * 1.0), jg.minimum(x[::-1] * 1.0, x)),
    "logsumexp": lambda x: x.logsumexp(dim=1),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", NAN_PROGRAMS)
def test_nan_is_propagated_as_numpy_does(name, dtype, plain_python):
    x = WITH_NAN.astype(dtype)
    graph, kernel = lowered(NAN_PROGRAMS[name], [x])
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=dtype)
