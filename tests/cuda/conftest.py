"""The CUDA tests run on a GPU or under numba's simulator (``NUMBA_ENABLE_CUDASIM=1`` set before numba is
imported); elsewhere the directory is skipped."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

try:
    from numba import cuda
except ImportError:
    cuda = None
SKIP = ('numba-cuda is not installed: pip install "numba-cuda[cu12]"' if cuda is None else
        None if cuda.is_available() else "no CUDA device (run with NUMBA_ENABLE_CUDASIM=1 for the simulator)")
collect_ignore_glob = ["test_*.py"] if cuda is None else []  # their imports need numba.cuda


def pytest_collection_modifyitems(config, items):
    if SKIP:
        for item in items:
            if item.path.parent == Path(__file__).parent:
                item.add_marker(pytest.mark.skip(reason=SKIP))


def _install_shuffle_emulation() -> None:
    """The simulator has no warp shuffles. Until the backend's ``simulator.py`` installs its emulation, a
    minimal one for one-warp blocks: every thread posts its value, the block synchronises, each reads its
    source lane's (its own value past the warp's end, as on a GPU)."""
    from numba import config
    if not config.ENABLE_CUDASIM:
        return
    from numba.cuda.simulator.kernelapi import FakeCUDAModule
    if hasattr(FakeCUDAModule, "shfl_down_sync"):
        return

    def shfl_down_sync(self, mask, value, delta):
        thread = threading.current_thread()
        posted = thread._manager.__dict__.setdefault("posted_values", {})
        lane = thread.thread_id
        posted[lane] = value
        thread.syncthreads()
        source = lane + delta
        result = posted[source] if source // 32 == lane // 32 and source in posted else value
        thread.syncthreads()
        return result

    FakeCUDAModule.shfl_down_sync = shfl_down_sync


if SKIP is None:
    try:  # the backend's emulation, where this branch has it
        from jitgrad.backends.numba_cuda.simulator import install
    except ImportError:
        install = _install_shuffle_emulation
    install()
