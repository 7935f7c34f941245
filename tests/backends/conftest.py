"""Lets the backend tests run generated code as plain Python (``tests/conftest.py`` puts ``tests/`` on
the path)."""
import pytest

from plain_python_kernels import plain_python_kernels


@pytest.fixture(scope="module")
def plain_python():
    """Kernels lowered from here to the end of the module run as plain Python: the code generator is
    tested without a numba compile per graph. A module using it compiles nothing for real."""
    with plain_python_kernels():
        yield
