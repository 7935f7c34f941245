"""Lets the backend tests reuse ``tests/op_samples.py``, the one list of samples of every op, and
the benchmarks' workloads, and run generated code as plain Python."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT / "tests", ROOT / "benchmarks"):  # op_samples, plain_python_kernels; workloads
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from plain_python_kernels import plain_python_kernels  # noqa: E402


@pytest.fixture(scope="module")
def plain_python():
    """Kernels lowered from here to the end of the module run as plain Python: the code generator is
    tested without a numba compile per graph. A module using it compiles nothing for real."""
    with plain_python_kernels():
        yield
