"""Lets the backend tests reuse ``tests/op_samples.py``, the one list of samples of every op, and
run generated code as plain Python."""
import sys
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parent.parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from plain_python_kernels import plain_python_kernels  # noqa: E402


@pytest.fixture(scope="module")
def plain_python():
    """Kernels lowered from here to the end of the module run as plain Python: the code generator is
    tested without a numba compile per graph. A module using it compiles nothing for real."""
    with plain_python_kernels():
        yield
