"""The compile tests cache to a directory of their own and run on the interpreter backend unless a
module names another."""
import os

import pytest


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
