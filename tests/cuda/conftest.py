"""The files of ``tests/cuda`` run kernels: on a real GPU, or under numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``, CI's second run). In a run with neither they are not even collected:
collecting imports numba.cuda and the CUDA backend, which a CPU run should not pay for, and
``tests/conftest.py`` says once how many were left out and how to run them. (The PTX tests, which need
numba-cuda but no device, are in ``tests/backends`` and run in the normal run.)

Compiled functions here cache their kernels in a directory of the session's own.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cuda_support import CUDA_FILES_NOT_RUN, GPU, SIMULATOR, cuda_mode


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if cuda_mode() in (SIMULATOR, GPU):
        return None
    config.stash.setdefault(CUDA_FILES_NOT_RUN, []).append(str(collection_path))
    return True


@pytest.fixture(scope="session", autouse=True)
def short_thread_switches():
    """The simulator runs a CUDA block as Python threads while the launching thread polls them in a
    loop; with Python's default 5 ms switch interval most of the time goes to that polling (measured:
    44 s at 5 ms, 19 s at 0.5 ms for the prod and matmul samples compiled; 0.1 ms is 12% faster again
    on their eager runs)."""
    previous = sys.getswitchinterval()
    if cuda_mode() == SIMULATOR:
        sys.setswitchinterval(1e-4)
    yield
    sys.setswitchinterval(previous)


@pytest.fixture(scope="session", autouse=True)
def simulator_shuffles():
    """The simulator has no warp shuffles and its shared memory is not thread-safe; the backend mends
    both when its ``launch`` module is imported (``simulator.install``), and a test launching a kernel
    of its own may import none: installed here for every test."""
    if cuda_mode() == SIMULATOR:
        from jitgrad.backends.numba_cuda.simulator import install
        install()


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Compiled functions cache their kernels on disk; these tests keep theirs out of the user's cache."""
    previous = os.environ.get("JITGRAD_CACHE_DIR")
    os.environ["JITGRAD_CACHE_DIR"] = str(tmp_path_factory.mktemp("jitgrad-cache"))
    yield
    if previous is None:
        os.environ.pop("JITGRAD_CACHE_DIR", None)
    else:
        os.environ["JITGRAD_CACHE_DIR"] = previous
