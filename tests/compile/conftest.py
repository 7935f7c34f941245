"""Lets the compile tests reuse ``tests/op_samples.py`` and ``benchmarks/workloads.py``."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT / "tests", ROOT / "benchmarks", ROOT / "tests" / "compile"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import os  # noqa: E402

import pytest  # noqa: E402


def _set_env(name, value):
    previous = os.environ.get(name)
    os.environ[name] = value
    return lambda: os.environ.pop(name, None) if previous is None else os.environ.__setitem__(name, previous)


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Compiled functions cache to disk by default; the tests use a directory of their own."""
    restore = _set_env("JITGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("jitgrad-cache")))
    yield
    restore()


@pytest.fixture(scope="module", autouse=True)
def compile_backend(request):
    """The tests of what lies above the backend (tracing, guards, write-back, caches) run on the
    interpreter backend: fast and complete. test_compile_numba.py sets ``BACKEND = "numba_cpu"``."""
    restore = _set_env("JITGRAD_COMPILE_BACKEND", getattr(request.module, "BACKEND", "interpreter"))
    yield
    restore()
