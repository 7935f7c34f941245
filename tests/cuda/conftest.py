"""What of ``tests/cuda`` a run can run.

- Files with ``ptx`` in their name compile kernels to PTX with numba-cuda's NVVM: they need no device and
  run in the normal run (marked ``ptx``); under the simulator ``compile_ptx`` is not the real compiler,
  so they skip there.
- Every other file runs kernels: under the simulator, or on a real GPU. In a run with neither they are
  not even collected (collecting imports numba.cuda and the CUDA backend, which a CPU run should not
  pay for); ``tests/conftest.py`` says once how many and how to run them.

Compiled functions here cache their kernels in a directory of the session's own.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuda_support import CUDA_FILES_NOT_RUN, GPU, INSTALL, MISSING, SIMULATOR, cuda_mode

HERE = Path(__file__).resolve().parent


def _is_ptx_file(path: Path) -> bool:
    return "ptx" in path.name and HERE in path.resolve().parents


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if _is_ptx_file(collection_path) or cuda_mode() in (SIMULATOR, GPU):
        return None
    config.stash.setdefault(CUDA_FILES_NOT_RUN, []).append(str(collection_path))
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mode = cuda_mode()
    for item in items:
        if not _is_ptx_file(Path(str(item.fspath))):
            continue
        item.add_marker(pytest.mark.ptx)
        if mode == MISSING:
            item.add_marker(pytest.mark.skip(reason=f"needs numba-cuda, which is not installed: {INSTALL}"))
        elif mode == SIMULATOR:
            item.add_marker(pytest.mark.skip(reason="PTX is compiled in the run without NUMBA_ENABLE_CUDASIM "
                                                    "(the simulator replaces numba's CUDA compiler)"))


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
